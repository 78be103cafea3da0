"""A GGUF file's header read in one pass without the weights: the metadata values asked for, and each tensor's
element count.

The `gguf` package's `GGUFReader` builds a numpy view of every part of every field, the tokenizer's vocabulary
included (49,152 strings and their scores for SmolLM2, 262,144 for Gemma 3): 4.9 s for SmolLM2's header and 19.8 s
for Gemma 3's on a 2-core EPYC, paid by `models info`, `models add`, `models optimize` and a layout conversion.
This reader decodes only the keys a caller names and steps over every other value by its length (a string array's
strings one length at a time, a fixed-size array in one step): milliseconds for either file.

It refuses what `GGUFReader` refuses, so a file is damaged for both or for neither: a wrong magic, a version other
than 2 or 3, an unknown value or tensor type, a duplicate key or tensor name, a `general.alignment` that is not a
UINT32 power of two, and any length, count or tensor whose bytes would lie past the end of the file (checked
against the file's size before anything is read, so a hostile count is an error, not an allocation).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAGIC = b"GGUF"
VERSIONS = (2, 3)  # what gguf's reader (and llama.cpp) reads
ALIGNMENT = 32  # GGUF's default alignment of the tensor data
KEPT_ARRAY_MAX = 1 << 20  # the longest array value decoded (a vocabulary is 49k-262k); a longer one reads as None
# value type -> struct code (GGUFValueType: 8 is a string, 9 an array)
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY, _UINT32 = 8, 9, 4


class HeaderError(ValueError):
    """The header is damaged, truncated or of a kind this reader (and gguf's) does not read."""


@dataclass(frozen=True)
class Header:
    """What `read_header` read: the version, the values of the keys asked for (None for a string that is not
    UTF-8, as `GGUFReader`'s `contents()` fails on it), and each tensor's number of elements, in file order."""

    version: int
    values: dict[str, Any]
    tensor_elements: tuple[int, ...]


class _Cursor:
    """Reads of one byte order from a buffer, each checked against its end."""

    def __init__(self, buf: Any, order: str) -> None:
        self.buf, self.order, self.end, self.at = buf, order, len(buf), 0

    def need(self, n: int) -> None:
        if n < 0 or self.at + n > self.end:
            raise HeaderError(f"truncated: {n} bytes needed at byte {self.at} of {self.end}")

    def scalar(self, code: str) -> Any:
        size = struct.calcsize(code)
        self.need(size)
        value = struct.unpack_from(self.order + code, self.buf, self.at)[0]
        self.at += size
        return value

    def raw_string(self) -> bytes:
        n = self.scalar("Q")
        self.need(n)
        data = bytes(self.buf[self.at : self.at + n])
        self.at += n
        return data

    def skip_string(self) -> None:
        self._skip(self.scalar("Q"))

    def name(self) -> str:
        """A key or tensor name: UTF-8, as gguf's reader requires of names."""
        try:
            return self.raw_string().decode("utf-8")
        except UnicodeDecodeError as e:
            raise HeaderError(f"a name at byte {self.at} is not UTF-8 ({e})") from None

    def value(self, vtype: int, keep: bool) -> Any:
        """The value of type `vtype` at the cursor, decoded when `keep`, else stepped over (returns None)."""
        if vtype == _STRING:
            if not keep:
                self.skip_string()
                return None
            try:
                return self.raw_string().decode("utf-8")
            except UnicodeDecodeError:
                return None
        code = _SCALARS.get(vtype)
        if code is not None:
            return self.scalar(code) if keep else self._skip(struct.calcsize(code))
        if vtype != _ARRAY:
            raise HeaderError(f"unknown value type {vtype} at byte {self.at}")
        itype, count = self.scalar("I"), self.scalar("Q")
        if count > KEPT_ARRAY_MAX:  # no caller reads a long array: stepped over and read as None, never built
            keep = False
        icode = _SCALARS.get(itype)
        if icode is not None and not keep:  # a fixed-size array: one step, its size checked first
            return self._skip(count * struct.calcsize(icode))
        if icode is None and itype not in (_STRING, _ARRAY):
            raise HeaderError(f"unknown array element type {itype} at byte {self.at}")
        # every element takes at least its own size (a string or an array at least its 8-byte length): a count
        # that cannot fit in the rest of the file is damage, found before a single element is read
        self.need(count * (struct.calcsize(icode) if icode is not None else 8))
        if not keep:
            for _ in range(count):
                self.value(itype, False)
            return None
        items = [self.value(itype, True) for _ in range(count)]
        if itype == _STRING and any(x is None for x in items):
            return None  # one string that is not UTF-8: gguf's contents() fails on the whole array
        return items

    def _skip(self, n: int) -> None:
        self.need(n)
        self.at += n


def read_header(path: str | Path, keep: Callable[[str], bool]) -> Header:
    """The header of the GGUF file at `path`, decoding the values of the keys for which `keep(key)` is true.
    `HeaderError` (or `OSError`) for a file gguf's reader would refuse too."""
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size < 24:
            raise HeaderError(f"truncated: {size} bytes, a GGUF header needs 24")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _parse(mm, keep)


def _parse(buf: Any, keep: Callable[[str], bool]) -> Header:
    if bytes(buf[:4]) != MAGIC:
        raise HeaderError("GGUF magic invalid")
    order = "<"
    (version,) = struct.unpack_from("<I", buf, 4)
    if version & 0xFFFF == 0:  # written for the other byte order, as gguf's reader detects it
        order = ">"
        (version,) = struct.unpack_from(">I", buf, 4)
    if version not in VERSIONS:
        raise HeaderError(f"file appears to be version {version}, which cannot be read")
    cur = _Cursor(buf, order)
    cur.at = 8
    n_tensors, n_kv = cur.scalar("Q"), cur.scalar("Q")
    values: dict[str, Any] = {}
    seen: set[str] = set()
    alignment = ALIGNMENT
    for _ in range(n_kv):
        key = cur.name()
        if key in seen:
            raise HeaderError(f"duplicate key {key!r}")
        seen.add(key)
        vtype = cur.scalar("I")
        if key == "general.alignment":
            if vtype != _UINT32:
                raise HeaderError("bad type for general.alignment")
            alignment = cur.scalar("I")
            if alignment == 0 or alignment & (alignment - 1):
                raise HeaderError("invalid alignment: must be a non-zero power of two")
            if keep(key):
                values[key] = alignment
            continue
        value = cur.value(vtype, keep(key))
        if keep(key):
            values[key] = value
    tensors = [_tensor_info(cur) for _ in range(n_tensors)]
    start = cur.at + (-cur.at) % alignment
    return Header(version, values, tuple(_checked(tensors, start, cur.end)))


def _tensor_info(cur: _Cursor) -> tuple[str, list[int], int, int]:
    name = cur.name()
    n_dims = cur.scalar("I")
    cur.need(8 * n_dims)
    dims = [cur.scalar("Q") for _ in range(n_dims)]
    return name, dims, cur.scalar("I"), cur.scalar("Q")


def _checked(tensors: list[tuple[str, list[int], int, int]], start: int, end: int) -> list[int]:
    """Each tensor's element count, after the checks gguf's reader makes when it maps the tensor's data."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    names: set[str] = set()
    out: list[int] = []
    for name, dims, raw_type, offset in tensors:
        if name in names:
            raise HeaderError(f"found duplicated tensor with name {name}")
        names.add(name)
        try:
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(raw_type)]
        except ValueError:
            raise HeaderError(f"tensor {name!r} has unknown type {raw_type}") from None
        n = 1
        for d in dims:
            n *= d
        n_bytes = n * type_size // block
        if start + offset + n_bytes > end:
            raise HeaderError(f"tensor {name!r}'s data ({n_bytes} bytes at {start + offset}) lies past the file's end ({end})")
        out.append(n)
    return out
