"""Unary ops on bfloat16 and float16 by table lookup.

A unary op whose operand is bfloat16 or float16 and whose result has 2
bytes is, from 4096 elements on, a lookup in a table of the kernel's
results over all 65536 codes (src/emulator/kernels/kernel_table16.c).  So every
code through a big op (the table; on the worker pool from 2**18 elements)
must be, bit for bit, what the same op computes on pieces of 2048 (below
the threshold: the kernel itself), NaN payloads included.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor

_counter = itertools.count()
PIECE = 2048


def load(tmp_path, fn, a):
    path = nrtpy.neff.compile(fn, a, path=tmp_path / f"t{next(_counter)}.neff")
    return NrtpyModel.load_from_neff(path)


def execute(model, a):
    (name,) = model.input_tensors_info
    (out,) = model(inputs={name: NrtpyTensor.from_numpy(a, name=name)}).values()
    return out.numpy()


OPS = {"exp": np.exp, "sin": np.sin, "log1p": np.log1p,
       "gelu": nrtpy.neff.gelu, "rsqrt": nrtpy.neff.rsqrt}


@pytest.mark.parametrize("op", OPS, ids=str)
@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16],
                         ids=lambda d: np.dtype(d).name)
def test_every_code_by_table_as_computed(tmp_path, dtype, op):
    fn = OPS[op]
    codes = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    rng = np.random.default_rng(16)
    codes = rng.permutation(codes).view(dtype)
    small = load(tmp_path, fn, codes[:PIECE])
    want = np.concatenate([execute(small, codes[i:i + PIECE])
                           for i in range(0, codes.size, PIECE)])
    big = load(tmp_path, fn, codes.reshape(256, 256))
    got = execute(big, codes.reshape(256, 256))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint16),
                                  want.view(np.uint16))
    # On the worker pool (2**18 elements), results streamed or not.
    tiled = np.tile(codes.reshape(256, 256), (2, 2))
    got = execute(load(tmp_path, fn, tiled), tiled)
    np.testing.assert_array_equal(got.view(np.uint16),
                                  np.tile(want.reshape(256, 256), (2, 2)).view(np.uint16))
    # And near NumPy: the float32 result of the op rounded once.
    if op in ("exp", "sin", "log1p"):
        with np.errstate(all="ignore"):
            ref = fn(codes.astype(np.float32)).astype(dtype)
        finite = np.isfinite(ref.astype(np.float32)) & (np.abs(ref.astype(np.float32)) > 1e-3)
        rel = np.abs(want.astype(np.float64)[finite] / ref.astype(np.float64)[finite] - 1)
        assert rel.max() <= 2.0 ** -7  # one bfloat16 ulp


ROUNDING = {"floor": np.floor, "ceil": np.ceil, "rint": np.rint}


@pytest.mark.parametrize("op", ROUNDING, ids=str)
@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16],
                         ids=lambda d: np.dtype(d).name)
def test_rounding_every_code_is_numpys(tmp_path, dtype, op):
    """floor, ceil and rint of float16 and bfloat16 work on the bits
    (src/emulator/kernels/kernel_round16.c): every code, in a small op, a big one
    and one on the worker pool with streamed results, is NumPy's (float16)
    or ml_dtypes' (bfloat16) value, the sign of zeros included; NaN stays
    NaN."""
    fn = ROUNDING[op]
    codes = np.random.default_rng(17).permutation(
        np.arange(65536, dtype=np.uint32).astype(np.uint16)).view(dtype)
    with np.errstate(all="ignore"):
        want = fn(codes)
    nan = np.isnan(want.astype(np.float32))
    for shape, reps in (((65536,), 1), ((256, 256), 1), ((256, 256), (4, 4))):
        a = np.tile(codes.reshape(shape), reps)
        got = execute(load(tmp_path, fn, a), a)
        assert got.dtype == np.dtype(dtype)
        w = np.tile(want.reshape(shape), reps).view(np.uint16)
        g = got.view(np.uint16)
        n = np.tile(nan.reshape(shape), reps)
        np.testing.assert_array_equal(g[~n], w[~n])
        assert np.isnan(got[n].astype(np.float32)).all()
    # a piece below the table's threshold
    small = codes[:1000]
    got = execute(load(tmp_path, fn, small), small)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan[:1000]],
                                  want.view(np.uint16)[:1000][~nan[:1000]])
