"""Writing the NEFF container: a 1024-byte header and a gzip tar payload.

The header layout is not written down here: it comes from the emulator's
description (``NRTEMU_NEFF_HEADER_FIELDS`` in ``nrt/nrtemu.h``, through
``nrtpy._nrtpy.NEFF_HEADER_FIELDS``), the same one its reader is generated
from.  Reading is the emulator's too: see ``nrtpy.neff.inspect``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import struct
import tarfile
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from nrtpy._nrtpy import NEFF_FEATURES_SUPPORTED, NEFF_HEADER_FIELDS, NEFF_HEADER_SIZE

HEADER_SIZE = NEFF_HEADER_SIZE
SUPPORTED_FEATURES = NEFF_FEATURES_SUPPORTED

_INT_FORMATS = {"U64": "<Q", "U32": "<I"}


def _text_field(value: str | bytes, length: int) -> bytes:
    """At most length - 1 bytes (a NUL always ends the field), never cut
    inside a UTF-8 character."""
    raw = value.encode() if isinstance(value, str) else bytes(value)
    if len(raw) < length:
        return raw
    return raw[:length - 1].decode("utf-8", "ignore").encode()


def pack_header(fields: dict[str, Any]) -> bytes:
    """The header with `fields` (by NRTEMU_NEFF_HEADER_FIELDS name); the
    others are zero."""
    unknown = set(fields) - {name for name, *_ in NEFF_HEADER_FIELDS}
    if unknown:
        raise ValueError(f"unknown NEFF header fields: {sorted(unknown)}")
    buf = bytearray(HEADER_SIZE)
    for name, offset, length, kind in NEFF_HEADER_FIELDS:
        value = fields.get(name)
        if value is None:
            continue
        if kind in _INT_FORMATS:
            struct.pack_into(_INT_FORMATS[kind], buf, offset, value)
        else:
            raw = _text_field(value, length) if kind == "TEXT" else bytes(value)
            if len(raw) > length:
                raise ValueError(f"NEFF header field {name} holds {length} "
                                 f"bytes, got {len(raw)}")
            buf[offset:offset + len(raw)] = raw
    return bytes(buf)


_BLOCK = tarfile.BLOCKSIZE


def _ustar_header(name: str, size: int, mtime: int) -> bytes:
    """The ustar header of a regular file of mode 0644, as tarfile writes
    it for a TarInfo of that name, size and mtime (names of at most 100
    bytes).  Built directly: tarfile's own takes about 50 us a member, which
    a kernel's thousands of constants made a large part of writing it."""
    encoded = name.encode("utf-8")
    if len(encoded) > 100:
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = size, mtime, 0o644
        return info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "surrogateescape")
    head = b"".join((
        encoded.ljust(100, b"\0"), b"0000644\0", b"0000000\0", b"0000000\0",
        b"%011o\0" % size, b"%011o\0" % mtime))
    tail = b"".join((
        b"0", bytes(100), b"ustar\x0000", bytes(64 + 16 + 155)))
    chksum = sum(head) + 8 * 0x20 + sum(tail)
    return b"".join((head, b"%06o\0 " % chksum, tail)).ljust(_BLOCK, b"\0")


def _tar(files: dict[str, bytes], mtime: int) -> bytes:
    """An uncompressed ustar archive of `files`, as tarfile writes it."""
    parts = []
    for member, data in files.items():
        parts.append(_ustar_header(member, len(data), mtime))
        parts.append(data)
        if len(data) % _BLOCK:
            parts.append(bytes(_BLOCK - len(data) % _BLOCK))
    parts.append(bytes(2 * _BLOCK))
    size = sum(len(p) for p in parts)
    if size % tarfile.RECORDSIZE:
        parts.append(bytes(tarfile.RECORDSIZE - size % tarfile.RECORDSIZE))
    return b"".join(parts)


def write(path: str | Path, files: dict[str, bytes], *, name: str,
          num_tpb: int = 1, compress: bool = True) -> Path:
    """Write a NEFF holding `files` (archive path -> bytes); gzip (unless
    `compress` is false) + sha256.

    Written to a temporary file beside `path` and renamed over it, so that
    `path` never holds half a NEFF; the temporary file is removed when
    anything fails.
    """
    payload = _tar(files, int(time.time()))
    if compress:
        payload = gzip.compress(payload, compresslevel=6, mtime=0)
    header = pack_header({
        "pkg_version": 1,
        "header_size": HEADER_SIZE,
        "data_size": len(payload),
        "neff_version_major": 2,
        "neff_version_minor": 0,
        "neff_build_version": "nrtpy.neff 1",
        "num_tpb": num_tpb,
        "hash": hashlib.sha256(payload).digest(),
        "uuid": uuid.uuid4().bytes,
        "name": name,
        "requested_tpb_count": num_tpb,
        "feature_bits": 0,
        "lnc_size": 1,
    })
    path = Path(path)
    # A name of its own in the same folder (two writers of one path never
    # share a temporary file); mkstemp creates it 0600, and a NEFF is no
    # secret: 0644 like the archive's members.
    fd, tmp_name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp",
                                    dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header + payload)
            os.fchmod(f.fileno(), 0o644)
        tmp.replace(path)  # never leave a half-written NEFF behind
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
