"""Write the expected conversions of every dtype pair, computed by NumPy
and ml_dtypes, for test_convert.c.

Usage: gen_dtype_vectors.py NRTEMU_H OUTPUT

The dtypes are the rows of NRTEMU_DTYPE_LIST in NRTEMU_H (nrt/nrtemu.h),
the one list of the emulator's types.

The file is little-endian:
    b"NRTCVT1\\0", then per source set:
    source name (16 bytes, NUL-padded), count n (u64), n source elements,
    then for each of the 17 targets: target name (16 bytes), n expected
    elements, n flag bytes (0: compare bits, 1: skip, 2: expect a NaN).
NumPy and ml_dtypes are required (the Makefile runs this with the venv's
interpreter, where both are installed).
"""

import struct
import sys
import warnings

import re

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:
    sys.exit(f"gen_dtype_vectors.py needs NumPy and ml_dtypes: {e}")


def dtype_names(header):
    """The NumPy names of NRTEMU_DTYPE_LIST, in order, without "unknown"."""
    with open(header, encoding="utf-8") as f:
        text = f.read()
    names = re.findall(r'X\(\w+, "(\w+)",', text)
    if not names:
        sys.exit(f"{header}: no NRTEMU_DTYPE_LIST rows found")
    return [n for n in names if n != "unknown"]


def dtype_of(ml, name):
    return np.dtype(getattr(ml, name)) if hasattr(ml, name) and name not in (
        "float16", "float32", "float64") else np.dtype(name)


def narrow_midpoints(rng, ml):
    """For each float narrower than float32, the midpoints of adjacent
    finite values (at most 6000 of them) and two points past the largest."""
    for name in ("float16", "bfloat16", "float8_e4m3", "float8_e4m3fn",
                 "float8_e5m2", "float8_e3m4"):
        dt = dtype_of(ml, name)
        ints = np.arange(2 ** (8 * dt.itemsize), dtype=np.uint64)
        codes = ints.astype(np.uint8 if dt.itemsize == 1 else np.uint16)
        with np.errstate(all="ignore"):
            v = codes.view(dt).astype(np.float64)
        v = np.sort(np.unique(v[np.isfinite(v)]))
        mids = (v[:-1] + v[1:]) / 2
        mids = np.concatenate([mids, [v[-1] * 1.0625, v[-1] * 1.03]])
        if len(mids) > 6000:
            mids = rng.choice(mids, 6000, replace=False)
        yield mids


def float32_samples(rng, ml):
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0]
    bits = [0x7f800001, 0x7fc00001, 0xffc00000, 0x00000001, 0x807fffff,
            0x00800000, 0x7f7fffff, 0xff7fffff]
    # Every exponent with a few mantissas.
    for e in range(256):
        for m in (0, 1, 0x400000, 0x7fffff, 0x1000, 0x0fff, 0x2000):
            bits.append((e << 23) | m)
            bits.append(0x80000000 | (e << 23) | m)
    # Ties and their neighbours for every narrower float, as float32,
    # +- 1 ulp.
    for mids in narrow_midpoints(rng, ml):
        m32 = mids.astype(np.float32)
        for delta in (-1, 0, 1):
            b = m32.view(np.uint32).astype(np.int64) + delta
            bits.extend(int(x) & 0xffffffff for x in b)
    bits.extend(int(x) for x in rng.integers(0, 2**32, 30000))
    out = np.array(vals, np.float32).view(np.uint32).tolist() + bits
    return np.array(out, np.uint64).astype(np.uint32).view(np.float32)


def float64_samples(rng, ml):
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e308, -1e-308,
            5e-324, 2.0**63, -2.0**63, 2.0**64, 2.0**63 - 1024, 2.0**31,
            -2.0**31 - 1, 255.5, -128.5, 65504.0, 65519.99, 65520.0,
            1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-8 + 2.0**-40,
            1 + 2.0**-24 + 2.0**-50, 3.0e38, 3.5e38]
    f = rng.standard_normal(8000) * 10.0 ** rng.integers(-40, 40, 8000)
    b = rng.integers(0, 2**63, 8000, dtype=np.int64).view(np.float64)
    # Halfway cases of float32 and float16 from float64, exact and nudged.
    base = rng.standard_normal(2000).astype(np.float32).astype(np.float64)
    ulp32 = np.spacing(base.astype(np.float32)).astype(np.float64)
    halves = np.concatenate([base + ulp32 / 2, base + ulp32 / 2 * (1 + 2**-30),
                             base + ulp32 / 2 * (1 - 2**-30)])
    h = rng.standard_normal(2000).astype(np.float16).astype(np.float64)
    ulp16 = np.spacing(h.astype(np.float16)).astype(np.float64)
    halves16 = np.concatenate([h + ulp16 / 2, h + ulp16 / 2 * (1 + 2**-30)])
    # Every narrower float's ties from float64, exact and nudged below
    # float32's precision: rounding through float32 to nearest would
    # land the nudged ones on the tie (ml_dtypes rounds once, from 0.7).
    narrow = [m * s for m in narrow_midpoints(rng, ml)
              for s in (1.0, 1 + 2.0**-30, 1 - 2.0**-30)]
    return np.concatenate([np.array(vals), f, b, -b, halves, halves16,
                           *narrow])


def int_samples(rng, dt):
    info = np.iinfo(dt)
    special = [0, 1, 2, 3, 127, 128, 255, 256, 32767, 32768, 65535, 65536,
               2**24 - 1, 2**24, 2**24 + 1, 2**24 + 3, 2**31 - 1, 2**31,
               2**32 - 1, 2**53 + 1, 2**62 + 2**38 + 1, 2**63 - 1,
               (1 << 40) + (1 << 32) + 1]
    # bfloat16's ties at every scale past float32's 24 bits, with and
    # without a low bit that float32 would drop.
    for k in range(24, info.bits):
        for low in (0, 1, 2 ** (k - 24)):
            special += [2**k + 2**(k - 8) + low, 2**k + 3 * 2**(k - 8) - low]
    vals = [v for v in special if info.min <= v <= info.max]
    vals += [-v for v in special if info.min <= -v <= info.max]
    vals += [info.min, info.max]
    r = rng.integers(info.min, info.max, 4000, dtype=dt, endpoint=True)
    sh = r >> rng.integers(0, info.bits - 1, 4000).astype(dt)
    return np.concatenate([np.array(vals, dt), r, sh.astype(dt)])


def flags_for(src, dst_dt, expected):
    flags = np.zeros(len(src), np.uint8)
    if src.dtype.kind == "f" or src.dtype.kind == "V":
        with np.errstate(all="ignore"):
            s = src.astype(np.float64)
        if dst_dt.kind in "iu":
            info = np.iinfo(dst_dt)
            with np.errstate(all="ignore"):
                t = np.trunc(s)
            bad = ~np.isfinite(s) | (t < info.min) | (t >= float(info.max) + 1)
            flags[bad] = 1
    if dst_dt.kind == "f" or dst_dt.kind == "V":
        with np.errstate(all="ignore"):
            e = expected.astype(np.float64)
        flags[np.isnan(e)] = 2
    return flags


def main():
    global NAMES
    NAMES = dtype_names(sys.argv[1])
    out = sys.argv[2]
    ml = ml_dtypes
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(20240611)
    dts = {n: dtype_of(ml, n) for n in NAMES}
    sources = {}
    for n in NAMES:
        dt = dts[n]
        if n == "bool":
            sources[n] = np.array([False, True])
        elif dt.itemsize <= 2 and dt.kind not in "iu":
            codes = np.arange(2 ** (8 * dt.itemsize), dtype=np.uint64)
            sources[n] = codes.astype(np.uint8 if dt.itemsize == 1
                                      else np.uint16).view(dt)
        elif n == "float32":
            sources[n] = float32_samples(rng, ml)
        elif n == "float64":
            sources[n] = float64_samples(rng, ml)
        elif dt.itemsize == 1:
            sources[n] = np.arange(256, dtype=np.uint8).view(dt)
        else:
            sources[n] = int_samples(rng, dt)
    with open(out, "wb") as f:
        f.write(b"NRTCVT1\0")
        for n, src in sources.items():
            src = np.ascontiguousarray(src)
            f.write(n.encode().ljust(16, b"\0"))
            f.write(struct.pack("<Q", len(src)))
            f.write(src.tobytes())
            for t in NAMES:
                with np.errstate(all="ignore"):
                    exp = src.astype(dts[t])
                f.write(t.encode().ljust(16, b"\0"))
                f.write(np.ascontiguousarray(exp).tobytes())
                f.write(flags_for(src, dts[t], exp).tobytes())


if __name__ == "__main__":
    main()
