#!/usr/bin/env python3
"""Write the seed corpus of the NEFF fuzz target (tests/fuzz/corpus/neff).

Small valid NEFFs (raw and gzip payloads, sha256 and md5 hashes, GNU and
PAX long names, .npy constants) and broken variants of them, built with
the standard library only, deterministically (fixed mtimes and ids), so
rerunning the script rewrites identical files.

    python3 tests/fuzz/make_corpus.py [OUTPUT_DIR]
"""

import gzip
import hashlib
import io
import json
import os
import struct
import sys
import tarfile

HEADER_SIZE = 1024


def npy(descr, shape, data):
    """A .npy v1 file, header padded to 64 bytes as numpy does."""
    if len(shape) == 1:
        shape_text = "(%d,)" % shape[0]
    else:
        shape_text = "(" + ", ".join("%d" % d for d in shape) + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr,
        shape_text,
    )
    total = 10 + len(header) + 1
    header += " " * ((-total) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + (
        header.encode("latin1") + data
    )


def tar_bytes(members, fmt=tarfile.GNU_FORMAT, dirs=()):
    """A tar of (path, bytes) members; deterministic metadata."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mtime = 0
            info.mode = 0o755
            tar.addfile(info)
        for path, data in members:
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    # tarfile pads to 10 KiB records; keep one end-of-archive marker only,
    # since smaller inputs fuzz faster.
    data = out.getvalue().rstrip(b"\0")
    return data + bytes(-len(data) % 512 + 1024)


def neff(
    payload,
    pkg_version=1,
    major=2,
    minor=0,
    features=0,
    lnc=1,
    validate=False,
    header_size=HEADER_SIZE,
):
    """Header + payload, with the payload hash of pkg_version."""
    if pkg_version == 2:
        digest = hashlib.md5(payload).digest()
    else:
        digest = hashlib.sha256(payload).digest()
    h = bytearray(HEADER_SIZE)
    struct.pack_into(
        "<QQQQQ", h, 0, pkg_version, header_size, len(payload), major, minor
    )
    h[0x28 : 0x28 + 8] = b"fuzz 1.0"
    struct.pack_into("<I", h, 0xA8, 1)
    h[0xAC : 0xAC + len(digest)] = digest
    h[0xCC : 0xCC + 16] = bytes(range(16))
    h[0xDC : 0xDC + 9] = b"fuzz-neff"
    struct.pack_into("<I", h, 0x1DC, 1)
    struct.pack_into("<QI", h, 0x220, features, lnc)
    # The fuzz target validates the hash when this padding bit is set.
    h[0x22C] = 1 if validate else 0
    return bytes(h) + payload


def members(path):
    """{path: bytes} of a NEFF's archive, read with Python's tarfile (a
    reader independent of the emulator's, which the corpus exercises)."""
    with open(path, "rb") as f:
        payload = f.read()[1024:]
    if payload[:2] == b"\x1f\x8b":
        payload = gzip.decompress(payload)
    out = {}
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        for m in tar:
            if m.isfile():
                name = m.name[2:] if m.name.startswith("./") else m.name
                out[name] = tar.extractfile(m).read()
    return out


def def_json(variables, program=True):
    doc = {"var": variables}
    if program:
        doc["emulator_program"] = "program.json"
    return json.dumps(doc).encode()


PROGRAM = json.dumps(
    {
        "format": "nrtpy-emulator-program",
        "version": 1,
        "buffers": {
            "a": {"kind": "input", "dtype": "float32", "shape": [2, 3]},
            "w": {"kind": "const", "dtype": "float32", "shape": [3],
                  "var": "w"},
            "output_0": {"kind": "output", "dtype": "float32",
                         "shape": [2, 3]},
        },
        "ops": [{"op": "add", "in": ["a", "w"], "out": "output_0"}],
    }
).encode()


def standard_members():
    sg00 = def_json(
        {
            "a": {"type": "input", "size": 24, "shape": [2, 3],
                  "dtype": "float32"},
            "w": {"type": "file", "size": 12, "file_name": "w.npy"},
            "output_0": {"type": "output", "size": 24, "shape": [2, 3],
                         "dtype": "float32"},
            "scratch": {"type": "tmp-buf", "size": 64},
        }
    )
    sg01 = def_json(
        {
            "b": {"type": "input", "size": 7},
            "c": {"type": "input", "size": 2, "shape": [1],
                  "dtype": "bfloat16"},
            "out\u00e9": {"type": "output", "size": 1, "shape": [],
                          "dtype": "bool"},
        },
        program=False,
    )
    meta = json.dumps(
        {"name": "fuzz", "version": "2.0", "generator": "make_corpus",
         "subgraphs": ["sg00", "sg01"]}
    ).encode()
    return [
        ("./neff.json", meta),
        ("./sg00/def.json", sg00),
        ("./sg00/program.json", PROGRAM),
        ("./sg00/w.npy", npy("<f4", [3], struct.pack("<3f", 1, 2, 3))),
        ("./sg01/def.json", sg01),
        ("./sg01/v.npy", npy("|V2", [2, 1], b"\x80\x3f\x00\x40")),
    ]


def corpus():
    members = standard_members()
    raw = tar_bytes(members, dirs=("./", "./sg00", "./sg01"))
    gz = gzip.compress(raw, mtime=0)
    out = {
        "valid_raw.neff": neff(raw),
        "valid_gzip.neff": neff(gz),
        "valid_md5_validated.neff": neff(gz, pkg_version=2, validate=True),
        "valid_sha256_validated.neff": neff(raw, validate=True),
        "valid_lnc2_v1.neff": neff(raw, major=1, minor=1, lnc=2,
                                   features=0x8000000000000001),
    }

    long_dir = "sg00/" + "d" * 120
    long_members = members + [(long_dir + "/long.json", b'{"x": [1, 2]}')]
    out["valid_gnu_longname.neff"] = neff(tar_bytes(long_members))
    out["valid_pax.neff"] = neff(
        tar_bytes(long_members, fmt=tarfile.PAX_FORMAT)
    )
    out["valid_ustar.neff"] = neff(tar_bytes(members,
                                             fmt=tarfile.USTAR_FORMAT))

    tricky = json.dumps(
        {"var": {"s\u2603\U0001F600": {"type": "input", "size": 8,
                                      "shape": [2], "dtype": "int32"},
                 "n": {"type": "output", "size": 8, "shape": [1],
                       "dtype": "float64", "extra": [1e300, -0.0, None,
                                                     True, "\u0000"]}}},
        ensure_ascii=True,
    ).encode()
    out["valid_escapes.neff"] = neff(tar_bytes([("sg00/def.json", tricky)]))

    # Broken variants.
    out["bad_version3.neff"] = neff(raw, major=3)
    out["bad_features.neff"] = neff(raw, features=0x100)
    out["bad_lnc.neff"] = neff(raw, lnc=3)
    out["bad_header_size.neff"] = neff(raw, header_size=512)
    out["bad_hash.neff"] = neff(raw, validate=True)[:-1] + b"\x01"
    out["bad_truncated_raw.neff"] = neff(raw[: len(raw) // 2])
    out["bad_truncated_gzip.neff"] = neff(gz[:-16])
    broken = bytearray(raw)
    broken[100] ^= 0xFF  # first header's mode field: checksum mismatch
    out["bad_tar_checksum.neff"] = neff(bytes(broken))
    out["bad_json.neff"] = neff(
        tar_bytes([("sg00/def.json", b'{"var": {"a": {"type": "input",')])
    )
    out["bad_shape.neff"] = neff(
        tar_bytes(
            [("sg00/def.json",
              def_json({"a": {"type": "input", "size": 20, "shape": [2, 3],
                              "dtype": "float32"}}))]
        )
    )
    out["bad_no_def.neff"] = neff(tar_bytes([("neff.json", b"{}")]))
    out["bad_npy.neff"] = neff(
        tar_bytes(
            [("sg00/def.json", def_json({})),
             ("sg00/x.npy", npy(">f4", [1], b"\0\0\0\0")),
             ("sg00/y.npy", npy("<f4", [4], b"\0\0\0\0"))]
        )
    )
    out["bad_deep.neff"] = neff(
        tar_bytes([("sg00/def.json", b"[" * 70 + b"]" * 70)])
    )
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "corpus", "neff")
    os.makedirs(dest, exist_ok=True)
    for name, data in sorted(corpus().items()):
        with open(os.path.join(dest, name), "wb") as f:
            f.write(data)
    print("wrote %d files to %s" % (len(corpus()), dest))


if __name__ == "__main__":
    main()
