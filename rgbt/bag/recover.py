"""Finish an interrupted MCAP recording in place (``rgbt bag recover DIR``).

A writer killed mid-recording (``SIGKILL``, power loss) leaves its open file without summary or
footer, and ``metadata.yaml`` listing only the files finished before. Recovery salvages every whole
chunk of each unfinished file into a new, finished MCAP file (through rosbags' MCAP storage writer,
via :class:`rgbt.bag.writer.McapFile`), replaces the damaged file with it, and rewrites
``metadata.yaml`` from the files' contents, keeping ``custom_data``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from rosbags.interfaces import Connection, ConnectionExtRosbag2, MessageDefinition, MessageDefinitionFormat
from rosbags.rosbag2.enums import CompressionMode
from rosbags.rosbag2.metadata import dump_qos_v9, parse_qos
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from rgbt.bag.mcapscan import Channel, Schema, read_chunk, scan_mcap
from rgbt.bag.writer import BAG_VERSION, McapFile, _yaml_text
from rgbt.errors import BagError

#: ``keep(topic, msgtype, log_time_ns, cdr) -> bool``: whether a salvaged message stays in the file
KeepFilter = Callable[[str, str, int, bytes], bool]


def _split_index(path: Path) -> tuple[int, str]:
    m = re.search(r"_(\d+)\.mcap$", path.name)
    return (int(m.group(1)) if m else -1, path.name)


def _salvage(path: Path, keep: KeepFilter | None = None) -> tuple[int, int, int]:
    """Rewrite the whole chunks of an unfinished file as a finished file; returns (messages, bytes
    lost, messages ``keep`` left out)."""
    scan = scan_mcap(path)
    if not scan.magic_ok:
        raise BagError(f"{path}: not an MCAP file (bad magic); cannot recover")
    tmp = path.with_name(path.name + ".recovering")
    if tmp.exists():
        tmp.unlink()
    out = McapFile(tmp, CompressionMode.NONE)
    schemas: dict[int, Schema] = {}
    conns: dict[int, Connection] = {}
    kept_end = scan.chunks[0][0] if scan.chunks else 8
    count = skipped = 0
    try:
        with path.open("rb") as bio:
            for offset, length in scan.chunks:
                try:
                    items = _chunk_items(bio, offset, schemas)
                except Exception:  # noqa: BLE001 - a damaged chunk ends the salvage
                    break
                for item in items:
                    if isinstance(item, Schema):
                        schemas[item.id] = item
                    elif isinstance(item, tuple) and isinstance(item[0], Channel):
                        channel, conn, qos_text = item
                        conn = conn._replace(id=len(conns) + 1)
                        if conn.msgtype not in {s.name for s in out.schemas}:
                            out.add_msgtype(conn)
                        out.add_connection(conn, qos_text)
                        conns[channel.id] = conn
                    else:
                        cid, t_ns, data = item
                        if cid not in conns:
                            continue
                        if keep is not None and not keep(conns[cid].topic, conns[cid].msgtype, t_ns, data):
                            skipped += 1
                            continue
                        out.write(conns[cid], t_ns, data)
                        count += 1
                kept_end = offset + 9 + length
        out.finish("", fsync=True)
    except BaseException as exc:
        out.abandon()
        tmp.unlink(missing_ok=True)
        if isinstance(exc, Exception) and not isinstance(exc, BagError):
            raise BagError(f"{path}: cannot write the recovered file: {exc}") from exc
        raise
    lost = max(0, scan.size - kept_end)
    if count:
        os.replace(tmp, path)
    else:
        tmp.unlink()
        path.unlink()
    return count, lost, skipped


def _chunk_items(bio: Any, offset: int, schemas: dict[int, Schema]) -> list[Any]:
    """Everything one chunk holds, decoded and checked before any of it is written: schemas,
    ``(channel, connection, qos text)`` and messages ``(channel id, log time, data)``."""
    schemas = dict(schemas)
    out: list[Any] = []
    for item in read_chunk(bio, offset):
        if isinstance(item, Schema):
            schemas[item.id] = item
            out.append(item)
        elif isinstance(item, Channel):
            schema = schemas.get(item.schema_id)
            msgtype = schema.name if schema else "unknown/msg/Unknown"
            fmt = MessageDefinitionFormat.IDL if schema and schema.encoding == "ros2idl" \
                else MessageDefinitionFormat.MSG
            qos_text = item.metadata.get("offered_qos_profiles", "")
            conn = Connection(0, item.topic, msgtype, MessageDefinition(fmt, schema.data.decode() if schema else ""),
                              "", 0, ConnectionExtRosbag2(item.message_encoding or "cdr", parse_qos(qos_text)), None)
            out.append((item, conn, qos_text))
        else:
            out.append(item)
    return out


def _rihs01(msgtype: str, msgdef: MessageDefinition) -> str:
    return _rihs01_of(msgtype, msgdef.data)


@lru_cache(maxsize=64)
def _rihs01_of(msgtype: str, data: str) -> str:
    try:
        store = get_typestore(Stores.EMPTY)
        store.register(get_types_from_msg(data, msgtype))
        return store.hash_rihs01(msgtype)
    except Exception:  # noqa: BLE001 - no hash is better than no metadata
        return ""


def rebuild_metadata(path: str | Path, custom_data: dict[str, str] | None = None) -> dict[str, Any]:
    """Rewrite ``DIR/metadata.yaml`` from the finished MCAP files in ``DIR``; returns the dict."""
    path = Path(path)
    files = sorted(path.glob("*.mcap"), key=_split_index)
    topics: dict[tuple[str, str], dict[str, Any]] = {}
    entries: list[dict[str, Any]] = []
    for file in files:
        reader = McapReader(file)
        try:
            reader.open()
        except Exception as exc:  # noqa: BLE001
            raise BagError(f"{file}: cannot read after recovery: {exc}") from exc
        try:
            n = reader.metadata.message_count
            start = reader.metadata.start_time if n else 0
            duration = max(0, reader.metadata.end_time - 1 - start) if n else 0
            entries.append({"path": file.name, "starting_time": {"nanoseconds_since_epoch": start},
                            "duration": {"nanoseconds": duration}, "message_count": n})
            for conn in reader.connections:
                key = (conn.topic, conn.msgtype)
                if key not in topics:
                    qos = conn.ext.offered_qos_profiles if isinstance(conn.ext, ConnectionExtRosbag2) else []
                    topics[key] = {"topic_metadata": {"name": conn.topic, "type": conn.msgtype,
                                                      "serialization_format": "cdr",
                                                      "offered_qos_profiles": dump_qos_v9(list(qos)),
                                                      "type_description_hash": _rihs01(conn.msgtype, conn.msgdef)},
                                   "message_count": 0}
                topics[key]["message_count"] += conn.msgcount
        except Exception as exc:  # noqa: BLE001 - a finished-looking file whose summary is damaged
            raise BagError(f"{file}: cannot read after recovery: {exc}") from exc
        finally:
            reader.close()
    nonempty = [e for e in entries if e["message_count"]]
    start = min((e["starting_time"]["nanoseconds_since_epoch"] for e in nonempty), default=0)
    end = max((e["starting_time"]["nanoseconds_since_epoch"] + e["duration"]["nanoseconds"] for e in nonempty),
              default=0)
    meta = {"rosbag2_bagfile_information": {
        "version": BAG_VERSION, "storage_identifier": "mcap",
        "relative_file_paths": [e["path"] for e in entries],
        "duration": {"nanoseconds": end - start}, "starting_time": {"nanoseconds_since_epoch": start},
        "message_count": sum(e["message_count"] for e in entries),
        "topics_with_message_count": list(topics.values()),
        "compression_format": "", "compression_mode": "", "files": entries,
        "custom_data": dict(custom_data or {}) or None, "ros_distro": "jazzy"}}
    tmp = path / "metadata.yaml.tmp"
    tmp.write_text(_yaml_text(meta), encoding="utf8")
    os.replace(tmp, path / "metadata.yaml")
    return meta


def recover_bag(path: str | Path, keep: KeepFilter | None = None) -> dict[str, Any]:
    """Finish every unfinished MCAP file of bag directory ``path`` and rewrite its metadata.yaml.

    Returns ``{"recovered": {file: messages}, "removed": [files with nothing to keep],
    "bytes_lost": n, "message_count": total, "skipped": n}``. Finished files are left untouched.
    ``keep`` (optional) sees every salvaged message and may leave it out (``skipped`` counts them:
    e.g. what a recorder that took over has already written again).
    """
    path = Path(path)
    if not path.is_dir():
        raise BagError(f"{path}: not a bag directory")
    files = sorted(path.glob("*.mcap"), key=_split_index)
    if not files:
        raise BagError(f"{path}: no .mcap files to recover")
    custom: dict[str, str] = {}
    meta_path = path / "metadata.yaml"
    if meta_path.exists():
        try:
            old = yaml.safe_load(meta_path.read_text())["rosbag2_bagfile_information"]
            custom = {str(k): str(v) for k, v in (old.get("custom_data") or {}).items()}
        except Exception:  # noqa: BLE001 - a damaged metadata.yaml is rebuilt from the files
            custom = {}
    recovered: dict[str, int] = {}
    removed: list[str] = []
    lost = skipped = 0
    for file in files:
        if scan_mcap(file).finished:
            continue
        count, nbytes, left_out = _salvage(file, keep)
        lost += nbytes
        skipped += left_out
        if count:
            recovered[file.name] = count
        else:
            removed.append(file.name)
    for stray in path.glob("*.recovering"):
        stray.unlink()
    meta = rebuild_metadata(path, custom)
    return {"recovered": recovered, "removed": removed, "bytes_lost": lost, "skipped": skipped,
            "message_count": meta["rosbag2_bagfile_information"]["message_count"]}
