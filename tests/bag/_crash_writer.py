"""Child process for test_crash.py: writes numbered messages until told to stop.

argv: OUT_DIR SPLIT_BYTES FILE_SIZE_LIMIT(0 = none). Prints "P written durable" lines every 20
messages, installs a SIGTERM handler that closes the writer (as the recorder does), and on a
BagError prints "ERR <message>" and "KEPT <count>".
"""

import resource
import signal
import sys

from rgbt.bag import BagWriter
from rgbt.bag.types import ros2_typestore
from rgbt.errors import BagError

out, split, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # writes past it fail with EFBIG
String = ros2_typestore().types["std_msgs/msg/String"]
writer = BagWriter(out, split_size_bytes=split or None, flush_interval_s=0.02, chunk_size_bytes=50_000, fsync=False,
                   custom_data={"rgbt.synthetic": "true"})
writer.add_topic("/n", "std_msgs/msg/String")
stop = False


def on_term(signum, frame):
    global stop
    writer.close()
    stop = True


signal.signal(signal.SIGTERM, on_term)
i = 0
try:
    while not stop:
        try:
            writer.write_msg("/n", 1_000_000_000 + i * 1_000_000, String(f"{i:08d}" + "x" * 3000))
        except BagError as exc:
            if stop or writer.closed and "closed" in str(exc) and "write failed" not in str(exc):
                break
            print("ERR", exc, flush=True)
            print("KEPT", writer.message_count, flush=True)
            sys.exit(0)
        i += 1
        if i % 20 == 0:
            print("P", i, writer.durable_message_count, flush=True)
finally:
    if not writer.closed:
        writer.close()
print("DONE", i, flush=True)
