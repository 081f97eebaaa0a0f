"""``rgbt sensors``: decode device captures and logs; generate driver parameter files.

Every decoder reports ``packets``, ``checksum_failures`` and ``bytes_skipped``; a file holding no
valid packet (empty, cut, noise) exits 2 with one line saying so.

- ``rgbt sensors decode vn100 FILE [--csv OUT] [--json]``: VN-100 binary capture (mixed with
  other bytes) -> CSV, one row per CRC-valid packet (``crc_failures`` kept as an alias).
- ``rgbt sensors decode mavlink FILE [--json]``: ``{arm_events: [[t_s, armed], ...], messages: {name: count}}``.
- ``rgbt sensors decode ubx FILE [--json]`` / ``decode nmea FILE``: GNSS fixes (lat, lon deg, height m).
- ``rgbt sensors vn100 PORT`` / ``trigger PORT rate|start|stop|count`` / ``boson PORT status|ffc``:
  bring-up checks against the live devices.
- ``rgbt sensors blackfly-params [--stack YAML] [--camera color] [--out FILE]``: spinnaker_camera_driver parameters.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from rgbt.errors import DecodeError
from rgbt.output import print_json, print_table


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("sensors", help="decode sensor captures and logs; driver parameter files")
    ssub = parser.add_subparsers(dest="sensors_cmd", metavar="CMD")

    dec = ssub.add_parser("decode", help="decode a device capture or log")
    dec.add_argument("kind", choices=["vn100", "mavlink", "ubx", "nmea"], help="what FILE holds")
    dec.add_argument("file", help="capture / log file")
    dec.add_argument("--csv", help="vn100: write one row per valid packet to this CSV file")
    dec.add_argument("--json", action="store_true", help="print the summary as JSON")
    dec.set_defaults(func=_decode)

    vn = ssub.add_parser("vn100", help="configure a VN-100 and stream for a while: rate, SyncIn, errors")
    vn.add_argument("port", help="serial device (or pyserial URL)")
    vn.add_argument("--baud", type=int, default=921600)
    vn.add_argument("--duration", type=float, default=5.0, help="seconds to stream")
    vn.add_argument("--json", action="store_true")
    vn.set_defaults(func=_vn100_live)

    tr = ssub.add_parser("trigger", help="talk to the trigger generator: rate HZ | start | stop | count")
    tr.add_argument("port", help="serial device (or pyserial URL)")
    tr.add_argument("command", choices=["rate", "start", "stop", "count"])
    tr.add_argument("value", nargs="?", type=float, help="rate in Hz (for 'rate'; omit to read it)")
    tr.add_argument("--baud", type=int, default=115200)
    tr.add_argument("--json", action="store_true")
    tr.set_defaults(func=_trigger)

    bo = ssub.add_parser("boson", help="Boson over serial: status | ffc")
    bo.add_argument("port", help="serial device (or pyserial URL)")
    bo.add_argument("command", choices=["status", "ffc"])
    bo.add_argument("--baud", type=int, default=921600)
    bo.add_argument("--json", action="store_true")
    bo.set_defaults(func=_boson)

    bf = ssub.add_parser("blackfly-params", help="spinnaker_camera_driver parameter file from the stack")
    bf.add_argument("--stack", help="stack YAML (default calib/stack.yaml)")
    bf.add_argument("--camera", default="color", help="stack camera name (color or mono)")
    bf.add_argument("--out", help="write the YAML here (default: print)")
    bf.set_defaults(func=_blackfly)


def _decode(args: argparse.Namespace) -> int:
    """Decode FILE; the summary carries ``packets``, ``checksum_failures`` and ``bytes_skipped``.

    A file (empty or not) without a single valid packet is bad input: one line, exit 2.
    """
    from rgbt.sensors.stats import DecodeStats

    path = Path(args.file)
    if not path.is_file():
        raise DecodeError(f"{path}: no such file")
    if args.kind == "vn100":
        return _decode_vn100(path, args)
    if args.kind == "mavlink":
        from rgbt.sensors.mavlink import decode_tlog

        stats = DecodeStats()
        result = decode_tlog(path, stats)
        if stats.packets == 0:
            raise DecodeError(stats.nothing_found(str(path), "MAVLink"))
        counts = {k: stats.to_dict()[k] for k in ("packets", "checksum_failures", "bytes_skipped")}
        if args.json:
            print_json({**result, **counts})
        else:
            print_table(f"{path.name}: arm events", ["t (Unix s)", "armed"], result["arm_events"])
            print_table(f"{path.name}: messages", ["message", "count"], sorted(result["messages"].items()))
            print_table(f"{path.name}: MAVLink frames", list(counts), [tuple(counts.values())])
        return 0
    from rgbt.sensors.ubx import decode_gnss

    decoded = decode_gnss(path, args.kind)
    stats = decoded.stats
    if stats.packets == 0:
        raise DecodeError(stats.nothing_found(str(path), args.kind.upper()))
    counts = {k: stats.to_dict()[k] for k in ("packets", "checksum_failures", "bytes_skipped")}
    rows = [{"source": f.source, "t_utc_ns": f.t_utc_ns, "lat": f.lat, "lon": f.lon, "height": f.height_m,
             "hmsl": f.hmsl_m, "status": f.status, "fix_type": f.fix_type, "num_sv": f.num_sv} for f in decoded.fixes]
    if args.json:
        print_json({"fixes": rows, **counts})
    else:
        print_table(
            f"{path.name}: fixes (height m above ellipsoid)",
            ["source", "lat", "lon", "height", "fix"],
            [(r["source"], f"{r['lat']:.7f}", f"{r['lon']:.7f}", f"{r['height']:.3f}", r["fix_type"]) for r in rows],
        )
        print_table(f"{path.name}: {args.kind.upper()} frames", list(counts), [tuple(counts.values())])
    return 0


def _decode_vn100(path: Path, args: argparse.Namespace) -> int:
    from rgbt.sensors.stats import DecodeStats
    from rgbt.sensors.vn100 import Vn100Parser

    parser = Vn100Parser(ascii=False)
    writer = None
    fh = None
    columns: list[str] | None = None

    def write(pkts: list) -> None:
        nonlocal columns
        if writer is None:
            return
        for pkt in pkts:
            cols = pkt.layout.columns()
            if cols != columns:  # a new output configuration starts a new header
                writer.writerow(cols)
                columns = cols
            writer.writerow([f"{v:.9g}" if isinstance(v, float) else v for v in pkt.row()])

    try:
        if args.csv:
            fh = open(args.csv, "w", newline="")
            writer = csv.writer(fh)
        with open(path, "rb") as src:
            while chunk := src.read(1 << 16):
                write(parser.feed(chunk))
        write(parser.finish())
    finally:
        if fh is not None:
            fh.close()
    st = parser.stats
    if st.packets == 0:
        stats = DecodeStats(0, st.crc_failures, st.bytes_skipped, bytes_total=path.stat().st_size)
        raise DecodeError(stats.nothing_found(str(path), "VN-100 binary"))
    result = {"packets": st.packets, "checksum_failures": st.crc_failures, "crc_failures": st.crc_failures,
              "bytes_skipped": st.bytes_skipped}
    if args.json:
        print_json(result)
    else:
        print_table(f"{path.name}: VN-100 binary", ["packets", "crc_failures", "bytes_skipped"],
                    [(st.packets, st.crc_failures, st.bytes_skipped)])
    return 0


def _blackfly(args: argparse.Namespace) -> int:
    from rgbt.sensors.blackfly import spinnaker_params_yaml
    from rgbt.stack import load_stack

    text = spinnaker_params_yaml(load_stack(args.stack), args.camera)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")
    return 0


def _emit(result: dict, as_json: bool, title: str) -> None:
    if as_json:
        print_json(result)
    else:
        print_table(title, ["field", "value"], [(k, v) for k, v in result.items()])


def _vn100_live(args: argparse.Namespace) -> int:
    import time

    from rgbt.sensors.vn100 import Vn100, Vn100Options

    drv = Vn100(Vn100Options(port=args.port, baudrate=args.baud))
    samples = []
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < args.duration:
            samples += drv.read(timeout=0.05)
    finally:
        drv.close()
    span = (samples[-1].t_sensor_ns - samples[0].t_sensor_ns) / 1e9 if len(samples) > 1 else 0.0
    result = {
        "samples": len(samples),
        "rate_hz": (len(samples) - 1) / span if span > 0 else None,
        "syncin_count_last": samples[-1].syncin_count if samples else None,
        "crc_failures": drv.parser.stats.crc_failures,
        "bytes_skipped": drv.parser.stats.bytes_skipped,
        "connects": drv.link.connects,
        "disconnects": drv.link.disconnects,
        "duplicates_dropped": drv.duplicates_dropped,
        "errors": drv.errors,
    }
    _emit(result, args.json, f"VN-100 on {args.port}")
    return 0 if samples else 1


def _trigger(args: argparse.Namespace) -> int:
    from rgbt.sensors.trigger import TriggerGenerator, TriggerOptions

    gen = TriggerGenerator(TriggerOptions(port=args.port, baudrate=args.baud))
    try:
        if args.command == "rate" and args.value is not None:
            gen.set_rate(args.value)
        elif args.command == "start":
            gen.start()
        elif args.command == "stop":
            gen.stop()
        result = {"rate_hz": gen.rate(), "count": gen.count()}
    finally:
        gen.link.close()
    _emit(result, args.json, f"trigger generator on {args.port}")
    return 0


def _boson(args: argparse.Namespace) -> int:
    from rgbt.sensors.boson import BosonControl, BosonOptions

    ctl = BosonControl(BosonOptions(port=args.port, baudrate=args.baud))
    try:
        if args.command == "ffc":
            ctl.run_ffc()
        result = {"fpa_temp_c": ctl.fpa_temp_c(), "ffc_mode": ctl.get_ffc_mode().name,
                  "ffc_status": ctl.get_ffc_status().name, "ext_sync": ctl.get_ext_sync_mode().name}
    finally:
        ctl.close()
    _emit(result, args.json, f"Boson on {args.port}")
    return 0
