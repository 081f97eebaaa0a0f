"""Fuzzing of the file-format readers: ROS 1 bags, MCAP (reader and recovery), calibration YAML
(stack.yaml, Kalibr, VINS-Fusion, camera_info), ONNX sidecars and 16-bit image readers.

Corpora are seeded from the real fixtures in the shared data (cut small: a few dozen messages of
the ROS 1 bag, a 64x48 crop of the FLIR frame) and from the repository's own ``calib/stack.yaml``
and ``engines/*.json``. Mutations: truncation at every record boundary of the format (ROS 1
record headers and the records inside uncompressed chunks, MCAP top-level and chunk records, PNG
chunks, the npy header, FFF directory entries, YAML / JSON lines) and at arbitrary offsets, bit
flips, random bytes, huge length fields written at record boundaries, and for YAML / JSON a
structural mutation of the parsed tree (a key deleted, a value's type changed, binary junk, deep
nesting). Property (``fuzz.harness.check``): only ``RgbtError`` escapes, no case runs over the
time limit, no case allocates over the memory limit.

MCAP recovery guarantee tested here (exactly what ``rgbt bag recover`` promises): a valid file
cut at any offset recovers every message of every chunk record that lies wholly before the cut,
and nothing else; files written with one message per chunk therefore keep every message wholly
before the cut.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any, Callable

import cv2
import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from fuzz.harness import FUZZ, check
from helpers import need
from rgbt.paths import DEFAULT_STACK, ENGINES_DIR

HUGE = (0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFFFFFFFFFF, 1 << 40)


# ----------------------------------------------------------------------------- byte mutations
@st.composite
def mutated(draw: st.DrawFn, seeds: list[tuple[bytes, list[int]]]) -> bytes:
    """One seed file (bytes, record boundaries) with one or two mutations applied."""
    data, bounds = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 2))):
        data = _mutate(draw, data, bounds)
    return data


def _mutate(draw: st.DrawFn, data: bytes, bounds: list[int]) -> bytes:
    n = len(data)
    kind = draw(st.sampled_from(["cut_boundary", "cut", "flip", "huge", "junk", "random", "splice"]))
    if kind == "cut_boundary" and bounds:
        b = draw(st.sampled_from(bounds))
        return data[:b + draw(st.integers(-1, 1))] if 0 < b < n else data[:b]
    if kind == "cut":
        return data[:draw(st.integers(0, n))]
    if kind == "flip" and n:
        buf = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, n - 1))
            buf[i] ^= 1 << draw(st.integers(0, 7))
        return bytes(buf)
    if kind == "huge" and bounds:
        # a length / offset field at a record boundary (or a few bytes after it) becomes huge
        at = min(n, draw(st.sampled_from(bounds)) + draw(st.sampled_from([0, 1, 4, 8, 9, 12, 13, 20])))
        value = draw(st.sampled_from(HUGE))
        width = 8 if value > 0xFFFFFFFF else draw(st.sampled_from([4, 8]))
        fmt = draw(st.sampled_from(["<", ">"])) + ("Q" if width == 8 else "I")
        return data[:at] + struct.pack(fmt, value) + data[at + width:]
    if kind == "junk":
        at = draw(st.integers(0, n))
        return data[:at] + draw(st.binary(min_size=1, max_size=64)) + data[at:]
    if kind == "splice" and n > 1:
        a = draw(st.integers(0, n - 1))
        b = draw(st.integers(a, min(n, a + 4096)))
        at = draw(st.integers(0, n))
        return data[:at] + data[a:b] + data[at:]
    return draw(st.binary(max_size=2048))


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    if path.is_dir():
        shutil.rmtree(path)
    path.write_bytes(data)
    return path


# ----------------------------------------------------------------------------- corpora
def _ros1_boundaries(data: bytes) -> list[int]:
    """Offsets of every ROS 1 record: top level, and inside chunks stored uncompressed."""
    from rgbt.bag.ros1scan import MAGIC, _records

    out = [0, len(MAGIC)]
    view = memoryview(data)
    for pos, fields, _, end in _records(view, len(data), len(MAGIC)):
        out += [pos, pos + 4, end]
        if fields.get("op") == b"\x05" and fields.get("compression", b"none") == b"none":
            (hlen,) = struct.unpack_from("<I", data, pos)
            base = pos + 8 + hlen
            (dlen,) = struct.unpack_from("<I", data, base - 4)
            inner = memoryview(data[base:base + dlen])
            out += [base + p for p, _, _, _ in _records(inner, dlen, 0)]
    return sorted(set(out))


def _mcap_boundaries(data: bytes) -> list[int]:
    """Offsets of every MCAP top-level record and of the records inside uncompressed chunks."""
    out, pos = [0, 8], 8
    while pos + 9 <= len(data):
        op, length = struct.unpack_from("<BQ", data, pos)
        out.append(pos)
        if op == 0x06 and pos + 9 + length <= len(data):
            body = pos + 9
            (clen,) = struct.unpack_from("<I", data, body + 28)
            compression = data[body + 32:body + 32 + clen]
            start = body + 32 + clen + 8
            if compression == b"":
                (size,) = struct.unpack_from("<Q", data, start - 8)
                inner = start
                while inner + 9 <= start + size:
                    out.append(inner)
                    inner += 9 + struct.unpack_from("<Q", data, inner + 1)[0]
        pos += 9 + length
    return sorted(set(out + [len(data) - 8]))


def _line_boundaries(data: bytes) -> list[int]:
    return [i + 1 for i, b in enumerate(data) if b == 0x0A][:400]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("corpus")


@pytest.fixture(scope="module")
def ros1_seeds(fixtures_dir: Path, corpus_dir: Path) -> list[tuple[bytes, list[int]]]:
    """The first messages of the real ROS 1 bag, rewritten small: uncompressed and bz2 chunks."""
    from rosbags.rosbag1 import Writer as Writer1

    from rgbt.bag.ros1scan import Ros1Scan, scan_ros1

    src = need(fixtures_dir / "bags" / "ros1" / "robot_localization_test1.bag", "ROS 1 bag fixture")
    head = corpus_dir / "head.bag"
    head.write_bytes(src.read_bytes()[:300_000])
    scan = Ros1Scan(head.stat().st_size)
    picked: list[tuple[int, int, bytes]] = []
    per_conn: dict[int, int] = {}
    for cid, t_ns, raw in scan_ros1(head, scan):
        if per_conn.get(cid, 0) < 12:
            per_conn[cid] = per_conn.get(cid, 0) + 1
            picked.append((cid, t_ns, raw))
    assert len(per_conn) >= 2, "the ROS 1 fixture's first chunks should hold several topics"
    seeds = []
    for name, compression in (("plain.bag", None), ("bz2.bag", Writer1.CompressionFormat.BZ2)):
        out = corpus_dir / name
        writer = Writer1(out)
        writer.chunk_threshold = 2048  # several chunks
        if compression is not None:
            writer.set_compression(compression)
        conns: dict[int, Any] = {}
        with writer:
            for cid, t_ns, raw in picked:
                c = scan.connections[cid]
                if cid not in conns:
                    conns[cid] = writer.add_connection(c.topic, c.msgtype, msgdef=c.msgdef, md5sum=c.md5sum,
                                                       callerid=c.callerid, latching=c.latching)
                writer.write(conns[cid], t_ns, raw)
        data = out.read_bytes()
        seeds.append((data, _ros1_boundaries(data)))
    assert len(seeds[0][0]) < 200_000
    return seeds


def _mcap_one_message_per_chunk(talker: Path, out_dir: Path) -> Path:
    """The talker fixture's /topic messages rewritten with one message per MCAP chunk."""
    from rgbt.bag import BagWriter, open_bag

    with open_bag(talker) as bag:
        records = [(r.t_ns, bytes(r.raw)) for r in bag.messages(topics=["/topic"])]
    writer = BagWriter(out_dir, chunk_size_bytes=1, fsync=False, flush_interval_s=3600)
    writer.add_topic("/topic", "std_msgs/msg/String")
    for t_ns, raw in records:
        writer.write("/topic", t_ns, raw)
    writer.close()
    (mcap,) = sorted(out_dir.glob("*.mcap"))
    return mcap


@pytest.fixture(scope="module")
def mcap_seeds(fixtures_dir: Path, corpus_dir: Path) -> list[tuple[bytes, list[int]]]:
    talker = need(fixtures_dir / "bags" / "ros2_talker_mcap" / "talker.mcap", "MCAP bag fixture")
    chunked = _mcap_one_message_per_chunk(talker, corpus_dir / "chunked")
    return [(p.read_bytes(), _mcap_boundaries(p.read_bytes())) for p in (talker, chunked)]


def _text_seeds(paths: list[Path]) -> list[tuple[bytes, list[int]]]:
    return [(p.read_bytes(), _line_boundaries(p.read_bytes())) for p in paths]


# ----------------------------------------------------------------------------- readers under test
def _read_bag(path: Path) -> int:
    """Open a bag, read every message and deserialize it (what ``rgbt bag info/convert`` do)."""
    from rgbt.bag import open_bag

    n = 0
    with open_bag(path) as bag:
        for record in bag.messages(include_unknown=True):
            _ = record.msg
            n += 1
    return n


def test_fuzz_ros1_reader(tmp_path: Path, ros1_seeds: list) -> None:
    @FUZZ
    @given(mutated(ros1_seeds))
    def run(data: bytes) -> None:
        check("ros1 bag reader", _read_bag, _write(tmp_path, "case.bag", data))

    run()


def test_fuzz_ros1_reindex(tmp_path: Path, ros1_seeds: list) -> None:
    from rgbt.bag.ros1scan import reindex_ros1

    def salvage(path: Path) -> Any:
        out = tmp_path / "out.bag"
        out.unlink(missing_ok=True)
        result = reindex_ros1(path, out)
        _read_bag(out)  # what reindex writes must be readable
        return result

    @FUZZ
    @given(mutated(ros1_seeds))
    def run(data: bytes) -> None:
        check("ros1 reindex", salvage, _write(tmp_path, "case.bag", data))

    run()


def test_fuzz_mcap_reader(tmp_path: Path, mcap_seeds: list) -> None:
    @FUZZ
    @given(mutated(mcap_seeds))
    def run(data: bytes) -> None:
        check("mcap reader", _read_bag, _write(tmp_path, "case.mcap", data))

    run()


@pytest.mark.slow
def test_fuzz_mcap_recover(tmp_path: Path, mcap_seeds: list) -> None:
    from rgbt.bag.recover import recover_bag

    def recover(data: bytes) -> int:
        bag = tmp_path / "bag"
        shutil.rmtree(bag, ignore_errors=True)
        bag.mkdir()
        (bag / "bag_0.mcap").write_bytes(data)
        result = recover_bag(bag)
        n = _read_bag(bag)
        if result["recovered"]:  # a file rgbt rewrote reads back whole (a "finished" one is left as it is)
            assert n == result["message_count"], f"recovered {result}, read back {n} messages"
        return result["message_count"]

    @FUZZ
    @given(mutated(mcap_seeds))
    def run(data: bytes) -> None:
        check("mcap recover", recover, data)

    run()


def _chunk_messages(data: bytes) -> list[tuple[int, list[tuple[int, bytes]]]]:
    """(end offset, [(log time, payload)]) of every chunk record of a valid MCAP file (independent walk)."""
    from rgbt.bag.mcapscan import read_chunk

    out = []
    path_data = memoryview(data)
    pos = 8
    import io

    bio = io.BytesIO(data)
    while pos + 9 <= len(data):
        op, length = struct.unpack_from("<BQ", path_data, pos)
        if op == 0x06:
            msgs = [(item[1], item[2]) for item in read_chunk(bio, pos) if isinstance(item, tuple)]
            out.append((pos + 9 + length, msgs))
        if op == 0x02:
            break
        pos += 9 + length
    return out


@pytest.mark.slow
def test_mcap_recover_keeps_every_chunk_before_the_cut(tmp_path: Path, mcap_seeds: list) -> None:
    """Truncate a valid file anywhere: recovery keeps exactly the messages of the chunks wholly
    before the cut (one message per chunk in the second seed: every message wholly before it)."""
    from rgbt.bag import open_bag
    from rgbt.bag.recover import recover_bag

    chunked = mcap_seeds[1][0]
    chunks = _chunk_messages(chunked)
    assert len(chunks) >= 10 and all(len(m) == 1 for _, m in chunks)
    bounds = sorted({end for end, _ in chunks} | set(mcap_seeds[1][1]))

    def recover_cut(cut: int) -> None:
        bag = tmp_path / "bag"
        shutil.rmtree(bag, ignore_errors=True)
        bag.mkdir()
        (bag / "bag_0.mcap").write_bytes(chunked[:cut])
        expected = [m for end, msgs in chunks if end <= cut for m in msgs]
        recover_bag(bag)
        with open_bag(bag) as reader:
            got = [(r.t_ns, bytes(r.raw)) for r in reader.messages()]
        assert got == expected, f"cut at {cut}: recovered {len(got)} messages, expected {len(expected)}"

    @FUZZ
    @given(st.one_of(st.sampled_from(bounds).flatmap(lambda b: st.integers(max(0, b - 2), b + 2)),
                     st.integers(0, len(chunked) - 1)))
    def run(cut: int) -> None:
        check("mcap recover (cut valid file)", recover_cut, min(cut, len(chunked) - 1))

    run()


# ----------------------------------------------------------------------------- YAML / JSON
JUNK_VALUES = [None, "", "x", 0, -1, 1 << 70, 1e308, float("nan"), float("inf"), True, [], {}, [[]],
               {"a": 1}, "\x00\x01\xff", [1, 2, 3], list(range(17)), "🔥" * 10]


@st.composite
def mutated_tree(draw: st.DrawFn, trees: list[Any]) -> Any:
    """A parsed YAML / JSON tree with one or two structural mutations."""
    import copy

    tree = copy.deepcopy(draw(st.sampled_from(trees)))
    for _ in range(draw(st.integers(1, 2))):
        tree = _mutate_tree(draw, tree)
    return tree


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:20]):
            out += _paths(v, prefix + (i,))
    return out


def _mutate_tree(draw: st.DrawFn, tree: Any) -> Any:
    path = draw(st.sampled_from(_paths(tree)))
    kind = draw(st.sampled_from(["delete", "type", "deep", "junk_key"]))
    if not path:
        return draw(st.sampled_from(JUNK_VALUES)) if kind == "type" else tree
    parent = tree
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    if kind == "delete":
        del parent[last]
    elif kind == "type":
        parent[last] = draw(st.one_of(st.sampled_from(JUNK_VALUES), st.text(max_size=20),
                                      st.integers(), st.floats()))
    elif kind == "deep":
        value = parent[last]
        for _ in range(draw(st.sampled_from([2, 50, 200]))):
            value = [value]
        parent[last] = value
    elif isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=10))] = draw(st.sampled_from(JUNK_VALUES))
    return tree


def _dump_yaml(tree: Any) -> bytes:
    return yaml.safe_dump(tree, sort_keys=False, allow_unicode=True).encode()


DEEP_TEXT = [b"[" * 5000, b"{a: " * 3000, b"- " * 4000 + b"x", b"&a [*a]", b"a: !!python/object:os.system x",
             b"\xff\xfe\x00\x00binary", b"\x00" * 100, b"a: 'unterminated"]


def _yaml_cases(seeds: list[tuple[bytes, list[int]]], trees: list[Any]) -> st.SearchStrategy[bytes]:
    return st.one_of(mutated(seeds), mutated_tree(trees).map(_dump_yaml), st.sampled_from(DEEP_TEXT))


@pytest.fixture(scope="module")
def cart_calib(cart_dir: Path) -> Path:
    return need(cart_dir / "calibrations", "CART calibrations")


def _yaml_test(tmp_path: Path, parser: str, reader: Callable[[Path], Any], paths: list[Path]) -> None:
    from rgbt.yamlio import parse_yaml

    seeds = _text_seeds(paths)
    trees = [parse_yaml(p.read_text(), str(p)) for p in paths]

    @FUZZ
    @given(_yaml_cases(seeds, trees))
    def run(case: bytes) -> None:
        check(parser, reader, _write(tmp_path, "case.yaml", case))

    run()


@pytest.mark.slow
def test_fuzz_stack_yaml(tmp_path: Path) -> None:
    from rgbt.stack import load_stack

    _yaml_test(tmp_path, "stack.yaml", load_stack, [DEFAULT_STACK])


def test_fuzz_kalibr_camchain(tmp_path: Path, cart_calib: Path, fixtures_dir: Path) -> None:
    from rgbt.calib.kalibr import read_camchain

    paths = [cart_calib / "color_thermal_10x10_calib.yaml", cart_calib / "thermal_mono_10x10_calib.yaml",
             need(fixtures_dir / "kalibr" / "openvins_uzhfpv_kalibr_imucam_chain.yaml", "Kalibr imucam fixture")]
    _yaml_test(tmp_path, "kalibr camchain", read_camchain, [need(p, "Kalibr camchain") for p in paths])


def test_fuzz_kalibr_imu(tmp_path: Path) -> None:
    from rgbt.calib.kalibr import KalibrImu, read_imu, write_imu

    seed = write_imu(KalibrImu(0.0028, 0.00086, 0.00016, 2.2e-05, 200.0, "/imu0"), tmp_path / "imu.yaml")
    chain = write_imu(KalibrImu(0.0028, 0.00086, 0.00016, 2.2e-05, 200.0, "/imu0"), tmp_path / "imu_chain.yaml",
                      chain=True)
    _yaml_test(tmp_path, "kalibr imu", read_imu, [seed, chain])


def test_fuzz_camera_info(tmp_path: Path, cart_calib: Path) -> None:
    from rgbt.calib.camera_info import read_camera_info

    paths = [need(cart_calib / f"{n}.yaml", "CART camera_info") for n in ("thermal", "color", "mono")]
    _yaml_test(tmp_path, "camera_info", read_camera_info, paths)


def test_fuzz_vins(tmp_path: Path, cart_dir: Path) -> None:
    """VINS-Fusion configs are OpenCV FileStorage YAML (``%YAML:1.0``, ``!!opencv-matrix``): byte and
    line mutations only (PyYAML cannot round-trip them)."""
    from rgbt.calib.vins import read_vins_config, read_vins_pinhole

    vdir = need(cart_dir / "vins_configs", "CART VINS configs")
    configs = _text_seeds(sorted(vdir.glob("*_config_calib.yaml")))
    pinholes = _text_seeds(sorted(vdir.glob("*pinhole.yaml")))
    assert configs and pinholes

    def line_edit(seeds: list) -> st.SearchStrategy[bytes]:
        @st.composite
        def edit(draw: st.DrawFn) -> bytes:
            data, _ = draw(st.sampled_from(seeds))
            lines = data.split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            choice = draw(st.sampled_from(["delete", "value", "junk"]))
            if choice == "delete":
                del lines[i]
            elif choice == "value":
                key = lines[i].split(b":", 1)[0]
                lines[i] = key + b": " + draw(st.sampled_from([b"", b"abc", b"1e999", b"[1, 2", b"{", b"nan",
                                                               b"!!opencv-matrix", b"-" * 50, b"\xff\xfe"]))
            else:
                lines.insert(i, draw(st.binary(max_size=40)))
            return b"\n".join(lines)

        return edit()

    @FUZZ
    @given(st.one_of(mutated(configs), line_edit(configs), st.sampled_from(DEEP_TEXT)))
    def run_config(case: bytes) -> None:
        check("vins config", read_vins_config, _write(tmp_path, "case.yaml", case))

    @FUZZ
    @given(st.one_of(mutated(pinholes), line_edit(pinholes)))
    def run_pinhole(case: bytes) -> None:
        check("vins pinhole", read_vins_pinhole, _write(tmp_path, "case.yaml", case))

    run_config()
    run_pinhole()


def test_fuzz_sidecar(tmp_path: Path) -> None:
    from rgbt.seg.sidecar import load_sidecar

    paths = sorted(ENGINES_DIR.glob("*.json"))
    assert paths, "the repository ships model sidecars in engines/"
    seeds = _text_seeds(paths)
    trees = [json.loads(p.read_text()) for p in paths]
    deep = [b"[" * 100_000, b'{"a":' * 50_000, b"\xff\xfe{}", b"", b"null", b"1e99999", b'{"name": NaN}']

    @FUZZ
    @given(st.one_of(mutated(seeds), mutated_tree(trees).map(lambda t: json.dumps(t).encode()),
                     st.sampled_from(deep)))
    def run(case: bytes) -> None:
        check("onnx sidecar", load_sidecar, _write(tmp_path, "case.json", case))

    run()


# ----------------------------------------------------------------------------- images
@pytest.fixture(scope="module")
def fff_bytes(fixtures_dir: Path) -> bytes:
    return need(fixtures_dir / "thermal" / "flir_duo_pro_r_frame_000000.fff", "FLIR .fff fixture").read_bytes()


@pytest.fixture(scope="module")
def counts_crop(fff_bytes: bytes) -> np.ndarray:
    from rgbt.image.radiometry import parse_fff

    return np.ascontiguousarray(parse_fff(fff_bytes).counts[200:248, 300:364])


def _png_boundaries(data: bytes) -> list[int]:
    out, pos = [8], 8
    while pos + 8 <= len(data):
        (n,) = struct.unpack_from(">I", data, pos)
        out += [pos, pos + 4, pos + 8]
        pos += 12 + n
    return out


def _fff_boundaries(data: bytes) -> list[int]:
    dir_offset, n = struct.unpack_from(">II", data, 0x18)
    out = [0x14, 0x18, 0x1C, dir_offset]
    for i in range(min(n, 64)):
        e = dir_offset + 32 * i
        out += [e, e + 12, e + 16]
        _, _, _, _, offset, length = struct.unpack_from(">HHIIII", data, e)
        out += [offset, offset + 2, offset + length]
    return sorted({b for b in out if b <= len(data)})


def _small_fff(data: bytes) -> bytes:
    """The real FFF file with its RawData cut to the first 8 rows (records moved, directory rewritten)."""
    dir_offset, n = struct.unpack_from(">II", data, 0x18)
    entries = [list(struct.unpack_from(">HHIIII", data, dir_offset + 32 * i))
               + [data[dir_offset + 32 * i + 20:dir_offset + 32 * i + 32]] for i in range(n)]
    body = bytearray(data[:0x40])
    blobs = []
    for e in entries:
        rtype, _, _, _, offset, length = e[:6]
        blob = data[offset:offset + length]
        if rtype == 0x01:  # RawData: header, then width*height u16
            order = "<" if struct.unpack_from("<H", blob, 0)[0] == 2 else ">"
            width, _ = struct.unpack_from(order + "HH", blob, 2)
            blob = blob[:2] + struct.pack(order + "HH", width, 8) + blob[6:32] + blob[32:32 + 2 * width * 8]
        elif rtype != 0x20:
            blob = b""  # keep RawData and CameraInfo only
        blobs.append(blob)
    offset = 0x40 + 32 * n
    table = bytearray()
    for e, blob in zip(entries, blobs):
        table += struct.pack(">HHIIII", e[0] if blob else 0, e[1], e[2], e[3], offset if blob else 0, len(blob))
        table += e[6]
        offset += len(blob)
    body[0x18:0x20] = struct.pack(">II", 0x40, n)
    return bytes(body) + bytes(table) + b"".join(blobs)


@pytest.fixture(scope="module")
def image_seeds(counts_crop: np.ndarray, fff_bytes: bytes) -> dict[str, list[tuple[bytes, list[int]]]]:
    seeds: dict[str, list[tuple[bytes, list[int]]]] = {}
    ok, png = cv2.imencode(".png", counts_crop)
    assert ok
    seeds[".png"] = [(png.tobytes(), _png_boundaries(png.tobytes()))]
    tiffs = []
    for compression in (1, 5):  # none, LZW
        ok, tif = cv2.imencode(".tif", counts_crop, [cv2.IMWRITE_TIFF_COMPRESSION, compression])
        assert ok
        (ifd,) = struct.unpack_from("<I", tif.tobytes(), 4)
        tiffs.append((tif.tobytes(), [4, 8, ifd, ifd + 2]))
    seeds[".tif"] = tiffs
    import io

    buf = io.BytesIO()
    np.save(buf, counts_crop)
    npy = buf.getvalue()
    seeds[".npy"] = [(npy, [6, 8, 10, npy.index(b"\n") + 1])]
    small = _small_fff(fff_bytes)
    seeds[".fff"] = [(small, _fff_boundaries(small))]
    return seeds


@pytest.mark.parametrize("suffix", [".png", ".tif", ".npy", ".fff"])
def test_fuzz_thermal_image(tmp_path: Path, image_seeds: dict, suffix: str) -> None:
    from rgbt.image.io import read_thermal
    from rgbt.image.radiometry import read_fff

    data, _ = image_seeds[suffix][0]
    frame = read_thermal(_write(tmp_path, "seed" + suffix, data)).frame  # the seeds themselves read back
    assert frame.dtype == np.uint16 and frame.shape[0] >= 8
    if suffix == ".fff":
        assert read_fff(tmp_path / "seed.fff").camera["height"] == 8

    @FUZZ
    @given(mutated(image_seeds[suffix]))
    def run(case: bytes) -> None:
        check(f"image {suffix}", read_thermal, _write(tmp_path, "case" + suffix, case))

    run()


# ----------------------------------------------------------------------------- paths that are not files
def _readers() -> dict[str, tuple[str, Callable[[Path], Any]]]:
    from rgbt.bag import open_bag
    from rgbt.calib.camera_info import read_camera_info
    from rgbt.calib.kalibr import read_camchain, read_imu
    from rgbt.calib.vins import read_vins_config, read_vins_pinhole
    from rgbt.image.io import read_thermal
    from rgbt.image.radiometry import read_fff
    from rgbt.seg.sidecar import load_sidecar
    from rgbt.stack import load_stack

    return {"stack.yaml": (".yaml", load_stack), "kalibr camchain": (".yaml", read_camchain),
            "kalibr imu": (".yaml", read_imu), "camera_info": (".yaml", read_camera_info),
            "vins config": (".yaml", read_vins_config), "vins pinhole": (".yaml", read_vins_pinhole),
            "onnx sidecar": (".json", load_sidecar), "image .png": (".png", read_thermal),
            "image .npy": (".npy", read_thermal), "image .fff": (".fff", read_fff),
            "ros1 bag reader": (".bag", open_bag), "mcap reader": (".mcap", open_bag)}


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "binary", "unknown suffix"])
def test_not_a_valid_file_is_a_project_error_naming_it(tmp_path: Path, kind: str) -> None:
    """A missing path, a directory, an empty file, binary junk and an unknown suffix: every reader
    raises an RgbtError whose message names the path."""
    from rgbt.errors import RgbtError

    for parser, (suffix, reader) in _readers().items():
        path = tmp_path / f"{kind.replace(' ', '_')}_{parser.replace(' ', '_')}{suffix}"
        if kind == "directory":
            path.mkdir()
        elif kind == "empty":
            path.write_bytes(b"")
        elif kind == "binary":
            path.write_bytes(bytes(range(256)) * 4)
        elif kind == "unknown suffix":
            if suffix not in (".png", ".npy", ".fff"):
                continue
            path = path.with_suffix(".bmpx")
            path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
        with pytest.raises(RgbtError) as info:
            reader(path)
        assert path.name in str(info.value), f"{parser}: {kind}: message does not name the file: {info.value}"
