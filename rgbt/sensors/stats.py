"""Counts every device-stream decoder reports: packets decoded, checksum failures, bytes skipped."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class DecodeStats:
    """What a decoder made of a byte stream.

    ``packets``: frames / sentences with a valid checksum; ``checksum_failures``: candidate
    frames whose checksum (CRC, Fletcher, XOR) was wrong; ``bytes_skipped``: bytes that belong
    to no valid frame; ``undecodable``: checksum-valid frames the message decoder could not
    read (unknown message, inconsistent payload); ``bytes_total``: the stream's size in bytes.
    """

    packets: int = 0
    checksum_failures: int = 0
    bytes_skipped: int = 0
    undecodable: int = 0
    bytes_total: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def nothing_found(self, source: str, kind: str) -> str:
        """The one-line report for a non-empty stream without a single valid packet."""
        return (f"{source}: no valid {kind} packet in {self.bytes_total} bytes "
                f"({self.checksum_failures} checksum failures, {self.bytes_skipped} bytes skipped)")
