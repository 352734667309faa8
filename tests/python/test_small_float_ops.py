"""Elementwise ops of the 8- and 16-bit floats, over every code.

neg and abs of float16, bfloat16 and the fp8 formats are sign-bit
operations on the stored code (flip, clear): the same bits as NumPy
(float16) and ml_dtypes (bfloat16, fp8) for every code, NaN, infinities
and zeros included, contiguous or strided.  float16 exp, log, tanh, sin,
cos, expm1, log1p and cbrt are computed in float32 (the operand converted with F16C where the CPU
has it) and rounded once to float16: within 1 float16 ulp of the exact
value (float64 NumPy rounded to float16), NaN exactly where it is NaN.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from support import run_compiled

FP8 = [ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
       ml_dtypes.float8_e3m4]
SIGN_OPS = {"neg": np.negative, "abs": np.abs}


def every_code(dtype):
    """Every bit pattern of `dtype`, as a square array."""
    itemsize = np.dtype(dtype).itemsize
    codes = np.arange(256 ** itemsize, dtype=f"u{itemsize}").view(dtype)
    side = 16 if itemsize == 1 else 256
    return codes.reshape(side, side)


@pytest.mark.parametrize("op", SIGN_OPS, ids=str)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, *FP8],
                         ids=lambda d: np.dtype(d).name)
def test_sign_ops_every_code_bit_exact(tmp_path, dtype, op):
    a = every_code(dtype)
    fn = SIGN_OPS[op]
    u = f"u{a.itemsize}"
    got = run_compiled(tmp_path, fn, a)
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got.view(u), fn(a).view(u), strict=True)
    # Strided: the transpose is read with a stride along the run.
    got = run_compiled(tmp_path, lambda x: fn(x.T), a)
    np.testing.assert_array_equal(got.view(u), fn(a.T).view(u), strict=True)


def test_sign_ops_fp8_nan_and_zero_codes(tmp_path):
    """The codes that a float32 round trip would change: e5m2's NaN
    payloads keep theirs, -0 and e4m3fn's -NaN are the sign bit."""
    e5m2 = np.array([0x7D, 0x7E, 0x7F, 0xFD, 0x00, 0x80], np.uint8)
    got = run_compiled(tmp_path, np.negative, e5m2.view(ml_dtypes.float8_e5m2))
    np.testing.assert_array_equal(
        got.view(np.uint8), np.array([0xFD, 0xFE, 0xFF, 0x7D, 0x80, 0x00], np.uint8))
    fn = np.array([0x7F, 0xFF, 0x80], np.uint8).view(ml_dtypes.float8_e4m3fn)
    got = run_compiled(tmp_path, np.abs, fn)
    np.testing.assert_array_equal(got.view(np.uint8),
                                  np.array([0x7F, 0x7F, 0x00], np.uint8))


def ordered16(h: np.ndarray) -> np.ndarray:
    """float16 bit patterns as integers in the order of the values, so that
    a difference of 1 is 1 ulp (-0 and +0 are both 0)."""
    i = h.view(np.int16).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFF), i)


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "sin", "cos", "expm1", "log1p", "cbrt"])
def test_float16_math_every_code_within_1_ulp(tmp_path, op):
    fn = getattr(np, op)
    a = every_code(np.float16)
    got = run_compiled(tmp_path, fn, a)
    with np.errstate(all="ignore"):
        want = fn(a.astype(np.float64)).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    g, w = got[ok], want[ok]
    # Infinities and zeros exactly, signs included.
    exact = ~np.isfinite(w) | (w == 0)
    np.testing.assert_array_equal(g[exact].view(np.uint16), w[exact].view(np.uint16))
    diff = np.abs(ordered16(g) - ordered16(w))
    assert diff.max() <= 1, (g[diff > 1][:5], w[diff > 1][:5])
    # Almost every code is the correctly rounded float16 (cbrt's float32
    # result, itself nearly always correctly rounded, is rounded again).
    assert np.count_nonzero(diff) <= (24 if op == "cbrt" else 16)


@pytest.mark.parametrize("dtype", FP8, ids=lambda d: np.dtype(d).name)
def test_fp8_to_float32_every_code_as_ml_dtypes(tmp_path, dtype):
    """Every fp8 code widens to ml_dtypes' float32 bits: a NaN code is the
    quiet NaN of its sign (a signalling one, payload kept, made pow(1, NaN)
    NaN where ml_dtypes gives 1)."""
    a = every_code(dtype)
    got = run_compiled(tmp_path, lambda x: x.astype(np.float32), a)
    want = a.astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32),
                                  strict=True)
    # In the emulator's own arithmetic (fp8 pow goes through float32): 1 to
    # a NaN power is 1, NaN to the power 0 is 1, as ml_dtypes computes them.
    nan_codes = a.reshape(-1)[np.isnan(a.reshape(-1).astype(np.float32))]
    ones = np.ones_like(nan_codes)
    got = run_compiled(tmp_path, np.power, ones, nan_codes)
    np.testing.assert_array_equal(got.astype(np.float32), np.power(ones, nan_codes)
                                  .astype(np.float32))
    assert (got.astype(np.float32) == 1).all()
    got = run_compiled(tmp_path, np.power, nan_codes, np.zeros_like(nan_codes))
    assert (got.astype(np.float32) == 1).all()
