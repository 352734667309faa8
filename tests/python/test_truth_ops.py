"""Truth values: logical ops and is_finite on every dtype that takes them,
as NumPy gives them.

Logical ops whose operands are of one 4- or 8-byte dtype and of the out's
shape test each element's truth where they read it (any bit but a float's
sign: -0.0 is false, NaN true, and an integer with only its top bit set is
true); others convert each operand to bool first.  is_finite of an integer
or bool operand is all true without reading it.  Both paths, and the pool's
pieces of a big out, give NumPy's result.
"""

from __future__ import annotations

import numpy as np
import pytest

from support import run_compiled

RNG = np.random.default_rng(20)

LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor}
WIDE = [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]
INTEGERS = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32,
            np.uint32, np.int64, np.uint64]


def truth_values(dtype, shape) -> np.ndarray:
    """Zeros, ones and the values whose truth is easy to get wrong, mixed."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        special = np.array([0.0, -0.0, 1.0, -1.0, np.nan, -np.nan, np.inf,
                            -np.inf, np.finfo(dt).smallest_subnormal,
                            -np.finfo(dt).smallest_subnormal], dt)
    else:
        info, mask = np.iinfo(dt), (1 << (dt.itemsize * 8)) - 1
        # as bit patterns: the top bit alone is the minimum of a signed type
        special = np.array([v & mask for v in (0, 1, info.max, info.min, 0, 2,
                                               1 << (dt.itemsize * 8 - 1))],
                           f"u{dt.itemsize}").view(dt)
    return special[RNG.integers(0, len(special), shape)]


@pytest.mark.parametrize("op", LOGICAL, ids=str)
@pytest.mark.parametrize("dtype", WIDE, ids=lambda d: np.dtype(d).name)
def test_logical_of_one_wide_dtype(tmp_path, dtype, op):
    fn = LOGICAL[op]
    # 64 x 64: one call; 7 x 13: a tail shorter than any vector; 600 x 512:
    # pieces on the pool
    for shape in [(64, 64), (7, 13), (600, 512)]:
        a, b = truth_values(dtype, shape), truth_values(dtype, shape)
        got = run_compiled(tmp_path, fn, a, b)
        np.testing.assert_array_equal(got, fn(a, b), strict=True)


@pytest.mark.parametrize("dtype", WIDE, ids=lambda d: np.dtype(d).name)
def test_logical_not_of_wide_dtypes(tmp_path, dtype):
    for shape in [(64, 64), (5, 3), (600, 512)]:
        a = truth_values(dtype, shape)
        got = run_compiled(tmp_path, np.logical_not, a)
        np.testing.assert_array_equal(got, np.logical_not(a), strict=True)


@pytest.mark.parametrize("op", LOGICAL, ids=str)
def test_logical_broadcast_and_mixed_dtypes(tmp_path, op):
    """Operands of other shapes or dtypes than each other: converted first."""
    fn = LOGICAL[op]
    a = truth_values(np.int32, (64, 64))
    col = truth_values(np.int32, (64, 1))
    f = truth_values(np.float32, (64, 64))
    d = truth_values(np.float64, (64,))
    for x, y in [(a, col), (col, a), (a, f), (f, d), (d, f)]:
        got = run_compiled(tmp_path, fn, x, y)
        np.testing.assert_array_equal(got, fn(x, y), strict=True)


@pytest.mark.parametrize("dtype", INTEGERS, ids=lambda d: np.dtype(d).name)
def test_is_finite_of_integers_is_all_true(tmp_path, dtype):
    # 2048 x 128: pieces on the pool; a broadcast operand
    for shape in [(64, 64), (3, 5), (2048, 128)]:
        a = truth_values(dtype, shape) if dtype != np.bool_ else (
            RNG.integers(0, 2, shape).astype(np.bool_))
        got = run_compiled(tmp_path, np.isfinite, a)
        np.testing.assert_array_equal(got, np.isfinite(a), strict=True)
    row = truth_values(np.int32, (1, 300))
    got = run_compiled(tmp_path, lambda r: np.isfinite(np.broadcast_to(r, (4, 300))),
                       row)
    np.testing.assert_array_equal(got, np.ones((4, 300), np.bool_), strict=True)
