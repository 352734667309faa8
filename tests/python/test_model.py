"""NrtpyModel end to end on the emulator, with NEFFs from nrtpy.neff.compile.

Every kernel is also run by NumPy on the same data: the emulator must give
NumPy's answer (bit for bit where NumPy is exact, within a tight tolerance
for transcendental functions and reordered sums).  Then: the model's I/O
metadata, input/output validation, load and execution errors, benchmark,
traces, timeouts, cores and threads, and the low-level API.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time

import ml_dtypes
import numpy as np
import pytest

import nrtpy
import nrtpy.neff
from nrtpy import (
    BenchmarkResult,
    ModelTensorInfo,
    NrtError,
    NrtModel,
    NrtpyError,
    NrtpyModel,
    NrtpyTensor,
    SystemTraceSession,
    TensorMetadata,
)
from nrtpy.neff import _container
from support import child_env, neff_members, quiet_reset, run_python

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3)
E4M3FN = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
E3M4 = np.dtype(ml_dtypes.float8_e3m4)
ML_DTYPES = {BF16, E4M3, E4M3FN, E5M2, E3M4}
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16]

_counter = itertools.count()


def rand(shape, dtype, seed=0, low=None, high=None):
    """Random data of `dtype`: normal floats, ints over a small range (or
    [low, high)), booleans."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = max(info.min, -100) if low is None else low
        hi = min(info.max, 100) if high is None else high
        return rng.integers(lo, hi, size=shape, endpoint=False).astype(dtype)
    if low is not None:
        return rng.uniform(low, high, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


def load(tmp_path, fn, *examples, core_id=0, **compile_kw):
    path = nrtpy.neff.compile(fn, *examples,
                              path=tmp_path / f"k{next(_counter)}.neff", **compile_kw)
    return NrtpyModel.load_from_neff(path, core_id=core_id)


def execute(model, *arrays, core_id=0):
    """Run `model` on host arrays (in input order); host outputs in order."""
    inputs = {name: NrtpyTensor.from_numpy(a, name=name, core_id=core_id)
              for name, a in zip(model.input_tensors_info, arrays)}
    outputs = model(inputs=inputs)
    assert list(outputs) == list(model.output_tensors_info)
    return [t.numpy() for t in outputs.values()]


def run(tmp_path, fn, *arrays, **kw):
    """Compile `fn` for `arrays`, run it on the emulator: host outputs."""
    return execute(load(tmp_path, fn, *arrays, **kw), *arrays)


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def check(tmp_path, fn, *arrays, rtol=None, atol=0.0):
    """The emulator's results of `fn` equal NumPy's: same dtypes and shapes,
    equal values (NaN == NaN), or close with `rtol`/`atol` when given."""
    got = run(tmp_path, fn, *arrays)
    want = [np.asarray(w) for w in as_tuple(fn(*arrays))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        if g.dtype in ML_DTYPES:  # compare as float32 (NaN == NaN)
            g, w = g.astype(np.float32), w.astype(np.float32)
        if rtol is None:
            np.testing.assert_array_equal(g, w, strict=True)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=rtol, atol=atol)
    return got


# =========================================================== elementwise


EXACT_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "where": lambda a, b: np.where(a > b, a, b),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", EXACT_BINARY)
def test_exact_binary_floats(tmp_path, op, dtype):
    a = rand((4, 33), dtype, seed=1)
    b = rand((4, 33), dtype, seed=2)
    b[0, :5] = a[0, :5]  # some ties for the comparisons
    check(tmp_path, EXACT_BINARY[op], a, b)


EXACT_UNARY = {
    "neg": lambda x: -x,
    "abs": np.abs,
    "square": np.square,
    "floor": np.floor,
    "ceil": np.ceil,
    "sign": np.sign,
    "relu": nrtpy.neff.relu,
    "positive": lambda x: +x,
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", EXACT_UNARY)
def test_exact_unary_floats(tmp_path, op, dtype):
    x = rand((5, 21), dtype, seed=3)
    x[0, 0] = 0
    check(tmp_path, EXACT_UNARY[op], x)


APPROX_UNARY = {
    "exp": (np.exp, None),
    "log": (np.log, (0.01, 50)),
    "sqrt": (np.sqrt, (0, 100)),
    "tanh": (np.tanh, None),
    "sin": (np.sin, None),
    "cos": (np.cos, None),
    "reciprocal": (np.reciprocal, (0.5, 8)),
    "sigmoid": (nrtpy.neff.sigmoid, None),
    "gelu": (nrtpy.neff.gelu, None),
    "rsqrt": (nrtpy.neff.rsqrt, (0.01, 100)),
    "pow": (lambda x: x ** 3, None),
}
RTOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 1e-3, BF16: 8e-3}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", APPROX_UNARY)
def test_approx_unary_floats(tmp_path, op, dtype):
    fn, bounds = APPROX_UNARY[op]
    low, high = bounds if bounds else (None, None)
    x = rand((3, 40), dtype, seed=4, low=low, high=high)
    # NumPy's gelu, the formula as written, cancels (1 + tanh(..) -> 0) for
    # negative x: its absolute error is ~ eps * |x| (the emulator's is not:
    # test_math_vec.py's test_float32_gelu_does_not_cancel)
    atol = RTOL[dtype] * (1.0 if op == "gelu" else 1e-2)
    check(tmp_path, fn, x, rtol=RTOL[dtype], atol=atol)


def test_float64(tmp_path):
    a, b = rand((3, 7), np.float64, seed=5), rand((3, 7), np.float64, seed=6)
    check(tmp_path, lambda a, b: (a + b, a * b, a / b, np.maximum(a, b)), a, b)
    check(tmp_path, lambda a: (np.exp(a), np.tanh(a)), a, rtol=1e-13)


@np.errstate(invalid="ignore", divide="ignore")
def test_nan_and_inf(tmp_path):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], np.float32)
    y = np.array([1.0, np.nan, np.inf, -0.0, 0.0, np.inf, np.nan], np.float32)
    check(tmp_path, lambda x, y: (x + y, x * y, np.maximum(x, y), np.minimum(x, y),
                                  x == y, x < y, np.abs(x), -x, x / y), x, y)


INT_DTYPES = [np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint8)]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_int_ops(tmp_path, dtype):
    a = rand((6, 10), dtype, seed=7)
    b = rand((6, 10), dtype, seed=8)
    b[b == 0] = 3  # no division by zero
    check(tmp_path, lambda a, b: (a + b, a - b, a * b, a // b, a % b,
                                  np.maximum(a, b), np.minimum(a, b), a < b,
                                  a == b, -a, np.abs(a), np.where(a > b, a, b),
                                  a / b, a * 3 + 1), a, b)


def test_int_wraparound(tmp_path):
    i32 = np.array([2**31 - 1, -2**31, 123456789, -7], np.int32)
    i64 = np.array([2**63 - 1, -2**63, 3037000500, -9], np.int64)
    u8 = np.array([250, 0, 128, 255], np.uint8)
    check(tmp_path, lambda a, b, c: (a + a, a * a, a - 1, b + b, b * b, c + c,
                                     c - 200, c * c, -c), i32, i64, u8)


def test_int_floor_division_and_mod_signs(tmp_path):
    a = np.array([7, -7, 7, -7, 0, 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, -5], np.int32)
    check(tmp_path, lambda a, b: (a // b, a % b), a, b)


@np.errstate(divide="ignore", invalid="ignore", over="ignore")
def test_integer_division_edge_cases(tmp_path):
    # NumPy's answers, without a SIGFPE: x // 0 == x % 0 == 0, MIN // -1 wraps
    a = np.array([7, -7, 0, -2**31, -2**31, 5], np.int32)
    b = np.array([0, 0, 0, -1, 1, -1], np.int32)
    check(tmp_path, lambda a, b: (a // b, a % b), a, b)
    c = np.array([-2**63, 9], np.int64)
    d = np.array([-1, 0], np.int64)
    check(tmp_path, lambda c, d: (c // d, c % d), c, d)


@np.errstate(divide="ignore", invalid="ignore", over="ignore")
def test_float_edge_cases(tmp_path):
    f = np.array([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 3, np.nan], np.float32)
    g = np.array([2, 2, -2, -2, 3, 3, 0, 1], np.float32)
    check(tmp_path, lambda f, g: (f % g, f // g, f ** g, np.sqrt(f), np.log(f),
                                  np.sign(f), np.floor(f), f.astype(bool)), f, g)
    h = np.array([12, -12, 0.5, 11.1], np.float16)
    check(tmp_path, lambda h: (np.exp(h), h * h * h * h), h)  # overflow to inf


@np.errstate(invalid="ignore")
def test_nan_in_reductions(tmp_path):
    # NaN propagates through max/min/sum; argmax/argmin find the first NaN
    x = np.array([[np.nan, 1, -np.inf, 3, np.nan], [1, 2, 3, 0, -1]], np.float32)
    check(tmp_path, lambda x: (x.max(), x.min(axis=1), x.argmax(axis=1), x.argmin(),
                               x.sum(axis=1)), x)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16, np.uint32, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_other_int_dtypes(tmp_path, dtype):
    a = (np.arange(12) * 37 % 251).astype(dtype).reshape(3, 4)
    b = (np.arange(12) % 5 + 1).astype(dtype).reshape(3, 4)
    check(tmp_path, lambda a, b: (a + b, a - b, a * b, a // b, a % b, a.sum(axis=0),
                                  a.max(), a.astype(np.float32), a.mean(), a > b), a, b)


def test_bool_ops(tmp_path):
    p, q = rand((4, 9), np.bool_, seed=9), rand((4, 9), np.bool_, seed=10)
    check(tmp_path, lambda p, q: (p & q, p | q, p ^ q, ~p, np.logical_and(p, q),
                                  np.logical_or(p, q), np.logical_xor(p, q),
                                  np.logical_not(p), p == q, p + q, p | True,
                                  p & False, q ^ True,
                                  p.astype(np.float32)), p, q)


def test_mixed_dtype_promotion(tmp_path):
    h = rand((3, 5), np.float16, seed=11)
    f = rand((3, 5), np.float32, seed=12)
    i = rand((3, 5), np.int32, seed=13)
    u = rand((3, 5), np.uint8, seed=14)
    check(tmp_path, lambda h, f, i, u: (h + f, h * i, i + u, u * 2, h * 2.5, i / 2,
                                        f - i), h, f, i, u)


# =========================================================== casts


CASTS = [
    (np.float32, np.int32), (np.float32, np.int64), (np.float32, np.float16),
    (np.float32, BF16), (np.float32, np.float64), (np.float32, np.bool_),
    (np.float16, np.float32), (BF16, np.float32), (BF16, np.float16),
    (np.int32, np.float32), (np.int64, np.float16), (np.int64, np.int32),
    (np.int32, np.uint8), (np.bool_, np.float32), (np.bool_, np.int32),
    (np.uint8, BF16), (np.float64, np.float32),
]


@pytest.mark.parametrize("src, dst", CASTS, ids=lambda d: np.dtype(d).name)
def test_cast(tmp_path, src, dst):
    x = rand((4, 25), src, seed=15)
    if np.dtype(src).kind == "f":
        x = (x.astype(np.float64) * 40).astype(src)  # beyond uint8/fp8 precision
        if np.dtype(dst).kind in "iub":
            x.reshape(-1)[:3] = [0, -0.0, 0.5]
        if np.dtype(dst) == np.uint8:
            x = np.abs(x)
    check(tmp_path, lambda x: x.astype(dst), x)


def test_cast_truncates_toward_zero(tmp_path):
    x = np.array([1.5, -1.5, 2.99, -2.99, 0.4, -0.4, 1e9, -1e9], np.float32)
    (got,) = run(tmp_path, lambda x: x.astype(np.int32), x)
    assert got.tolist() == [1, -1, 2, -2, 0, 0, 1000000000, -1000000000]


@pytest.mark.parametrize("fp8", [E4M3, E4M3FN, E5M2], ids=str)
def test_fp8_casts(tmp_path, fp8):
    x = rand((8, 16), np.float32, seed=16) * 20
    x.reshape(-1)[:6] = [0.0, -0.0, 1e-3, 1e-9, 0.3333, -7.77]
    # f32 -> fp8 (round to nearest even), fp8 -> f32 (exact), fp8 -> bf16
    check(tmp_path, lambda x: x.astype(fp8), x)
    y = x.astype(fp8)
    check(tmp_path, lambda y: (y.astype(np.float32), y.astype(BF16),
                               y.astype(np.float16)), y)


@pytest.mark.parametrize("fp8", [E4M3, E5M2], ids=str)
def test_fp8_arithmetic(tmp_path, fp8):
    # 8-bit floats compute in float32 and round once, as ml_dtypes does
    a = (rand((4, 16), np.float32, seed=17)).astype(fp8)
    b = (rand((4, 16), np.float32, seed=18)).astype(fp8)
    check(tmp_path, lambda a, b: (a + b, a * b, np.maximum(a, b), -a, a > b), a, b)


def test_fp8_overflow_and_specials(tmp_path):
    x = np.array([1e6, -1e6, np.inf, -np.inf, np.nan, 448, 464, 57344, 61440],
                 np.float32)
    for fp8 in (E4M3, E4M3FN, E5M2):
        check(tmp_path, lambda x: x.astype(fp8), x)


# =========================================================== broadcasting


def test_broadcast_scalar_input(tmp_path):
    s = np.float32(2.5)
    x = rand((3, 4), np.float32, seed=19)
    check(tmp_path, lambda s, x: (s * x, x - s, s + s), s, x)


def test_broadcast_row_column_batch(tmp_path):
    m = rand((3, 4), np.float32, seed=20)
    row = rand((1, 4), np.float32, seed=21)
    col = rand((3, 1), np.float32, seed=22)
    vec = rand((4,), np.float32, seed=23)
    batch = rand((2, 1, 4), np.float32, seed=24)
    check(tmp_path, lambda m, row, col, vec, batch: (
        m + row, m * col, row - col, m / vec, batch + m, batch * col, col + vec),
        m, row, col, vec, batch)


def test_broadcast_middle_dims_and_8d(tmp_path):
    a = np.arange(20, dtype=np.float32).reshape(4, 1, 5)
    b = np.arange(3, dtype=np.float32).reshape(1, 3, 1)
    c = np.array([True, False, True, True, False])
    check(tmp_path, lambda a, b, c: (a + b, np.where(a > 5, a, b), np.where(c, a, -1.0),
                                     a * c), a, b, c)
    x = np.arange(2 * 3 * 1 * 2 * 1 * 2 * 3 * 2, dtype=np.int32).reshape(2, 3, 1, 2, 1, 2, 3, 2)
    check(tmp_path, lambda x: (x.sum(axis=(1, 5)), x.transpose(7, 6, 5, 4, 3, 2, 1, 0),
                               x[:, ::-1, :, 1], x + x[0], x.max(axis=-1, keepdims=True)), x)


def test_larger_arrays(tmp_path):
    # sizes off the SIMD widths and big enough for any blocking/threading
    rng = np.random.default_rng(62)
    a = rng.standard_normal((257, 1031)).astype(np.float32)
    b = rng.standard_normal((1031,)).astype(np.float32)
    check(tmp_path, lambda a, b: (a + b, a * a, np.maximum(a, 0), a.T, a.max(axis=0),
                                  a.argmax(axis=1), a[::2, 5:900:3],
                                  np.concatenate([a, a], axis=1)[:, 1000:1100],
                                  (a > b).astype(np.int8)), a, b)
    check(tmp_path, lambda a: (np.exp(a), a.sum(axis=0), a.sum(axis=1), a.mean(),
                               np.tanh(a)), a, rtol=1e-5, atol=1e-4)
    m = rng.standard_normal((300, 517)).astype(np.float32)
    n = rng.standard_normal((517, 203)).astype(np.float32)
    check(tmp_path, np.matmul, m, n, rtol=1e-4, atol=1e-3)
    bm = rng.standard_normal((3, 1, 65, 33)).astype(np.float16)
    bn = rng.standard_normal((4, 33, 17)).astype(np.float16)
    (got,) = run(tmp_path, np.matmul, bm, bn)
    want = (bm.astype(np.float32) @ bn.astype(np.float32)).astype(np.float16)
    assert got.dtype == np.float16 and got.shape == (3, 4, 65, 17)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                               rtol=2e-3, atol=2e-2)


def test_broadcast_to_and_python_scalars(tmp_path):
    v = rand((4,), np.int32, seed=25)
    check(tmp_path, lambda v: (np.broadcast_to(v, (3, 4)),
                               np.broadcast_to(v.reshape(4, 1), (2, 4, 5)),
                               v + 1, 2 * v, v > 0, np.where(v > 0, v, 0)), v)


def test_constants(tmp_path):
    w = rand((5, 3), np.float32, seed=26)
    b = rand((3,), np.float32, seed=27)
    idx = np.array([4, 0, -1, 2], np.int64)

    def layer(x):
        return np.tanh(x @ w + b), np.take(w, idx, axis=0), x * np.float32(0.5)

    check(tmp_path, layer, rand((2, 5), np.float32, seed=28), rtol=2e-6, atol=1e-6)



@pytest.mark.parametrize("dtype", [ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn,
                                   ml_dtypes.float8_e4m3, ml_dtypes.float8_e3m4])
def test_fp8_constants(tmp_path, dtype):
    # ml_dtypes saves float8_e5m2 as "<f1" and the others as "|V1": the
    # emulator reads both, taking the format from def.json.
    c = np.array([0.5, -1.5, 2.0, 3.0], dtype)
    check(tmp_path, lambda x: x * c, np.array([1.0, 2.0, -0.25, 0.0], dtype))

# =========================================================== shape ops


def test_transpose_reshape(tmp_path):
    x = rand((2, 3, 4), np.float32, seed=29)
    check(tmp_path, lambda x: (x.T, np.transpose(x, (2, 0, 1)), x.transpose(0, 2, 1),
                               x.reshape(6, 4), x.reshape(-1), np.reshape(x, (4, 1, 6)),
                               x.reshape(3, 8).T), x)


def test_slices(tmp_path):
    x = rand((5, 6, 7), np.int64, seed=30)
    check(tmp_path, lambda x: (x[1:4], x[::-1], x[:, ::2, 1:-1], x[..., -1], x[2],
                               x[-1, 3], x[::3, ::-2, 5:1:-2], x[:, 1:2],
                               x[4, 5, 6]), x)


def test_newaxis(tmp_path):
    x = rand((3, 4), np.float32, seed=63)
    check(tmp_path, lambda x: (x[:, None, :] - x[None, :, :], x[None, 1, ..., None, ::2],
                               x[..., None] * x[:, None]), x)


def test_bool_masks(tmp_path):
    x = rand((5, 6), np.float32, seed=64)
    check(tmp_path, lambda x: (np.where((x > -1) & (x < 1), x, 0.0), ~(x > 0) | (x < -2),
                               ((x > 0) ^ (x > 1)).sum()), x)


def test_concatenate(tmp_path):
    a = rand((2, 3), np.float32, seed=31)
    b = rand((4, 3), np.float32, seed=32)
    c = rand((2, 5), np.int32, seed=33)
    check(tmp_path, lambda a, b, c: (np.concatenate([a, b]), np.concatenate([a, a, a], axis=1),
                                     np.concatenate([a, c], axis=-1),
                                     np.concatenate((b,), axis=0)), a, b, c)


def test_take(tmp_path):
    x = rand((6, 4, 3), np.float16, seed=34)
    idx = np.array([[5, 0], [-6, -1]], np.int32)
    check(tmp_path, lambda x: (np.take(x, idx, axis=0), np.take(x, [3, 1], axis=1),
                               np.take(x, np.array([[2, 0], [-3, -1]]), axis=-1),
                               np.take(x, np.array([0, 71]))), x)


def test_take_with_traced_indices(tmp_path):
    x = rand((10, 8), np.float32, seed=35)
    i = np.array([9, 0, -10, 3, 3], np.int64)
    check(tmp_path, lambda x, i: (np.take(x, i, axis=0), np.take(x, i[:3] % 8, axis=1)), x, i)


# =========================================================== reductions


REDUCE_AXES = [None, 0, 1, -1, (0, 2), (-3, -1), (0, 1, 2)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", REDUCE_AXES, ids=str)
def test_reductions_float32(tmp_path, axis, keepdims):
    x = rand((3, 4, 5), np.float32, seed=36)
    p = rand((3, 4, 5), np.float32, seed=37, low=0.7, high=1.3)
    check(tmp_path, lambda x: (x.max(axis=axis, keepdims=keepdims),
                               np.min(x, axis=axis, keepdims=keepdims)), x)
    check(tmp_path, lambda x, p: (x.sum(axis=axis, keepdims=keepdims),
                                  np.mean(x, axis=axis, keepdims=keepdims),
                                  p.prod(axis=axis, keepdims=keepdims)),
          x, p, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=str)
def test_reductions_narrow_floats(tmp_path, dtype):
    x = rand((8, 64), dtype, seed=38)
    check(tmp_path, lambda x: (x.max(axis=1), x.min(axis=0)), x)
    # sums accumulate in float32 and round once (ml_dtypes' own bfloat16 sum
    # rounds at every step: it is not the reference)
    got = run(tmp_path, lambda x: (x.sum(axis=1), x.mean(axis=0, keepdims=True), x.sum()), x)
    f = x.astype(np.float32)
    want = [f.sum(axis=1), f.mean(axis=0, keepdims=True), f.sum()]
    for g, w in zip(got, want):
        assert g.dtype == np.dtype(dtype) and g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float32), w.astype(dtype).astype(np.float32),
                                   rtol=RTOL[np.dtype(dtype)], atol=1e-3)


@pytest.mark.parametrize("dtype", INT_DTYPES + [np.dtype(np.bool_)], ids=str)
def test_reductions_ints(tmp_path, dtype):
    x = rand((4, 6), dtype, seed=39, **({"low": 0, "high": 4} if dtype.kind == "u" else {}))
    check(tmp_path, lambda x: (x.sum(), x.sum(axis=0), x.max(axis=1), x.min(),
                               x.prod(axis=1), x.mean(axis=-1)), x)


def test_int32_row_sums_prods_and_means_are_numpys(tmp_path):
    # Rows of int32 summed and multiplied into int64 as they are read, and
    # means from the int64 sums of rows up to 2^22 long (exact): bit for
    # bit NumPy's, at the extremes of int32 too; a whole array of more than
    # 2^22 elements takes the float64 sum.
    rng = np.random.default_rng(43)
    x = rng.integers(-2**31, 2**31, (300, 3001), dtype=np.int64).astype(np.int32)
    x[0] = np.iinfo(np.int32).max
    x[1] = np.iinfo(np.int32).min
    x[2, ::2] = -7
    check(tmp_path, lambda x: (x.sum(axis=1), x.prod(axis=1), x.mean(axis=1), x.sum(),
                               x.mean()), x)
    big = rng.integers(-2**31, 2**31, (2100, 2100), dtype=np.int64).astype(np.int32)
    check(tmp_path, lambda x: (x.mean(), x.sum(), x.mean(axis=1)), big)


def test_int_sum_wraps(tmp_path):
    x = np.full((4,), 2**62, np.int64)
    check(tmp_path, lambda x: x.sum(), x)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, BF16], ids=str)
def test_argmax_argmin(tmp_path, dtype):
    x = rand((4, 5, 6), dtype, seed=40)
    x[1, 2, :] = x[1, 2, 0]  # ties: the first index wins
    check(tmp_path, lambda x: (x.argmax(), np.argmin(x), x.argmax(axis=0),
                               np.argmax(x, axis=-1), x.argmin(axis=1, keepdims=True),
                               np.argmax(x, axis=2, keepdims=True)), x)


def test_argmax_argmin_of_long_int32_rows(tmp_path):
    # rows past the short-row search (256), of few values, so that many of
    # the one-pass loop's 32 lanes end on the extreme: the first index wins
    g = np.random.default_rng(50)
    x = g.integers(0, 3, (40, 1003)).astype(np.int32)
    x[0, :] = 7
    x[1, [700, 40]] = np.iinfo(np.int32).max
    x[2, :] = np.iinfo(np.int32).min
    x[2, [1002]] = np.iinfo(np.int32).min + 1
    x[3, [31, 32, 33]] = [-9, 9, 9]  # ties across the lanes' boundary
    got = run(tmp_path, lambda x: (np.argmax(x, axis=1), np.argmin(x, axis=1)), x)
    np.testing.assert_array_equal(got[0], np.argmax(x, axis=1))
    np.testing.assert_array_equal(got[1], np.argmin(x, axis=1))


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16], ids=str)
def test_argmax_argmin_of_rows_by_codes(tmp_path, dtype):
    # every non-NaN code, shuffled into rows of 1000 (a tail after 32-code
    # vectors); then rows whose answer turns on NaNs (the first wins, of
    # either sign), on -0 == +0 (the first of them), on ties, on infinities
    codes = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    finite = codes[~np.isnan(codes.astype(np.float32))]
    g = np.random.default_rng(49)
    rows = np.resize(g.permutation(finite), 66 * 1000).reshape(66, 1000)
    nan = np.array(np.nan, dtype)
    special = np.full((12, 1000), -1.0, np.float32).astype(dtype)
    special[0, [5, 700]] = nan
    special[1, [999]] = -nan
    special[2, [0]] = nan
    special[3, [3, 4]] = [-0.0, 0.0]  # the rest negative: max is a zero
    special[4, [4, 3]] = [-0.0, 0.0]
    special[5, :] = 0.0
    special[5, [10]] = -0.0
    special[6, :] = -np.inf
    special[7, [17, 900]] = np.inf
    special[8, [31, 32]] = 7.0  # a tie across the vector boundary
    special[9, ::7] = -5.0
    special[10, [998]] = -np.inf
    special[11, [640, 641]] = [nan, -np.inf]
    x = np.concatenate([rows, special])
    want = x.astype(np.float32)
    got = run(tmp_path, lambda x: (np.argmax(x, axis=1), np.argmin(x, axis=1)), x)
    np.testing.assert_array_equal(got[0], np.argmax(want, axis=1))
    np.testing.assert_array_equal(got[1], np.argmin(want, axis=1))
    for n in (1, 31, 33, 64):  # short rows, and whole vectors only
        y = np.ascontiguousarray(x[:, :n])
        got = run(tmp_path, lambda y: (np.argmax(y, axis=-1), np.argmin(y, axis=-1)), y)
        np.testing.assert_array_equal(got[0], np.argmax(y.astype(np.float32), axis=-1))
        np.testing.assert_array_equal(got[1], np.argmin(y.astype(np.float32), axis=-1))


def test_softmax(tmp_path):
    x = rand((4, 7, 9), np.float32, seed=41)
    check(tmp_path, lambda x: (nrtpy.neff.softmax(x), nrtpy.neff.softmax(x, axis=1),
                               nrtpy.neff.softmax(x, axis=0)), x, rtol=2e-6, atol=1e-7)
    h = x.astype(np.float16)
    check(tmp_path, lambda h: nrtpy.neff.softmax(h, axis=-1), h, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=str)
def test_softmax_shared_among_threads(tmp_path, dtype):
    # Past 1 MiB the slabs of a softmax run on the worker pool, each task
    # copying its own; integers compute in float64 (vectorised exp).
    x = rand((5, 301, 700), np.float32, seed=42) * 8
    x = x.astype(dtype) if np.dtype(dtype).kind == "f" else (x * 4).astype(dtype)
    # (float32: e^-80 and below are subnormal, where NumPy's exp and ours
    # may round apart by the least subnormal)
    rtol, atol = (2e-6, 1e-38) if dtype == np.float32 else (1e-13, 1e-300)
    check(tmp_path, lambda x: (nrtpy.neff.softmax(x, axis=-1), nrtpy.neff.softmax(x, axis=1),
                               nrtpy.neff.softmax(x, axis=0)), x, rtol=rtol, atol=atol)


# =========================================================== matmul


MATMUL_SHAPES = [
    ((7,), (7,)), ((7,), (7, 3)), ((4, 7), (7,)), ((4, 7), (7, 3)),
    ((2, 4, 7), (2, 7, 3)), ((2, 1, 4, 7), (5, 7, 3)), ((4, 7), (3, 7, 2)),
    ((1, 64), (64, 1)),
]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES, ids=str)
def test_matmul_float32(tmp_path, sa, sb):
    a, b = rand(sa, np.float32, seed=42), rand(sb, np.float32, seed=43)
    check(tmp_path, np.matmul, a, b, rtol=1e-5, atol=1e-5)


def test_matmul_operator_dot_and_ints(tmp_path):
    a, b = rand((3, 5), np.int32, seed=44), rand((5, 2), np.int32, seed=45)
    check(tmp_path, lambda a, b: (a @ b, np.dot(a, b), a @ b.astype(np.int64)), a, b)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8], ids=str)
def test_integer_matmul_wraps_as_numpy(tmp_path, dtype):
    # full-range values (the products wrap), a batch, and row lengths that
    # leave a tail after the vectors of the multiversioned kernel
    info = np.iinfo(dtype)
    g = np.random.default_rng(48)
    a = g.integers(info.min, info.max, (3, 37, 67), dtype=dtype, endpoint=True)
    b = g.integers(info.min, info.max, (3, 67, 29), dtype=dtype, endpoint=True)
    with np.errstate(over="ignore"):
        check(tmp_path, np.matmul, a, b)


def test_matmul_mixed_dtypes(tmp_path):
    h, f = rand((3, 5), np.float16, seed=46), rand((5, 2), np.float32, seed=47)
    check(tmp_path, lambda h, f: h @ f, h, f, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=str)
def test_narrow_matmul_accumulates_in_float32(tmp_path, dtype):
    # 4096 ones: a 16-bit accumulator would stop at 2048 (fp16) or 256 (bf16)
    ones_a, ones_b = np.ones((1, 4096), dtype), np.ones((4096, 1), dtype)
    # (NumPy's result dtype: float16 for float16, float32 for bfloat16,
    # which ml_dtypes multiplies through float32)
    out_dtype = np.matmul(ones_a[:, :1], ones_b[:1]).dtype
    assert out_dtype == (np.float16 if dtype == np.float16 else np.float32)
    (got,) = run(tmp_path, np.matmul, ones_a, ones_b)
    assert got.dtype == out_dtype and got.shape == (1, 1)
    assert float(got[0, 0]) == 4096.0
    a, b = rand((6, 300), dtype, seed=48), rand((300, 5), dtype, seed=49)
    (got,) = run(tmp_path, np.matmul, a, b)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(out_dtype)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                               rtol=RTOL[np.dtype(out_dtype)], atol=1e-2)


@pytest.mark.parametrize("sa, sb", [((1, 77), (77, 45)), ((45, 77), (77, 1)),
                                    ((77,), (77, 33)), ((33, 77), (77,))],
                         ids=str)
def test_float16_vector_products_are_the_float32_ones(tmp_path, sa, sb):
    # A product with one row or column decodes its float16 operands on the
    # way into registers (by vcvtph2ps where the CPU has it): the float32
    # product of the decoded values, in the same order, so the same bits
    # once rounded; with subnormals, -0, infinities and a NaN among them,
    # and lengths that leave a tail after the vectors of 16.
    for d in ("h", "f", "hs", "fs"):
        (tmp_path / d).mkdir()
    g = np.random.default_rng(53)
    a = g.normal(0, 1, sa).astype(np.float16)
    b = g.normal(0, 1, sb).astype(np.float16)
    flat = b.reshape(-1)
    flat[:4] = np.array([6e-8, -3e-5, -0.0, 1e-7], np.float16)  # subnormals
    (got,) = run(tmp_path / "h", np.matmul, a, b)
    (wide,) = run(tmp_path / "f", np.matmul, a.astype(np.float32),
                  b.astype(np.float32))
    np.testing.assert_array_equal(got.view(np.uint16),
                                  wide.astype(np.float16).view(np.uint16))
    flat[5] = np.inf
    a.reshape(-1)[7] = np.nan
    (got,) = run(tmp_path / "hs", np.matmul, a, b)
    (wide,) = run(tmp_path / "fs", np.matmul, a.astype(np.float32),
                  b.astype(np.float32))
    np.testing.assert_array_equal(got, wide.astype(np.float16))


def test_mlp(tmp_path):
    w1 = rand((16, 32), np.float32, seed=50) / 4
    w2 = rand((32, 8), np.float32, seed=51) / 6

    def mlp(x):
        h = nrtpy.neff.gelu(x @ w1)
        return nrtpy.neff.softmax(h @ w2, axis=-1)

    check(tmp_path, mlp, rand((4, 16), np.float32, seed=52), rtol=1e-5, atol=1e-6)


# =========================================================== metadata


def test_metadata_in_neff_order(tmp_path):
    def kernel(zeta, alpha, mid):
        return zeta.sum(axis=0), alpha * 2, mid > 0

    model = load(tmp_path, kernel, np.ones((2, 3), np.float32),
                 np.ones((5,), np.float16), np.ones((4, 1, 2), np.int64),
                 output_names=["z_out", "b_out", "a_out"])
    assert list(model.input_tensors_info) == ["zeta", "alpha", "mid"]
    assert list(model.output_tensors_info) == ["z_out", "b_out", "a_out"]
    info = model.input_tensors_info
    assert all(isinstance(m, TensorMetadata) for m in info.values())
    assert [(m.shape, m.size, m.dtype) for m in info.values()] == [
        ([2, 3], 24, "float32"), ([5], 10, "float16"), ([4, 1, 2], 64, "int64")]
    out = model.output_tensors_info
    assert [(m.shape, m.size) for m in out.values()] == [([3], 12), ([5], 10),
                                                         ([4, 1, 2], 8)]
    assert [m.dtype for m in out.values()][:2] == ["float32", "float16"]
    assert isinstance(info["zeta"].shape, list)
    assert info["zeta"].shape is not info["zeta"].shape  # a new list each time
    assert model.name == model.neff_path.stem
    assert re.fullmatch(
        r"NrtpyModel\(name='k\d+', neff_path='.*k\d+\.neff', core_id=0, "
        r"inputs=\['zeta', 'alpha', 'mid'\], outputs=\['z_out', 'b_out', 'a_out'\]\)",
        repr(model)), repr(model)


def test_load_options(tmp_path):
    path = nrtpy.neff.compile(lambda x: x * 2, np.ones(3, np.float32),
                              path=tmp_path / "a.b.neff")
    model = NrtpyModel.load_from_neff(str(path), name="custom")
    assert model.name == "custom" and model.neff_path == path
    assert model.model_ref.neff_path == str(path)
    with pytest.raises(ValueError, match="for model 'custom'"):
        model(inputs={})
    # the trace goes next to the NEFF, only the last suffix replaced
    model(inputs=tensors(x=np.ones(3, np.float32)), save_trace=True)
    assert (tmp_path / "a.b.ntff").is_file()
    # a single-rank collective load works like a plain one
    cc = NrtpyModel.load_from_neff(path, cc_enabled=True, rank_id=0, world_size=1)
    assert cc.model_ref.is_collective is True
    assert "is_collective=True" in repr(cc.model_ref)
    (got,) = execute(cc, np.ones(3, np.float32))
    assert got.tolist() == [2.0, 2.0, 2.0]
    # a rank id not below the world size is refused
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path, cc_enabled=True, rank_id=2, world_size=2)
    assert ei.value.status_code == 2


@pytest.mark.parametrize("dtype, name", [
    (E4M3, "float8_e4m3"), (E5M2, "float8_e5m2"),
    (E3M4, "float8_e3m4"), (BF16, "bfloat16"),
    (np.dtype(np.uint8), "uint8"), (np.dtype(np.int8), "int8"),
], ids=str)
def test_metadata_dtypes(tmp_path, dtype, name):
    model = load(tmp_path, lambda x: -x, np.ones((2, 8), dtype))
    assert model.input_tensors_info["x"].dtype == name
    assert model.output_tensors_info["output_0"].dtype == name
    (out,) = model.allocate_output_tensors()
    assert out.dtype == dtype and out.shape == (2, 8) and out.name == "output_0"


@pytest.mark.parametrize("dtype", [np.bool_, np.float64, np.float16, np.int32, E4M3,
                                   E4M3FN, E5M2, BF16], ids=lambda d: np.dtype(d).name)
def test_auto_allocated_outputs_have_real_dtypes(tmp_path, dtype):
    x = rand((3, 4), dtype, seed=53)
    model = load(tmp_path, lambda x: (x, x.reshape(12), x[0, 0]), x)
    outputs = model(inputs={"x": NrtpyTensor.from_numpy(x)})
    shapes = [(3, 4), (12,), ()]
    for t, shape in zip(outputs.values(), shapes):
        assert t.dtype == np.dtype(dtype)
        assert t.dtype.type is not np.void
        assert t.shape == shape
        assert t.core_id == 0
    got = [t.numpy() for t in outputs.values()]
    np.testing.assert_array_equal(got[0], x, strict=True)
    np.testing.assert_array_equal(got[1], x.reshape(12), strict=True)
    np.testing.assert_array_equal(got[2], x[0, 0], strict=True)


def test_scalar_output_shape(tmp_path):
    x = rand((5,), np.float32, seed=54)
    check(tmp_path, lambda x: (x.max(), x @ x, x[2]), x, rtol=1e-6)


def test_outputs_given_are_filled(tmp_path):
    a = rand((2, 3), np.float32, seed=55)
    model = load(tmp_path, lambda a: (a + 1, a.sum(axis=1)), a)
    out0 = NrtpyTensor.from_numpy(np.zeros((2, 3), np.float32))
    out1 = NrtpyTensor.from_numpy(np.zeros((2,), np.float32))
    assert model(inputs={"a": NrtpyTensor.from_numpy(a)},
                 outputs={"output_0": out0, "output_1": out1}) is None
    np.testing.assert_array_equal(out0.numpy(), a + 1)
    np.testing.assert_allclose(out1.numpy(), a.sum(axis=1), rtol=1e-6)
    # executing again with new data overwrites them
    model(inputs={"a": NrtpyTensor.from_numpy(a * 2)},
          outputs={"output_1": out1, "output_0": out0})
    np.testing.assert_array_equal(out0.numpy(), a * 2 + 1)


def test_same_tensor_as_input_and_output(tmp_path):
    x = rand((4, 8), np.float32, seed=56)
    model = load(tmp_path, lambda x: x * 2 + 1, x)
    t = NrtpyTensor.from_numpy(x)
    assert model(inputs={"x": t}, outputs={"output_0": t}) is None
    np.testing.assert_array_equal(t.numpy(), x * 2 + 1)


def _write_neff(path, variables, buffers=None, ops=None):
    """A NEFF written by hand: def.json `variables` (name -> (type, dtype,
    shape)) and, with `ops`, an emulator program over `buffers`."""
    var = {}
    for name, (kind, dtype, shape) in variables.items():
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(getattr(ml_dtypes, dtype, dtype)).itemsize
        var[name] = {"type": kind, "size": size, "shape": shape, "dtype": dtype}
    definition = {"var": var}
    files = {}
    if ops is not None:
        definition["emulator_program"] = "program.json"
        files["sg00/program.json"] = json.dumps({
            "format": "nrtpy-emulator-program", "version": 1,
            "buffers": buffers, "ops": ops}).encode()
    files["sg00/def.json"] = json.dumps(definition).encode()
    return _container.write(path, files, name=path.stem)


def test_must_alias_output_reuses_its_input(rt, tmp_path):
    # The compiler's convention for a parameter updated in place: input
    # "<p>.must_alias_input" and output "<p>" are one tensor.
    io = {"cache.must_alias_input": ("input", "float32", [4]),
          "x": ("input", "float32", [4]),
          "cache": ("output", "float32", [4]),
          "y": ("output", "float32", [4])}
    buffers = {k: {"kind": v[0], "dtype": v[1], "shape": v[2]} for k, v in io.items()}
    path = _write_neff(tmp_path / "alias.neff", io, buffers, ops=[
        {"op": "add", "in": ["cache.must_alias_input", "x"], "out": "cache"},
        {"op": "mul", "in": ["x", "x"], "out": "y"}])
    model = NrtpyModel.load_from_neff(path)
    cache = NrtpyTensor.from_numpy(np.arange(4, dtype=np.float32))
    x = NrtpyTensor.from_numpy(np.full(4, 10, np.float32))
    outputs = model(inputs={"cache.must_alias_input": cache, "x": x})
    assert outputs["cache"] is cache
    assert outputs["y"] is not x
    assert cache.numpy().tolist() == [10.0, 11.0, 12.0, 13.0]
    assert outputs["y"].numpy().tolist() == [100.0] * 4
    model(inputs={"cache.must_alias_input": cache, "x": x})
    assert cache.numpy().tolist() == [20.0, 21.0, 22.0, 23.0]
    # allocate_output_tensors() itself always allocates
    assert [t.name for t in model.allocate_output_tensors()] == ["cache", "y"]


def test_repeated_executions(tmp_path):
    model = load(tmp_path, lambda x: x * x,
                 np.ones(4, np.int64))
    for i in range(5):
        (got,) = execute(model, np.arange(4, dtype=np.int64) + i)
        assert got.tolist() == [(j + i) ** 2 for j in range(4)]


# =========================================================== validation


@pytest.fixture
def add_model(tmp_path):
    def kernel(a_input, b_input):
        return a_input + b_input

    ex = np.ones((2, 3), np.float32)
    return load(tmp_path, kernel, ex, ex)


def tensors(**arrays):
    return {k: NrtpyTensor.from_numpy(v, name=k) for k, v in arrays.items()}


EXPECTED = ("a_input: shape=[2, 3] dtype=float32 core=0, "
            "b_input: shape=[2, 3] dtype=float32 core=0")


def test_unknown_input(add_model):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 3), np.float32),
                  c_input=np.ones((2, 3), np.float32))
    with pytest.raises(ValueError) as ei:
        add_model(inputs=ins)
    assert str(ei.value) == (f"Unknown input(s) ['c_input'] for model "
                             f"'{add_model.name}'. Expected inputs: {EXPECTED}")


def test_missing_input(add_model):
    with pytest.raises(ValueError) as ei:
        add_model(inputs=tensors(b_input=np.ones((2, 3), np.float32)))
    assert str(ei.value) == (f"Missing input(s) ['a_input'] for model "
                             f"'{add_model.name}'. Expected inputs: {EXPECTED}")


def test_wrong_shape(add_model):
    ins = tensors(a_input=np.ones((3, 2), np.float32), b_input=np.ones((2, 3), np.float32))
    with pytest.raises(ValueError) as ei:
        add_model(inputs=ins)
    assert str(ei.value) == (f"Input a_input: expected shape [2, 3], got (3, 2). "
                             f"Expected: {EXPECTED}")
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"Input b_input: expected shape \[2, 3\], got \(2, 4\)"):
        add_model(inputs=ins)


def test_wrong_dtype(add_model):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 3), np.int32))
    with pytest.raises(ValueError) as ei:
        add_model(inputs=ins)
    assert str(ei.value) == (f"Input b_input: expected dtype float32, got int32. "
                             f"Expected: {EXPECTED}")
    ins = tensors(a_input=np.ones((2, 3), np.float16), b_input=np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="Input a_input: expected shape|expected 24 bytes"):
        add_model(inputs=ins)


def test_the_other_byte_order_is_named(add_model):
    # float32 in either byte order has the name "float32": the message says
    # which order the tensor has and how to convert it
    big = np.arange(6, dtype=">f4").reshape(2, 3)
    native = np.ones((2, 3), np.float32)
    hint = ("in big-endian byte order (>f4); models take tensors in the host's "
            "(little-endian) byte order: make the tensor from a.astype('<f4')")
    with pytest.raises(ValueError) as ei:
        add_model(inputs=tensors(a_input=native, b_input=big))
    assert str(ei.value) == (f"Input b_input: expected dtype float32, got float32 {hint}. "
                             f"Expected: {EXPECTED}")
    with pytest.raises(ValueError) as ei:
        add_model(inputs=tensors(a_input=native, b_input=native),
                  outputs=tensors(output_0=np.zeros((2, 3), ">f4")))
    assert str(ei.value).startswith(f"Output output_0: expected dtype float32, got "
                                    f"float32 {hint}. Expected: output_0: ")
    # another type in the other order: named with its order, no conversion
    with pytest.raises(ValueError) as ei:
        add_model(inputs=tensors(a_input=native, b_input=big.astype(">i4")))
    assert str(ei.value).startswith("Input b_input: expected dtype float32, got int32 "
                                    "in big-endian byte order (>i4). Expected: ")
    # from_numpy keeps the array's dtype and bytes: the tensor reads back as
    # written; converted as the message says, the model takes it
    t = NrtpyTensor.from_numpy(big)
    assert t.dtype == np.dtype(">f4") and t.numpy().dtype == np.dtype(">f4")
    np.testing.assert_array_equal(t.numpy(), big)
    (out,) = add_model(inputs=tensors(a_input=native, b_input=big.astype("<f4"))).values()
    np.testing.assert_array_equal(out.numpy(), big + 1)


def test_fp8_is_not_int8(tmp_path):
    model = load(tmp_path, lambda x: x, np.ones(4, E4M3))
    with pytest.raises(ValueError, match="expected dtype float8_e4m3, got int8"):
        model(inputs=tensors(x=np.ones(4, np.int8)))
    with pytest.raises(ValueError, match="expected dtype float8_e4m3, got float8_e5m2"):
        model(inputs=tensors(x=np.ones(4, E5M2)))


def test_fp8_variants_are_told_apart(tmp_path):
    # libnrt has one code for both e4m3 variants; the NEFF says which
    model = load(tmp_path, lambda x: x, np.ones(4, E4M3FN))
    with pytest.raises(ValueError, match="expected dtype float8_e4m3fn, got float8_e4m3"):
        model(inputs=tensors(x=np.ones(4, E4M3)))
    (got,) = execute(model, np.arange(4).astype(E4M3FN))
    assert got.dtype == E4M3FN and got.tolist() == [0, 1, 2, 3]


def test_output_validation(add_model):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"Unknown output\(s\) \['out'\] for model '.*'. "
                                         r"Expected outputs: output_0: shape=\[2, 3\] "
                                         r"dtype=float32 core=0"):
        add_model(inputs=ins, outputs=tensors(out=np.ones((2, 3), np.float32)))
    with pytest.raises(ValueError, match=r"Output output_0: expected dtype float32, got uint32"):
        add_model(inputs=ins, outputs=tensors(output_0=np.ones((2, 3), np.uint32)))
    with pytest.raises(ValueError, match=r"Missing output\(s\) \['output_0'\]"):
        add_model(inputs=ins, outputs={})


def test_not_a_tensor(add_model):
    with pytest.raises(TypeError, match="must be an NrtpyTensor, got ndarray"):
        add_model(inputs={"a_input": np.ones((2, 3), np.float32),
                          "b_input": np.ones((2, 3), np.float32)})


def test_wrong_core(fresh_runtime, tmp_path):
    nrtpy.configure([0, 1])
    model = load(tmp_path, lambda x: x + 1, np.ones(3, np.float32))
    t = NrtpyTensor.from_numpy(np.ones(3, np.float32), core_id=1)
    with pytest.raises(ValueError) as ei:
        model(inputs={"x": t})
    assert str(ei.value) == ("Input x: expected model and tensor on the same core, "
                             "got model core_id 0 and tensor core_id 1. "
                             "Expected: x: shape=[3] dtype=float32 core=0")


def test_freed_input(rt, add_model):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 3), np.float32))
    rt.free_tensor(ins["b_input"])
    with pytest.raises(NrtpyError, match="Tensor 'b_input' is freed"):
        add_model(inputs=ins)


def test_unloaded_model(rt, add_model):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 3), np.float32))
    assert add_model.model_ref.is_unloaded is False
    rt.unload_model(add_model.model_ref)
    assert add_model.model_ref.is_unloaded is True
    assert "NrtModel(ptr=0," in repr(add_model.model_ref)
    with pytest.raises(NrtpyError, match="Unable to execute an unloaded model"):
        add_model(inputs=ins)
    with pytest.raises(NrtpyError, match="Unable to get model tensor info from an unloaded"):
        rt.get_tensor_info(add_model.model_ref)
    rt.unload_model(add_model.model_ref)  # twice is fine


# =========================================================== load errors


def test_load_missing_file(rt, tmp_path):
    path = tmp_path / "nonexistent.neff"
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path)
    e = ei.value
    assert (e.status_code, e.status_name) == (1, "NRT_FAILURE")
    assert str(e).startswith("NRT Error NRT_FAILURE(1): Failed to load model")
    assert str(path) in str(e)


def _good_neff(tmp_path):
    return nrtpy.neff.compile(lambda x: x + 1, np.ones(3, np.float32),
                              path=tmp_path / "good.neff").read_bytes()


def _patched(raw, offset, value):
    return raw[:offset] + struct.pack("<Q", value) + raw[offset + 8:]


CORRUPT = {
    "truncated": (lambda raw: raw[:-7], 2),
    "header_only": (lambda raw: raw[:1024], 2),
    "short": (lambda raw: raw[:100], 2),
    "empty": (lambda raw: b"", 2),
    "header_size": (lambda raw: _patched(raw, 0x08, 512), 2),
    "data_size": (lambda raw: _patched(raw, 0x10, 5), 2),
    "payload": (lambda raw: raw[:1024] + bytes(len(raw) - 1024), 2),
    "feature_bit": (lambda raw: _patched(raw, 0x220, 0x100), 10),
    "version_3": (lambda raw: _patched(raw, 0x18, 3), 10),
    "version_0": (lambda raw: _patched(raw, 0x18, 0), 10),
}


DETAILS = {"truncated": "data_size", "header_only": "data_size", "short": "header",
           "empty": "empty", "header_size": "header_size is 512",
           "data_size": "data_size is 5", "payload": "def.json",
           "feature_bit": "0x100", "version_3": "version 3.0", "version_0": "version 0.0"}


@pytest.mark.parametrize("case", CORRUPT)
def test_load_corrupt_neff(rt, tmp_path, case):
    corrupt, status = CORRUPT[case]
    path = tmp_path / f"{case}.neff"
    path.write_bytes(corrupt(_good_neff(tmp_path)))
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path)
    e = ei.value
    names = {2: "NRT_INVALID", 10: "NRT_UNSUPPORTED_NEFF_VERSION"}
    assert (e.status_code, e.status_name) == (status, names[status]), str(e)
    assert str(e).startswith(f"NRT Error {names[status]}({status}): Failed to load model: ")
    assert DETAILS[case] in str(e)


def test_supported_feature_bits_load(rt, tmp_path):
    path = tmp_path / "f.neff"
    path.write_bytes(_patched(_good_neff(tmp_path), 0x220, 0x80000000000000FF))
    model = NrtpyModel.load_from_neff(path)
    (got,) = execute(model, np.arange(3, dtype=np.float32))
    assert got.tolist() == [1.0, 2.0, 3.0]


def test_bad_program_is_invalid(rt, tmp_path):
    program = {"format": "nrtpy-emulator-program", "version": 1,
               "buffers": {"x": {"kind": "input", "dtype": "float32", "shape": [3]},
                           "output_0": {"kind": "output", "dtype": "float32", "shape": [3]}},
               "ops": [{"op": "frobnicate", "in": ["x"], "out": "output_0"}]}
    definition = {"var": {"x": {"type": "input", "size": 12, "shape": [3], "dtype": "float32"},
                          "output_0": {"type": "output", "size": 12, "shape": [3],
                                       "dtype": "float32"}},
                  "emulator_program": "program.json"}
    path = _container.write(tmp_path / "bad.neff", {
        "sg00/def.json": json.dumps(definition).encode(),
        "sg00/program.json": json.dumps(program).encode()}, name="bad")
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path)
    assert ei.value.status_code == 2
    assert "frobnicate" in str(ei.value)


def test_neff_without_emulator_program(rt, tmp_path):
    definition = {"var": {
        "x": {"type": "input", "size": 32, "shape": [8], "dtype": "float32"},
        "raw_in": {"type": "input", "size": 6},
        "y": {"type": "output", "size": 16, "shape": [2, 4], "dtype": "float16"},
    }}
    path = _container.write(tmp_path / "hw.neff", {
        "neff.json": b'{"name": "hw"}',
        "sg00/def.json": json.dumps(definition).encode(),
        "sg00/kelp.bin": b"\1" * 64}, name="hw")
    assert nrtpy.neff.inspect(path)["emulator_program"] is False
    model = NrtpyModel.load_from_neff(path)
    assert list(model.input_tensors_info) == ["x", "raw_in"]
    assert [(m.shape, m.size, m.dtype) for m in model.input_tensors_info.values()] == [
        ([8], 32, "float32"), ([6], 6, "unknown")]
    y = model.output_tensors_info["y"]
    assert (y.shape, y.size, y.dtype) == ([2, 4], 16, "float16")
    # an unknown dtype auto-allocates as void bytes of the right size
    (out,) = model.allocate_output_tensors()
    assert out.dtype == np.float16 and out.shape == (2, 4)
    ins = tensors(x=np.ones(8, np.float32), raw_in=np.ones(6, np.uint8))
    with pytest.raises(NrtError) as ei:
        model(inputs=ins)
    e = ei.value
    assert (e.status_code, e.status_name) == (2, "NRT_INVALID")
    assert str(e).startswith("NRT Error NRT_INVALID(2): Failed to execute model")
    assert "Neuron hardware" in str(e)


def test_int8_neff_accepts_fp8(rt, tmp_path):
    # libnrt reports the fp8 tensors of hardware NEFFs as int8: fp8 arrays
    # pass validation there (and the model then needs hardware)
    path = _write_neff(tmp_path / "i8.neff", {"x": ("input", "int8", [4]),
                                              "y": ("output", "int8", [4])})
    model = NrtpyModel.load_from_neff(path)
    assert model.input_tensors_info["x"].dtype == "int8"
    for dtype in (E4M3, E5M2, E4M3FN, np.int8):
        with pytest.raises(NrtError, match="Neuron hardware"):
            model(inputs=tensors(x=np.ones(4, dtype)))
    with pytest.raises(ValueError, match="expected dtype int8, got uint8"):
        model(inputs=tensors(x=np.ones(4, np.uint8)))


def test_unknown_dtype_allocates_void(rt, tmp_path):
    definition = {"var": {"x": {"type": "input", "size": 4},
                          "y": {"type": "output", "size": 12, "shape": [3, 2]}}}
    path = _container.write(tmp_path / "v.neff",
                            {"sg00/def.json": json.dumps(definition).encode()}, name="v")
    model = NrtpyModel.load_from_neff(path)
    (out,) = model.allocate_output_tensors()
    assert out.dtype == np.dtype("V2") and out.shape == (3, 2)


# =========================================================== execution errors


def test_oob_gather(rt, tmp_path):
    idx = np.full(4, 99999, np.int32)
    model = load(tmp_path, lambda src: np.take(src, idx, axis=0), np.ones((8, 5), np.float32))
    with pytest.raises(NrtError) as ei:
        execute(model, np.ones((8, 5), np.float32))
    e = ei.value
    assert (e.status_code, e.status_name) == (1006, "NRT_EXEC_OOB")
    assert str(e).startswith("NRT Error NRT_EXEC_OOB(1006): Failed to execute model")
    # the model still works with in-bounds data afterwards
    model = load(tmp_path, lambda src, i: np.take(src, i, axis=1),
                 np.ones((2, 5), np.float32), np.ones(3, np.int64))
    src = np.arange(10, dtype=np.float32).reshape(2, 5)
    for bad in ([0, 5, 1], [-6, 0, 0]):
        with pytest.raises(NrtError) as ei:
            execute(model, src, np.array(bad, np.int64))
        assert ei.value.status_code == 1006
    (got,) = execute(model, src, np.array([4, -5, 2], np.int64))
    np.testing.assert_array_equal(got, src[:, [4, 0, 2]])


def _matmul_chain(path, n, size):
    """A hand-written program of `n` matmuls by `w`, ping-ponging between
    its two outputs (no scratch memory however long it runs)."""
    io = {"x": ("input", "float32", [size, size]), "w": ("input", "float32", [size, size]),
          "a": ("output", "float32", [size, size]), "b": ("output", "float32", [size, size])}
    buffers = {k: {"kind": v[0], "dtype": v[1], "shape": v[2]} for k, v in io.items()}
    ops = [{"op": "matmul", "in": ["x", "w"], "out": "a"}]
    for i in range(1, n):
        src, dst = ("a", "b") if i % 2 else ("b", "a")
        ops.append({"op": "matmul", "in": [src, "w"], "out": dst})
    if n == 1:
        ops.append({"op": "copy", "in": ["a"], "out": "b"})
    return NrtpyModel.load_from_neff(_write_neff(path, io, buffers, ops))


def test_exec_timeout(fresh_runtime, tmp_path):
    size = 512
    x = np.ones((size, size), np.float32)
    w = np.full((size, size), 1 / size, np.float32)
    # How many matmuls take about 8 s here?  (The timeout is read at load.)
    calibrate = _matmul_chain(tmp_path / "cal.neff", 16, size)
    execute(calibrate, x, w)  # warm
    t0 = time.perf_counter()
    a, b = execute(calibrate, x, w)
    per_op = max((time.perf_counter() - t0) / 16, 1e-5)
    np.testing.assert_allclose(a, x, rtol=1e-5)
    n = min(int(8.0 / per_op) + 1, 400_000)
    fresh_runtime.setenv("NEURON_RT_EXEC_TIMEOUT", "1")
    model = _matmul_chain(tmp_path / "heavy.neff", n, size)
    t0 = time.perf_counter()
    with pytest.raises(NrtError) as ei:
        execute(model, x, w)
    elapsed = time.perf_counter() - t0
    e = ei.value
    assert (e.status_code, e.status_name) == (5, "NRT_TIMEOUT")
    assert str(e).startswith("NRT Error NRT_TIMEOUT(5): Failed to execute model")
    assert 0.9 < elapsed < 2.5, (elapsed, n, per_op)


# =========================================================== benchmark


def _check_stats(r, iterations, warmup, mode):
    assert isinstance(r, BenchmarkResult)
    assert r.iterations == iterations
    assert r.warmup_iterations == warmup
    assert r.mode == mode
    assert len(r.durations_ms) == iterations
    assert all(d >= 0 for d in r.durations_ms)
    assert r.min_ms == min(r.durations_ms) and r.max_ms == max(r.durations_ms)
    assert r.min_ms <= r.p50_ms <= r.p90_ms <= r.p99_ms <= r.max_ms
    assert r.min_ms <= r.mean_ms <= r.max_ms
    assert r.mean_ms == pytest.approx(np.mean(r.durations_ms))
    assert r.std_dev_ms == pytest.approx(np.std(r.durations_ms), abs=1e-12)
    assert r.p50_ms == pytest.approx(np.median(r.durations_ms))


@pytest.mark.parametrize("mode", ["device", "host"])
def test_benchmark(add_model, mode):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 3), np.float32))
    r = add_model.benchmark(inputs=ins, warmup_iter=2, benchmark_iter=7, mode=mode)
    _check_stats(r, 7, 2, mode)
    r = add_model.benchmark(inputs=ins, warmup_iter=0, benchmark_iter=1, mode=mode)
    _check_stats(r, 1, 0, mode)
    assert r.std_dev_ms == 0
    assert r.max_ms > 0


def test_benchmark_fills_given_outputs(add_model):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.full((2, 3), 2, np.float32))
    out = NrtpyTensor.from_numpy(np.zeros((2, 3), np.float32))
    r = add_model.benchmark(inputs=ins, outputs={"output_0": out}, benchmark_iter=3)
    assert r.iterations == 3
    assert out.numpy().tolist() == [[3.0] * 3] * 2


def test_benchmark_device_defaults(add_model):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 3), np.float32))
    r = add_model.benchmark(inputs=ins)
    _check_stats(r, 5, 5, "device")


def test_benchmark_errors(add_model):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"^Invalid benchmark mode 'gpu'. Use 'device' or 'host'.$"):
        add_model.benchmark(inputs=ins, mode="gpu")
    for bad in (0, -1):
        with pytest.raises(ValueError, match="benchmark_iter must be at least 1"):
            add_model.benchmark(inputs=ins, benchmark_iter=bad)
    for bad in (2.0, True, "5"):
        with pytest.raises(TypeError, match="benchmark_iter must be an int"):
            add_model.benchmark(inputs=ins, benchmark_iter=bad)
    with pytest.raises(ValueError, match="warmup_iter must be a non-negative int"):
        add_model.benchmark(inputs=ins, warmup_iter=-1)
    with pytest.raises(ValueError, match="Missing input"):
        add_model.benchmark(inputs={})


def test_benchmark_result_repr():
    r = BenchmarkResult(mean_ms=1.23456, min_ms=1, max_ms=2.5, std_dev_ms=0.1,
                        iterations=10, warmup_iterations=3, durations_ms=[1.0])
    assert repr(r) == ("BenchmarkResult(mean=1.2346ms, min=1.0000ms, max=2.5000ms, "
                       "std_dev=0.1000ms, iterations=10, warmup_iterations=3)")
    assert r == BenchmarkResult(1.23456, 1, 2.5, 0.1, 10, 3, [1.0])
    assert BenchmarkResult(1, 1, 1, 0, 1, 0).durations_ms == []


def test_benchmark_repr_of_a_run(add_model):
    ins = tensors(a_input=np.ones((2, 3), np.float32), b_input=np.ones((2, 3), np.float32))
    r = add_model.benchmark(inputs=ins, warmup_iter=1, benchmark_iter=4, mode="host")
    assert re.fullmatch(r"BenchmarkResult\(mean=\d+\.\d{4}ms, min=\d+\.\d{4}ms, "
                        r"max=\d+\.\d{4}ms, std_dev=\d+\.\d{4}ms, iterations=4, "
                        r"warmup_iterations=1\)", repr(r)), repr(r)


# =========================================================== traces


def _trace_ops(path):
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    return doc, [e for e in events if e.get("cat") == "op"], \
        [e for e in events if e.get("cat") == "execution"]


def test_save_trace(tmp_path):
    def kernel(x):
        return np.exp(x) * 2 + x.sum()

    x = rand((3, 4), np.float32, seed=57)
    model = load(tmp_path, kernel, x)
    program = json.loads(neff_members(model.neff_path)["sg00/program.json"])
    ntff = tmp_path / "trace.ntff"
    out = model(inputs=tensors(x=x), save_trace=True, ntff_name=str(ntff))
    np.testing.assert_allclose(out["output_0"].numpy(), kernel(x), rtol=1e-6)
    doc, ops, execs = _trace_ops(ntff)
    assert len(execs) == 1
    assert len(ops) == len(program["ops"])
    assert [e["args"]["index"] for e in ops] == list(range(len(program["ops"])))
    for ev, op in zip(ops, program["ops"]):
        assert ev["name"] == op["op"]
        assert ev["ph"] == "X" and ev["dur"] >= 0
        assert ev["args"]["exec_id"] == execs[0]["args"]["exec_id"]
        assert execs[0]["ts"] <= ev["ts"] <= execs[0]["ts"] + execs[0]["dur"]
    exp = ops[[op["op"] for op in program["ops"]].index("exp")]
    assert exp["args"]["shapes"] == "float32[3,4] -> float32[3,4]"
    assert execs[0]["args"]["model"] == "kernel"  # the NEFF's name
    assert doc["otherData"]["format"] == "nrtpy-emulator-profile"
    assert doc["otherData"]["executions"] == 1


def test_save_trace_default_name(tmp_path):
    model = load(tmp_path, lambda x: -x, np.ones(3, np.float32))
    default = model.neff_path.with_suffix(".ntff")
    assert not default.exists()
    model(inputs=tensors(x=np.ones(3, np.float32)))
    assert not default.exists()  # only with save_trace
    model(inputs=tensors(x=np.ones(3, np.float32)), save_trace=True)
    _, ops, execs = _trace_ops(default)
    assert [e["name"] for e in ops] == ["neg"] and len(execs) == 1
    # a failed execution writes no trace (as on hardware)
    idx = np.array([7])
    bad = load(tmp_path, lambda x: np.take(x, idx), np.ones(3, np.float32))
    with pytest.raises(NrtError):
        bad(inputs=tensors(x=np.ones(3, np.float32)), save_trace=True)
    assert not bad.neff_path.with_suffix(".ntff").exists()


OVERLAPPING_TRACES = r"""
import json, sys, threading, time
import numpy as np
import nrtpy, nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor, SystemTraceSession
tmp = sys.argv[1]
w = np.full((256, 256), 1 / 256, np.float32)
def chain(x):
    for _ in range(300):
        x = x @ w
    return x
model = NrtpyModel.load_from_neff(nrtpy.neff.compile(
    chain, np.ones((256, 256), np.float32), path=tmp + "/chain.neff"))
x = NrtpyTensor.from_numpy(np.ones((256, 256), np.float32))
run = lambda name: model(inputs={"x": x}, save_trace=True, ntff_name=tmp + name)
with SystemTraceSession(0) as trace:
    a = threading.Thread(target=run, args=("/a.ntff",))
    a.start()
    while '"nc_exec_running"' not in trace.fetch_events_json():
        time.sleep(0.0005)
# A is executing with its profile started: B starts another on the model
run("/b.ntff")
a.join()
for name in ("a", "b"):
    doc = json.load(open(f"{tmp}/{name}.ntff"))
    print(name, doc["otherData"]["executions"] >= 1)
"""


def test_overlapping_traces_of_one_model(fresh_runtime, tmp_path):
    # Two profiles of one model at once (save_trace from two threads): each
    # execution is recorded in both.  In a child (on this process's emulated
    # machine, released by fresh_runtime): a crash must not take the test
    # process down.
    proc = run_python(OVERLAPPING_TRACES.replace("sys.argv[1]", repr(str(tmp_path))),
                      timeout=60)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == "a True\nb True\n"


# =========================================================== cores, threads


def test_model_on_core_1(fresh_runtime, tmp_path):
    nrtpy.configure([0, 1])
    x = rand((3, 5), np.float32, seed=58)
    model = load(tmp_path, lambda x: x * x, x, core_id=1)
    assert model.model_ref.core_id == 1
    assert "core_id=1" in repr(model)
    (got,) = execute(model, x, core_id=1)
    np.testing.assert_array_equal(got, x * x)
    outs = model(inputs={"x": NrtpyTensor.from_numpy(x, core_id=1)})
    assert outs["output_0"].core_id == 1
    with pytest.raises(ValueError, match="same core"):
        model(inputs={"x": NrtpyTensor.from_numpy(x, core_id=0)})
    r = model.benchmark(inputs={"x": NrtpyTensor.from_numpy(x, core_id=1)},
                        warmup_iter=1, benchmark_iter=3)
    assert r.iterations == 3


def test_load_on_missing_core(fresh_runtime, tmp_path):
    nrtpy.configure([0])
    with pytest.raises(ValueError, match="^core_id 1 does not exist; the visible "
                       "NeuronCores are core_id 0 to 0$"):
        load(tmp_path, lambda x: x, np.ones(3, np.float32), core_id=1)


def test_threads_on_two_cores(fresh_runtime, tmp_path):
    nrtpy.configure([0, 1])
    w = rand((32, 32), np.float32, seed=59)
    models = [load(tmp_path, lambda x: np.tanh(x @ w) + x, np.ones((16, 32), np.float32),
                   core_id=c) for c in (0, 1)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def work(core):
        try:
            barrier.wait()
            for i in range(20):
                x = rand((16, 32), np.float32, seed=100 * core + i)
                (got,) = execute(models[core], x, core_id=core)
                np.testing.assert_allclose(got, np.tanh(x @ w) + x, rtol=1e-5, atol=2e-4)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(c,), daemon=True) for c in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    assert errors == []


def test_threads_share_one_model(rt, tmp_path):
    model = load(tmp_path, lambda x: x * 3 - 1, np.ones(64, np.int64))
    errors: list[BaseException] = []

    def work(i):
        try:
            for r in range(20):
                x = np.arange(64, dtype=np.int64) + 1000 * i + r
                (got,) = execute(model, x)
                np.testing.assert_array_equal(got, x * 3 - 1)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []


# =========================================================== low level


def test_system_trace_session(rt, tmp_path):
    model = load(tmp_path, lambda x: x + 1, np.ones(4, np.float32))
    ins = {"x": NrtpyTensor.from_numpy(np.ones(4, np.float32)).tensor_ref}
    outs = {"output_0": rt.allocate_tensor(16)}
    s = SystemTraceSession(0)
    assert s.is_started
    for _ in range(3):
        rt.execute(model.model_ref, ins, outs)
    events = json.loads(s.fetch_events_json())["events"]
    running = [e for e in events if e["event_type"] == "nc_exec_running"]
    assert [e["phase"] for e in running] == ["start", "stop"] * 3
    ids = [e["tracking_id"] for e in running]
    assert ids[0::2] == ids[1::2] and len(set(ids)) == 3
    for start, stop in zip(running[0::2], running[1::2]):
        assert stop["data"]["nc_timestamp_ns"] >= start["data"]["nc_timestamp_ns"]
    # events are consumed: fetched once
    text = s.fetch_events_json()
    assert text == "" or not [e for e in json.loads(text)["events"]
                              if e["event_type"] == "nc_exec_running"]
    rt.execute(model.model_ref, ins, outs)
    s.drain_events()
    text = s.fetch_events_json()
    assert text == "" or not [e for e in json.loads(text)["events"]
                              if e["event_type"] == "nc_exec_running"]
    s.stop()
    assert not s.is_started
    s.stop()  # idempotent
    with pytest.raises(NrtpyError, match="^Nrtpy Error: Cannot fetch events: sys trace is not started$"):
        s.fetch_events_json()
    with pytest.raises(NrtpyError, match="^Nrtpy Error: Cannot drain events: sys trace is not started$"):
        s.drain_events()


def test_system_trace_sessions_per_core(rt, tmp_path):
    a = load(tmp_path, lambda x: x + 1, np.ones(3, np.float32), core_id=0)
    b = load(tmp_path, lambda x: x + 1, np.ones(3, np.float32), core_id=1)
    s1 = SystemTraceSession(1)
    s0 = SystemTraceSession(0)
    s0.stop()  # the capture goes on while another session lives
    execute(a, np.ones(3, np.float32))
    execute(b, np.ones(3, np.float32), core_id=1)
    events = json.loads(s1.fetch_events_json())["events"]
    s1.stop()
    assert [(e["event_type"], e["phase"]) for e in events] == [
        ("nrt_execute", "start"), ("nc_exec_running", "start"),
        ("nc_exec_running", "stop"), ("nrt_execute", "stop")]
    assert {e["nc_idx"] for e in events} == {1}
    running = events[1]["data"]
    assert running["device_core_idx"] == 1 and running["model_name"] == "<lambda>"


def test_system_trace_session_context_manager(rt, tmp_path):
    model = load(tmp_path, lambda x: x + 1, np.ones(4, np.float32))
    ins = {"x": NrtpyTensor.from_numpy(np.ones(4, np.float32))}
    outs = {"output_0": NrtpyTensor.from_numpy(np.zeros(4, np.float32))}
    with SystemTraceSession() as s:
        rt.execute(model.model_ref, ins, outs)
        events = json.loads(s.fetch_events_json())["events"]
    assert not s.is_started
    assert sum(e["event_type"] == "nc_exec_running" for e in events) == 2


def test_low_level_api(rt, tmp_path):
    def kernel(a, b):
        return a * b, (a - b).astype(np.int32)

    a, b = rand((2, 3), np.float32, seed=60), rand((2, 3), np.float32, seed=61)
    path = nrtpy.neff.compile(kernel, a, b, path=tmp_path / "ll.neff")
    m = rt.load_model(str(path))
    assert isinstance(m, NrtModel)
    assert (m.neff_path, m.core_id, m.rank_id, m.world_size) == (str(path), 0, 0, 1)
    assert m.is_collective is False and m.is_unloaded is False
    assert re.fullmatch(r"NrtModel\(ptr=0x[0-9a-f]+, core_id=0, rank_id=0, world_size=1, "
                        r"is_collective=False, is_owner=True\)", repr(m)), repr(m)
    info = rt.get_tensor_info(m)
    assert isinstance(info, ModelTensorInfo)
    assert repr(info) == "ModelTensorInfo(inputs=2 tensors, outputs=2 tensors)"
    assert list(info.inputs) == ["a", "b"] and list(info.outputs) == ["output_0", "output_1"]
    assert info.inputs is not info.inputs
    assert repr(info.inputs["a"]) == "TensorMetadata(size=24, dtype='float32', shape=[2, 3])"
    assert repr(info.outputs["output_1"]) == "TensorMetadata(size=24, dtype='int32', shape=[2, 3])"
    ta, tb = NrtpyTensor.from_numpy(a), NrtpyTensor.from_numpy(b)
    o0, o1 = rt.allocate_tensor(24, name="o0"), rt.allocate_tensor(24, name="o1")
    # NrtTensor and NrtpyTensor values are both accepted
    assert rt.execute(m, {"a": ta.tensor_ref, "b": tb},
                      {"output_0": o0, "output_1": o1}) is None
    assert np.frombuffer(rt.tensor_read(o0), np.float32).tolist() == (a * b).reshape(-1).tolist()
    assert np.frombuffer(rt.tensor_read(o1), np.int32).tolist() == \
        (a - b).astype(np.int32).reshape(-1).tolist()
    # low level, names are libnrt's to check
    with pytest.raises(NrtError) as ei:
        rt.execute(m, {"a": ta}, {"output_0": o0, "output_1": o1})
    assert ei.value.status_code == 2 and "'b'" in str(ei.value)
    with pytest.raises(NrtError) as ei:
        rt.execute(m, {"a": ta, "b": tb}, {"output_0": o0, "output_1": rt.allocate_tensor(20)})
    assert ei.value.status_code == 2
    with pytest.raises(NrtError, match="input 'b' is on vnc 1"):
        rt.execute(m, {"a": ta, "b": rt.allocate_tensor(24, core_id=1)},
                   {"output_0": o0, "output_1": o1})
    with pytest.raises(TypeError):
        rt.execute(m, {"a": a, "b": tb}, {"output_0": o0, "output_1": o1})
    with pytest.raises(TypeError):
        rt.execute("model", {}, {})
    # save_trace at the low level
    ntff = tmp_path / "ll.ntff"
    rt.execute(m, {"a": ta, "b": tb}, {"output_0": o0, "output_1": o1},
               ntff_name=str(ntff), save_trace=True)
    assert json.loads(ntff.read_text())["otherData"]["executions"] == 1
    rt.unload_model(m)
    assert m.is_unloaded
    with pytest.raises(NrtpyError, match="Unable to execute an unloaded model"):
        rt.execute(m, {"a": ta, "b": tb}, {"output_0": o0, "output_1": o1})


def test_model_after_reset(fresh_runtime, tmp_path):
    model = load(tmp_path, lambda x: x + 1, np.ones(3, np.float32))
    ins = tensors(x=np.ones(3, np.float32))
    quiet_reset()
    assert model.model_ref.is_unloaded
    message = ("^Nrtpy Error: Unable to execute an unloaded model. "
               "Please check the lifetime of the model.$")
    # the model fails at once, without starting a new runtime
    with pytest.raises(NrtpyError, match=message):
        model(inputs=ins)
    with pytest.raises(NrtpyError, match=message):
        model.benchmark(inputs=ins)
    with pytest.raises(NrtpyError, match=message):
        model.allocate_output_tensors()
    assert nrtpy._singleton._runtime is None
    with pytest.raises(NrtpyError):
        nrtpy.get_nrtpy_singleton().execute(model.model_ref, {}, {})


def test_unload_during_execution(rt, tmp_path):
    # the unload waits for the running execution, which completes
    model = _matmul_chain(tmp_path / "chain.neff", 400, 256)
    x = np.ones((256, 256), np.float32)
    w = np.full((256, 256), 1 / 256, np.float32)
    result: list = []
    t = threading.Thread(target=lambda: result.append(execute(model, x, w)), daemon=True)
    with SystemTraceSession(0) as trace:
        t.start()
        deadline = time.monotonic() + 30
        while '"nc_exec_running"' not in trace.fetch_events_json():  # running now
            assert time.monotonic() < deadline
            time.sleep(0.0005)
    rt.unload_model(model.model_ref)
    assert model.model_ref.is_unloaded
    t.join(30)
    assert len(result) == 1
    np.testing.assert_allclose(result[0][0], x, rtol=1e-5)
    with pytest.raises(NrtpyError, match="unloaded model"):
        execute(model, x, w)


@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), np.dtype(np.float64), E4M3FN])
def test_metadata_reports_the_neff_dtype(tmp_path, dtype):
    # libnrt has no code for bool or float64 and one for both e4m3 variants;
    # the model's metadata still names the NEFF's dtype, and so does the
    # low-level API (the emulator says it through nrtemu_get_model_tensor_dtype).
    model = load(tmp_path, lambda x: x, np.zeros((2, 3), dtype))
    (meta,) = model.input_tensors_info.values()
    (out,) = model.output_tensors_info.values()
    assert (meta.dtype, out.dtype) == (dtype.name, dtype.name)
    assert (meta.shape, meta.size) == ([2, 3], 6 * dtype.itemsize)
    raw = nrtpy.get_nrtpy_singleton().get_tensor_info(model.model_ref)
    assert raw.inputs["x"].dtype == dtype.name
    assert raw.outputs["output_0"].dtype == dtype.name


# A child that reads nrt_get_model_tensor_info() of a NEFF through ctypes, as
# a C client of libnrt (Spike) does: [name, usage, size, dtype code] each.
_C_TENSOR_INFO = """
import ctypes, json, sys
class Info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 256), ("usage", ctypes.c_int),
                ("size", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_uint32)), ("ndim", ctypes.c_uint32)]
class Array(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("tensors", Info * 16)]
lib = ctypes.CDLL(sys.argv[1])
neff = open(sys.argv[2], "rb").read()
model, arr = ctypes.c_void_p(), ctypes.POINTER(Array)()
assert lib.nrt_init(1, b"", b"") == 0  # NRT_FRAMEWORK_TYPE_NO_FW
assert lib.nrt_load(neff, ctypes.c_size_t(len(neff)), 0, -1, ctypes.byref(model)) == 0
assert lib.nrt_get_model_tensor_info(model, ctypes.byref(arr)) == 0
t = arr.contents.tensors
print(json.dumps([[t[i].name.decode(), t[i].usage, t[i].size, t[i].dtype]
                  for i in range(arr.contents.count)]))
lib.nrt_free_model_tensor_info(arr)
lib.nrt_unload(model)
lib.nrt_close()
"""


def test_fp8_reported_as_int8_in_c_exact_in_python(tmp_path):
    # The real runtime has no code for the fp8 types of a NEFF and reports
    # them as NRT_DTYPE_INT8 (2), which Spike's dtype_to_string turns into
    # "int8" (FP8_E3/E4/E5 would be "unknown"); the emulator reports the
    # same, while nrtpy names each variant exactly.
    fp8 = [E4M3, E4M3FN, E5M2, E3M4]
    arrays = [np.zeros((2, 3), d) for d in fp8]
    path = nrtpy.neff.compile(lambda a, b, c, d: (d, c, b, a), *arrays,
                              path=tmp_path / "fp8.neff")
    # (an emulated machine of its own: this process may hold our cores)
    child = subprocess.run(
        [sys.executable, "-c", _C_TENSOR_INFO, nrtpy.runtime_info()["library"],
         str(path)],
        env=child_env(NRTPY_EMU_NAMESPACE=f"{os.environ['NRTPY_EMU_NAMESPACE']}-c"),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert child.returncode == 0, child.stderr
    reported = json.loads(child.stdout)
    assert [r[:3] for r in reported] == [
        ["a", 0, 6], ["b", 0, 6], ["c", 0, 6], ["d", 0, 6],
        ["output_0", 1, 6], ["output_1", 1, 6], ["output_2", 1, 6],
        ["output_3", 1, 6]]
    assert {r[3] for r in reported} == {2}  # NRT_DTYPE_INT8
    model = NrtpyModel.load_from_neff(path)
    ins = [m.dtype for m in model.input_tensors_info.values()]
    outs = [m.dtype for m in model.output_tensors_info.values()]
    assert ins == [d.name for d in fp8] and outs == ins[::-1]
    raw = nrtpy.get_nrtpy_singleton().get_tensor_info(model.model_ref)
    assert [m.dtype for m in raw.inputs.values()] == ins
    x = [np.arange(6, dtype=np.float32).reshape(2, 3).astype(d) for d in fp8]
    got = execute(model, *x)
    assert [g.dtype for g in got] == fp8[::-1]
    assert all(g.tobytes() == w.tobytes() for g, w in zip(got, x[::-1]))


# -- the fast call path (checked and executed in C) ----------------------------


def _add_io(values, core_id=0):
    ins = {"a": NrtpyTensor.from_numpy(np.full(4, values[0], np.float32)),
           "b": NrtpyTensor.from_numpy(np.full(4, values[1], np.float32))}
    return ins, {"output_0": NrtpyTensor.from_numpy(np.zeros(4, np.float32))}


def test_fast_path_uses_each_calls_tensors(tmp_path):
    # The model reuses its tensor sets between calls: every call must still
    # see its own tensors, whichever mapping objects hold them.
    s = np.zeros(4, np.float32)
    model = load(tmp_path, lambda a, b: a + b, s, s)
    for i in range(5):
        ins, outs = _add_io((i, 10 * i))
        assert model(ins, outs) is None
        np.testing.assert_array_equal(outs["output_0"].numpy(), np.full(4, 11 * i))
    # the same names in another order and another mapping type
    ins, outs = _add_io((1, 2))
    model(dict(reversed(list(ins.items()))), outs)
    np.testing.assert_array_equal(outs["output_0"].numpy(), np.full(4, 3))
    from types import MappingProxyType
    ins, outs = _add_io((3, 4))
    model(MappingProxyType(ins), outs)
    np.testing.assert_array_equal(outs["output_0"].numpy(), np.full(4, 7))


def test_reused_sets_never_keep_a_name_of_an_earlier_call(rt, tmp_path):
    # A name given to one execution and missing from the next is missing,
    # not taken from the earlier call's set.
    s = np.zeros(4, np.float32)
    model = load(tmp_path, lambda a, b: a + b, s, s)
    ins, outs = _add_io((1, 2))
    refs = {k: v.tensor_ref for k, v in ins.items()}
    out_refs = {k: v.tensor_ref for k, v in outs.items()}
    rt.execute(model.model_ref, dict(refs, extra=refs["a"]), out_refs)
    with pytest.raises(NrtError, match="input 'b' missing"):
        rt.execute(model.model_ref, {"a": refs["a"], "extra": refs["a"]}, out_refs)
    rt.execute(model.model_ref, refs, out_refs)
    np.testing.assert_array_equal(outs["output_0"].numpy(), np.full(4, 3))


def test_fast_path_errors_are_the_full_paths(tmp_path):
    s = np.zeros(4, np.float32)
    model = load(tmp_path, lambda a, b: a + b, s, s)
    ins, outs = _add_io((1, 2))
    wrong = dict(ins, b=NrtpyTensor.from_numpy(np.zeros(4, np.int32)))
    with pytest.raises(ValueError, match="expected dtype float32, got int32"):
        model(wrong, outs)
    with pytest.raises(ValueError, match=r"Unknown input\(s\) \['c'\]"):
        model(dict(ins, c=ins["a"]), outs)
    with pytest.raises(ValueError, match=r"Missing output\(s\) \['output_0'\]"):
        model(ins, {})
    nrtpy.get_nrtpy_singleton().free_tensor(ins["a"])
    with pytest.raises(NrtpyError, match="Tensor 'a' is freed"):
        model(ins, outs)


def test_fast_path_logs_when_info_is_on(tmp_path, caplog):
    s = np.zeros(4, np.float32)
    model = load(tmp_path, lambda a, b: a + b, s, s)
    ins, outs = _add_io((1, 2))
    with caplog.at_level("INFO", logger="nrtpy"):
        model(ins, outs)
    assert any("Executing model" in r.getMessage() for r in caplog.records)
    caplog.clear()
    model(ins, outs)  # level back to WARNING: nothing logged
    assert not [r for r in caplog.records if "Executing model" in r.getMessage()]


def test_fast_path_after_reset_and_from_threads(tmp_path):
    s = np.zeros(4, np.float32)
    model = load(tmp_path, lambda a, b: a + b, s, s)
    errors = []

    def worker(i):
        try:
            for j in range(200):
                ins, outs = _add_io((i, j))
                model(ins, outs)
                got = outs["output_0"].numpy()
                if not np.array_equal(got, np.full(4, i + j, np.float32)):
                    errors.append((i, j, got))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    ins, outs = _add_io((1, 2))
    quiet_reset()
    with pytest.raises(NrtpyError, match="unloaded model"):
        model(ins, outs)
    assert nrtpy._singleton._runtime is None  # no runtime started by it


def test_fast_path_allocates_new_outputs(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = load(tmp_path, lambda a: (a * 2, (a > 2).astype(ml_dtypes.bfloat16)), x)
    ins = {"a": NrtpyTensor.from_numpy(x)}
    first = model(ins)
    second = model(ins)
    assert list(first) == ["output_0", "output_1"]
    assert first["output_0"] is not second["output_0"]
    for out in (first, second):
        assert out["output_0"].shape == (2, 3) and out["output_0"].dtype == np.float32
        assert out["output_1"].dtype == BF16
        assert out["output_0"].name == "output_0"
        np.testing.assert_array_equal(out["output_0"].numpy(), x * 2)
        np.testing.assert_array_equal(out["output_1"].numpy().astype(np.float32),
                                      (x > 2).astype(np.float32))
