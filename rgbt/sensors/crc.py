"""CRC-16-CCITT (polynomial 0x1021, MSB first), table driven.

VectorNav uses initial value 0x0000; the FLIR Boson serial protocol uses 0x1D0F.
"""

from __future__ import annotations


def _make_table() -> list[int]:
    table = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        table.append(c & 0xFFFF)
    return table


_TABLE = _make_table()


def crc16_ccitt(data: bytes | bytearray | memoryview, init: int = 0x0000) -> int:
    """CRC-16-CCITT of ``data`` starting from ``init`` (no final XOR, no reflection)."""
    crc = init
    table = _TABLE
    for b in bytes(data):
        crc = ((crc << 8) & 0xFFFF) ^ table[((crc >> 8) ^ b) & 0xFF]
    return crc
