"""A small reader of the protobuf wire format, enough for HloModuleProto.

No schema and no generated code: a message is read into its fields, by
field number, and the typed accessors of :class:`Message` decode each field
as the caller's schema says (``_module.py`` holds the field numbers).  Every
malformed input is a ``ValueError`` naming the byte offset, in the whole
buffer, where reading failed; nothing recurses deeper than ``MAX_DEPTH``
messages, and every length is checked against the bytes that remain.

Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 (3 and 4,
the deprecated groups, are refused).
"""

from __future__ import annotations

import struct
import numpy as np

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
WIRE_NAMES = {VARINT: "varint", FIXED64: "fixed64", LEN: "length-delimited",
              FIXED32: "fixed32"}

#: Nesting of messages a reader follows (HLO needs about 8).
MAX_DEPTH = 64

_U64 = (1 << 64) - 1


def read_varint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the varint at ``pos`` (unsigned, < 2**64)."""
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise ValueError(f"truncated varint at byte offset {start}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 70:
            raise ValueError(f"varint longer than 10 bytes at byte offset {start}")
    if result > _U64:
        raise ValueError(f"varint does not fit 64 bits at byte offset {start}")
    return result, pos


def to_int64(value: int) -> int:
    """A varint's 64 bits as a signed (two's complement) int64."""
    return value - (1 << 64) if value >= 1 << 63 else value


# A field occurrence is a tuple (wire type, value, byte offset): the value
# is an int for varint/fixed32/fixed64 and a (start, end) pair into the
# buffer for length-delimited fields.
Field = tuple
WIRE, VALUE, OFFSET = 0, 1, 2


class Message:
    """The fields of one message, by number, each in the order read.

    Accessors take the field number and decode by the expected type; a
    field of another wire type is a ``ValueError`` naming its offset.
    ``name`` (the message type, for messages) makes errors readable.
    """

    __slots__ = ("buf", "start", "end", "depth", "name", "fields")

    def __init__(self, buf: bytes | memoryview, start: int = 0,
                 end: int | None = None, depth: int = 0,
                 name: str = "message") -> None:
        if depth > MAX_DEPTH:
            raise ValueError(f"{name} at byte offset {start}: messages nested "
                             f"more than {MAX_DEPTH} deep")
        self.buf = buf
        self.start = start
        self.end = len(buf) if end is None else end
        self.depth = depth
        self.name = name
        self.fields: dict[int, list[Field]] = _scan(buf, start, self.end, name)

    # -- helpers -----------------------------------------------------------
    def _bad(self, number: int, f: Field, want: str) -> ValueError:
        return ValueError(f"{self.name} field {number} at byte offset "
                          f"{f[OFFSET]}: wire type {f[WIRE]} "
                          f"({WIRE_NAMES.get(f[WIRE], '?')}), expected {want}")

    def has(self, number: int) -> bool:
        return number in self.fields

    def _last(self, number: int) -> Field | None:
        fs = self.fields.get(number)
        return fs[-1] if fs else None

    # -- scalars (proto3: absent means zero/empty; the last occurrence wins) --
    def uint(self, number: int, default: int = 0) -> int:
        f = self._last(number)
        if f is None:
            return default
        if f[WIRE] not in (VARINT, FIXED64, FIXED32):
            raise self._bad(number, f, "an integer")
        return f[VALUE]

    def int64(self, number: int, default: int = 0) -> int:
        """int64/int32 (negative int32 is sign-extended to 10 bytes too)."""
        f = self._last(number)
        if f is None:
            return default
        if f[WIRE] == VARINT or f[WIRE] == FIXED64:
            return to_int64(f[VALUE])
        if f[WIRE] == FIXED32:
            return f[VALUE] - (1 << 32) if f[VALUE] >= 1 << 31 else f[VALUE]
        raise self._bad(number, f, "an integer")

    def flag(self, number: int, default: bool = False) -> bool:
        return bool(self.uint(number, int(default)))

    def data(self, number: int, default: bytes = b"") -> bytes:
        f = self._last(number)
        if f is None:
            return default
        if f[WIRE] != LEN:
            raise self._bad(number, f, "bytes (length-delimited)")
        s, e = f[VALUE]
        return bytes(self.buf[s:e])

    def string(self, number: int, default: str = "") -> str:
        f = self._last(number)
        if f is None:
            return default
        raw = self.data(number)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{self.name} field {number} at byte offset "
                             f"{f[OFFSET]}: not UTF-8 text ({exc.reason})") from None

    def message(self, number: int, name: str = "message") -> Message | None:
        f = self._last(number)
        if f is None:
            return None
        return self._sub(number, f, name)

    def _sub(self, number: int, f: Field, name: str) -> Message:
        if f[WIRE] != LEN:
            raise self._bad(number, f, f"a {name} (length-delimited)")
        s, e = f[VALUE]
        return Message(self.buf, s, e, self.depth + 1, name)

    # -- repeated ----------------------------------------------------------
    def messages(self, number: int, name: str = "message") -> list[Message]:
        return [self._sub(number, f, name) for f in self.fields.get(number, ())]

    def strings(self, number: int) -> list[str]:
        out = []
        for f in self.fields.get(number, ()):
            if f[WIRE] != LEN:
                raise self._bad(number, f, "a string")
            s, e = f[VALUE]
            try:
                out.append(bytes(self.buf[s:e]).decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise ValueError(f"{self.name} field {number} at byte offset "
                                 f"{f[OFFSET]}: not UTF-8 text ({exc.reason})") from None
        return out

    def ints(self, number: int, signed: bool = True) -> list[int]:
        """A repeated integer field, packed or not (both may be mixed)."""
        out: list[int] = []
        for f in self.fields.get(number, ()):
            if f[WIRE] == VARINT:
                out.append(to_int64(f[VALUE]) if signed else f[VALUE])
            elif f[WIRE] == LEN:
                pos, end = f[VALUE]
                buf = self.buf
                while pos < end:
                    v = buf[pos]
                    if v < 0x80:
                        pos += 1
                        out.append(v)
                        continue
                    v, pos = read_varint(buf, pos, end)
                    out.append(to_int64(v) if signed else v)
            else:
                raise self._bad(number, f, "varint integers (packed or not)")
        return out

    def fixed(self, number: int, fmt: str) -> np.ndarray:
        """A repeated fixed-width field (``fmt`` a NumPy dtype such as
        ``"<f4"``, ``"<f8"``), packed or not."""
        dt = np.dtype(fmt)
        wire = FIXED32 if dt.itemsize == 4 else FIXED64
        parts: list[np.ndarray] = []
        for f in self.fields.get(number, ()):
            if f[WIRE] == wire:
                raw = struct.pack("<I" if wire == FIXED32 else "<Q", f[VALUE])
                parts.append(np.frombuffer(raw, dt))
            elif f[WIRE] == LEN:
                s, e = f[VALUE]
                if (e - s) % dt.itemsize:
                    raise ValueError(f"{self.name} field {number} at byte "
                                     f"offset {f[OFFSET]}: {e - s} bytes is not "
                                     f"a whole number of {dt.itemsize}-byte "
                                     f"values")
                parts.append(np.frombuffer(bytes(self.buf[s:e]), dt))
            else:
                raise self._bad(number, f, f"{WIRE_NAMES[wire]} values (packed or not)")
        if not parts:
            return np.zeros(0, dt)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def offset_of(self, number: int) -> int:
        """Byte offset of the field's last occurrence, else of the message."""
        f = self._last(number)
        return f[OFFSET] if f is not None else self.start


def _scan(buf: bytes | memoryview, pos: int, end: int,
          name: str) -> dict[int, list[Field]]:
    """The fields between ``pos`` and ``end``, by number, each checked to
    fit."""
    fields: dict[int, list[Field]] = {}
    while pos < end:
        offset = pos
        key = buf[pos]
        if key < 0x80:  # (most keys and values are one byte)
            pos += 1
        else:
            key, pos = read_varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0 or number > (1 << 29) - 1:
            raise ValueError(f"{name} at byte offset {offset}: invalid field "
                             f"number {number}")
        if wire == VARINT:
            if pos < end and buf[pos] < 0x80:
                value = buf[pos]
                pos += 1
            else:
                value, pos = read_varint(buf, pos, end)
        elif wire == LEN:
            if pos < end and buf[pos] < 0x80:
                length = buf[pos]
                pos += 1
            else:
                length, pos = read_varint(buf, pos, end)
            if length > end - pos:
                raise ValueError(f"{name} field {number} at byte offset "
                                 f"{offset}: length {length} runs past the "
                                 f"end of its message ({end - pos} bytes left)")
            value = (pos, pos + length)
            pos += length
        elif wire == FIXED64:
            if end - pos < 8:
                raise ValueError(f"{name} field {number} at byte offset "
                                 f"{offset}: truncated fixed64")
            value = int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        elif wire == FIXED32:
            if end - pos < 4:
                raise ValueError(f"{name} field {number} at byte offset "
                                 f"{offset}: truncated fixed32")
            value = int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        else:
            raise ValueError(f"{name} field {number} at byte offset {offset}: "
                             f"unsupported wire type {wire}")
        f = (wire, value, offset)
        lst = fields.get(number)
        if lst is None:
            fields[number] = [f]
        else:
            lst.append(f)
    return fields
