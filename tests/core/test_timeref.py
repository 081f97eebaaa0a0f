"""The TimeReference.source codec of the driver-level counter topics: round trips and bad text."""

from __future__ import annotations

import pytest

from rgbt.errors import DecodeError
from rgbt.timeref import FrameCounter, ImuSync, decode_frame, decode_imu, encode_frame, encode_imu


@pytest.mark.parametrize("counter,ffc", [(0, False), (1234, True), (2**40, False)])
def test_frame_round_trip(counter: int, ffc: bool) -> None:
    assert decode_frame(encode_frame(counter, ffc)) == FrameCounter(counter, ffc)


def test_frame_text_is_the_documented_one() -> None:
    assert (encode_frame(7), encode_frame(8, ffc=True)) == ("7", "8;ffc")


@pytest.mark.parametrize("count,since", [(0, 0), (812, 4_166_666), (2**31, 16_666_666)])
def test_imu_round_trip(count: int, since: int) -> None:
    assert decode_imu(encode_imu(count, since)) == ImuSync(count, since)
    assert encode_imu(None, None) == "0;0"


@pytest.mark.parametrize("bad", ["", "abc", "1.5;ffc"])
def test_bad_frame_source_names_the_text(bad: str) -> None:
    with pytest.raises(DecodeError, match="frame_info source"):
        decode_frame(bad)


@pytest.mark.parametrize("bad", ["", "12", "12;x", ";5"])
def test_bad_imu_source_names_the_text(bad: str) -> None:
    with pytest.raises(DecodeError, match="sync_info source"):
        decode_imu(bad)
