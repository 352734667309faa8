"""Large elementwise and layout ops on the worker pool: the same results
as computed one call at a time.

An elementwise op that is no part of a fused chain runs on the pool when
its out has 2**16 elements or more, cut into pieces along its leading
dimensions; layout ops (transpose, slice, broadcast_to, concatenate,
reshape) do the same from 256 KiB.  So each case here runs the op big and
compares it with NumPy, or with the same op run small (below every
threshold: one kernel call), bit for bit.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor

_counter = itertools.count()
FP8 = [ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
       ml_dtypes.float8_e3m4]
RNG = np.random.default_rng(10)


def run(tmp_path, fn, *arrays):
    """Compile `fn` for `arrays` and run it on the emulator: its output."""
    path = nrtpy.neff.compile(fn, *arrays, path=tmp_path / f"p{next(_counter)}.neff")
    model = NrtpyModel.load_from_neff(path)
    inputs = {name: NrtpyTensor.from_numpy(a, name=name)
              for name, a in zip(model.input_tensors_info, arrays)}
    (out,) = model(inputs=inputs).values()
    return out.numpy()


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


# Shapes that the pool cuts along the last dimension at odd places, along
# the first, or both; operands broadcast by row, column and scalar.
SPLIT_SHAPES = [(3, 70001), (1, 200003), (257, 1031), (5, 7, 3001)]


@pytest.mark.parametrize("shape", SPLIT_SHAPES, ids=str)
def test_split_elementwise_matches_numpy(tmp_path, shape):
    a = RNG.standard_normal(shape).astype(np.float32)
    b = RNG.standard_normal(shape).astype(np.float32)
    row = RNG.standard_normal(shape[-1:]).astype(np.float32)
    col = RNG.standard_normal(shape[:-1] + (1,)).astype(np.float32)
    i = RNG.integers(-2**31, 2**31 - 1, shape, dtype=np.int32)
    j = RNG.integers(-2**31, 2**31 - 1, shape, dtype=np.int32)
    c = a > 0
    cases = [
        (lambda x, y: x + y, a, b),
        (lambda x, y: x * y, a, row),
        (lambda x, y: np.maximum(x, y), col, a),
        (lambda x: x * np.float32(3.0), a),
        (lambda x, y: x < y, a, row),
        (lambda x, y: x * y, i, j),  # int32 wraps
        (lambda x, y: x ^ y, i, j),
        (lambda x: x.astype(ml_dtypes.bfloat16), a),
        (np.floor, a),
        (lambda k, x, y: np.where(k, x, y), c, a, b),
    ]
    for fn, *args in cases:
        got = run(tmp_path, fn, *args)
        want = np.asarray(fn(*args))
        np.testing.assert_array_equal(bits(got), bits(want.astype(got.dtype)))


@pytest.mark.parametrize("shape", [(3, 30001), (7, 20011)], ids=str)
def test_split_pow_matches_rows(tmp_path, shape):
    """pow takes another path for a one-element exponent: no piece of a
    big op may reach the kernel as one element where the whole did not."""
    a = RNG.uniform(0.5, 2.0, shape).astype(np.float32)
    b = RNG.uniform(-3.0, 3.0, shape).astype(np.float32)
    b[:, ::7] = 3.0
    got = run(tmp_path, np.power, a, b)
    rows = np.stack([run(tmp_path, np.power, a[r], b[r]) for r in range(shape[0])])
    np.testing.assert_array_equal(bits(got), bits(rows))


LAYOUT_DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, FP8[0], np.int32]


@pytest.mark.parametrize("dtype", LAYOUT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_split_layout_matches_numpy(tmp_path, dtype):
    a = RNG.integers(0, 100, (1031, 517)).astype(np.float32).astype(dtype)
    b = RNG.integers(0, 100, (1031, 211)).astype(np.float32).astype(dtype)
    r = RNG.integers(0, 100, (1, 257003)).astype(np.float32).astype(dtype)
    cases = [
        (lambda x: x.T, a),
        (lambda x: x[1:, ::2], a),
        (lambda x: x[::3, 5:], a),
        (lambda x: x.reshape(517, 1031), a),
        (lambda x: np.broadcast_to(x[:, :517], (1031, 517)), a[:1]),
        (lambda x, y: np.concatenate([x, y], axis=1), a, b),
        (lambda x, y: np.concatenate([x.T, y.T], axis=0), a, b),
        (lambda x: np.concatenate([x, x]), r),
        (lambda x: np.broadcast_to(x, (3, 257003)), r),
    ]
    for fn, *args in cases:
        got = run(tmp_path, fn, *args)
        np.testing.assert_array_equal(bits(got), bits(np.asarray(fn(*args))))

