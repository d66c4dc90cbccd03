"""The bytes of an import file: its size limit, reading it within the limit and
decoding it as text."""

from __future__ import annotations

from pathlib import Path

from planner.errors import BadInput

MAX_FILE_BYTES = 5 * 1024 * 1024
"""Largest file accepted (5 MiB): real benchmark exports are a few kilobytes."""
MAX_JSON_DEPTH = 32
"""Deepest nesting of JSON arrays and objects accepted (the planner's own JSON has 4)."""


def read_limited(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a file, refused once more than ``limit`` have been read.

    The limit is enforced while reading, not from the file's size: ``/dev/zero``, a pipe
    or a file that grows report a size of 0 or less than they hold.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise BadInput(
            f"{path}: file is larger than the {limit // 1024 // 1024} MiB limit for imports"
        )
    return data


def decode_text(name: str, data: bytes) -> str:
    """UTF-8 text (a byte-order mark is accepted); BadInput for anything else."""
    if len(data) > MAX_FILE_BYTES:
        raise BadInput(
            f"{name}: file is {len(data):,} bytes, over the {MAX_FILE_BYTES // 1024 // 1024} MiB "
            "limit for imports"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(
            f"{name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save the file as UTF-8"
        ) from None
    if not text.strip():
        raise BadInput(f"{name}: file is empty")
    if "\x00" in text:
        raise BadInput(f"{name}: file contains NUL bytes; it is not a text table")
    return text
