"""The NEFF container: a 1024-byte header and a (gzip) tar payload.

Field offsets follow docs/neff-emulator-format.md.  Reading is pure Python
and never extracts to disk; it accepts any NEFF, including ones compiled for
Neuron hardware.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import struct
import tarfile
import time
import uuid
import zlib
from pathlib import Path
from typing import Any, Callable

HEADER_SIZE = 1024
SUPPORTED_FEATURES = 0x80000000000000FF

# (name, offset, struct format) of every header field we read or write.
_FIELDS = [
    ("pkg_version", 0x000, "<Q"),
    ("header_size", 0x008, "<Q"),
    ("data_size", 0x010, "<Q"),
    ("neff_version_major", 0x018, "<Q"),
    ("neff_version_minor", 0x020, "<Q"),
    ("neff_build_version", 0x028, "128s"),
    ("num_tpb", 0x0A8, "<I"),
    ("hash", 0x0AC, "32s"),
    ("uuid", 0x0CC, "16s"),
    ("name", 0x0DC, "256s"),
    ("requested_tpb_count", 0x1DC, "<I"),
    ("tpb_per_node", 0x1E0, "64s"),
    ("feature_bits", 0x220, "<Q"),
    ("lnc_size", 0x228, "<I"),
]


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def pack_header(fields: dict[str, Any]) -> bytes:
    buf = bytearray(HEADER_SIZE)
    for name, offset, fmt in _FIELDS:
        value = fields.get(name, b"" if fmt.endswith("s") else 0)
        if isinstance(value, str):
            value = value.encode()
        struct.pack_into(fmt, buf, offset, value)
    return bytes(buf)


def unpack_header(raw: bytes) -> dict[str, Any]:
    if len(raw) < HEADER_SIZE:
        raise ValueError(
            f"not a NEFF: {len(raw)} bytes, a NEFF header alone has {HEADER_SIZE}"
        )
    out: dict[str, Any] = {}
    for name, offset, fmt in _FIELDS:
        (value,) = struct.unpack_from(fmt, raw, offset)
        if name in ("neff_build_version", "name"):
            value = _cstr(value)
        elif name in ("hash", "uuid"):
            value = value.hex()
        elif name == "tpb_per_node":
            continue
        out[name] = value
    return out


def write(path: str | Path, files: dict[str, bytes], *, name: str,
          num_tpb: int = 1) -> Path:
    """Write a NEFF holding `files` (archive path -> bytes); gzip + sha256."""
    tar_buf = io.BytesIO()
    with tarfile.open(fileobj=tar_buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for member, data in files.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            info.mtime = int(time.time())
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    payload = gzip.compress(tar_buf.getvalue(), compresslevel=6, mtime=0)
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
        "name": name.encode()[:255],
        "requested_tpb_count": num_tpb,
        "feature_bits": 0,
        "lnc_size": 1,
    })
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(header + payload)
    tmp.replace(path)  # never leave a half-written NEFF behind
    return path


def read(path: str | Path,
         select: Callable[[str], bool] | None = None,
         ) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Header fields and archive members of the NEFF at `path`.

    With `select`, only the members it accepts are returned (the others are
    skipped without being kept in memory: a NEFF's weights can be large).
    """
    header, files, _ = read_members(path, select)
    return header, files


def read_members(path: str | Path,
                 select: Callable[[str], bool] | None = None,
                 ) -> tuple[dict[str, Any], dict[str, bytes], list[str]]:
    """(header, selected members' contents, names of all members)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header = unpack_header(f.read(HEADER_SIZE))
        if header["header_size"] != HEADER_SIZE:
            raise ValueError(f"{path}: header_size is {header['header_size']}, "
                             f"expected {HEADER_SIZE}")
        if header["data_size"] != size - HEADER_SIZE:
            raise ValueError(f"{path}: data_size is {header['data_size']} but "
                             f"{size - HEADER_SIZE} payload bytes follow the header")
        gzipped = f.read(2) == b"\x1f\x8b"
        f.seek(HEADER_SIZE)
        files: dict[str, bytes] = {}
        names: list[str] = []
        try:
            # Streamed ("r|"): the payload is never held in memory whole.
            with tarfile.open(fileobj=f, mode="r|gz" if gzipped else "r|") as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    name = member.name[2:] if member.name.startswith("./") else member.name
                    names.append(name)
                    if select is None or select(name):
                        fh = tar.extractfile(member)
                        assert fh is not None  # isfile() members always have data
                        files[name] = fh.read()
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as e:
            raise ValueError(f"{path}: the payload is not a valid (gzip) tar "
                             f"archive: {e}") from None
    return header, files, names
