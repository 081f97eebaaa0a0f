"""A worker thread's name reaches the OS (``rgbt.threadname``): what ``top -H``, ``perf`` and the
bench's per-thread numbers read from ``/proc/<pid>/task/<tid>/comm``."""

from __future__ import annotations

import sys
import threading

import pytest

from rgbt.threadname import name_native_thread


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_NAME) is Linux's")
def test_the_thread_name_is_the_kernel_thread_name_cut_to_15_bytes() -> None:
    seen: dict[str, object] = {}

    def work() -> None:
        seen["applied"] = name_native_thread()
        with open(f"/proc/self/task/{threading.get_native_id()}/comm") as fh:
            seen["comm"] = fh.read().strip()
        name_native_thread("seg-infer")
        with open(f"/proc/self/task/{threading.get_native_id()}/comm") as fh:
            seen["explicit"] = fh.read().strip()

    t = threading.Thread(target=work, name="rgbt-rectify-pairs")
    t.start()
    t.join()
    assert seen == {"applied": True, "comm": "rgbt-rectify-pa", "explicit": "seg-infer"}
    with open(f"/proc/self/task/{threading.get_native_id()}/comm") as fh:
        assert fh.read().strip() != "rgbt-rectify-pa"  # only the calling thread was renamed
