"""StampPairer: frames and their counter messages meet by host stamp, whichever comes first."""

from __future__ import annotations

from rgbt.graph.sync_adapter import StampPairer


def test_pairs_in_either_order_and_bounds_what_waits():
    p = StampPairer(max_pending=2)
    assert p.add_info(10, "i10") is None  # info first: kept
    assert p.add_frame(10, "f10") == ("i10", False)
    assert p.add_frame(20, "f20") == (None, False)  # frame first: kept
    assert p.add_info(20, "i20") == "f20"
    assert not p.frames and not p.infos
    assert p.add_frame(30, "f30") == (None, False)
    assert p.add_frame(40, "f40") == (None, False)
    assert p.add_frame(50, "f50") == (None, True)  # the oldest unpaired frame (30) is evicted
    assert list(p.frames) == [40, 50]
    assert p.add_info(30, "i30") is None and list(p.infos) == [30]  # its frame is gone
