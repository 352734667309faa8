"""Elementwise fusion (src/emulator/program/program_fuse.c): a model loaded with
fusion (the default) gives bit for bit the results of the same model
loaded with NRTPY_EMU_FUSION=0, which runs its ops one by one, across
dtypes, broadcasts and shapes that cut into blocks in every way.  Each test
starts and ends without a runtime (fresh_runtime)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nrtpy.neff
from nrtpy import NrtError, NrtpyModel, NrtpyTensor

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3)


def gelu(x):
    c = np.asarray(0.7978845608, x.dtype)
    k = np.asarray(0.044715, x.dtype)
    return np.asarray(0.5, x.dtype) * x * (np.asarray(1, x.dtype) + np.tanh(c * (x + k * x * x * x)))


def norm(x, mu, g):
    # mu [.., 1] and g [n] broadcast; a scalar constant; an output that the
    # chain also reads; a cast in the middle.
    d = x - mu
    y = d * d * g + np.asarray(1e-3, x.dtype)
    return y, (np.sqrt(np.abs(y)).astype(np.float32) + 1).astype(x.dtype) * d


def select(x, mu, g):
    big = x > mu
    both = np.logical_and(big, g < 0)
    return np.where(both, x * 2, g - x), np.logical_or(both, x == 0)


def powers(x, mu, g):
    # pow with scalar exponents (the kernel's products and sqrt) and with
    # a broadcast one
    y = np.abs(x) + np.abs(g)
    return y ** 0.5 * mu ** 2 - x ** 3 + y ** np.abs(mu)


def ints(a, b, c):
    return (a * 3 + b) % 7 - a // np.asarray(2, a.dtype) + np.maximum(a, c)


FLOAT_SHAPES = [((37, 3001), (37, 1), (3001,)),   # blocks cut the last dimension
                ((4, 5, 2050), (4, 5, 1), (2050,)),
                ((9, 700, 12), (9, 1, 12), (12,)),  # blocks of rows
                ((70001,), (1,), ()),
                ((3,), (), (3,)),                   # one small block
                ((), (), ())]                        # a scalar chain


def arrays(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        if np.dtype(dtype).kind in "iu":
            info = np.iinfo(dtype)
            a = rng.integers(max(info.min, -50), min(info.max, 50), size=shape)
            a[a == 0] = 1
            out.append(np.asarray(a, dtype))
        else:
            out.append(np.asarray(rng.standard_normal(shape) * 2, dtype))
    return out


def run(path, arrs, fusion, monkeypatch):
    monkeypatch.setenv("NRTPY_EMU_FUSION", fusion)
    model = NrtpyModel.load_from_neff(path)
    monkeypatch.delenv("NRTPY_EMU_FUSION")
    outs = model(inputs={k: NrtpyTensor.from_numpy(a, name=k)
                         for k, a in zip(model.input_tensors_info, arrs)})
    return [t.numpy() for t in outs.values()]


def check_same(tmp_path, monkeypatch, fn, arrs):
    path = nrtpy.neff.compile(fn, *arrs, path=tmp_path / "f.neff")
    fused = run(path, arrs, "1", monkeypatch)
    plain = run(path, arrs, "0", monkeypatch)
    assert len(fused) == len(plain)
    for f, p in zip(fused, plain):
        assert f.dtype == p.dtype and f.shape == p.shape
        assert f.tobytes() == p.tobytes()
    return fused


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16, np.float64, E4M3],
                         ids=str)
@pytest.mark.parametrize("shapes", FLOAT_SHAPES, ids=str)
@pytest.mark.parametrize("fn", [gelu, norm, select, powers], ids=lambda f: f.__name__)
def test_float_chains_equal_unfused(fresh_runtime, tmp_path, fn, shapes, dtype):
    arrs = arrays(shapes, dtype, 1)
    if fn is gelu:
        arrs = arrs[:1]
    got = check_same(tmp_path, fresh_runtime, fn, arrs)
    if np.dtype(dtype) == np.float32:
        want = fn(*arrs)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.astype(np.float64), np.asarray(w, np.float64),
                                       rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, BF16, E4M3], ids=str)
@pytest.mark.parametrize("shapes", [((270001,), (1,), ()),
                                    ((3, 90001), (3, 1), (90001,))], ids=str)
@pytest.mark.parametrize("fn", [norm, select], ids=lambda f: f.__name__)
def test_chains_shared_among_threads_equal_unfused(fresh_runtime, tmp_path, fn,
                                                   shapes, dtype):
    # Chains of 2^17 elements and more run on the worker pool, whose tasks
    # claim runs of blocks: 33 blocks here, which runs of 2 do not divide.
    arrs = arrays(shapes, dtype, 6)
    got = check_same(tmp_path, fresh_runtime, fn, arrs)
    if np.dtype(dtype) == np.float32:
        for g, w in zip(got, fn(*arrs)):
            np.testing.assert_allclose(g.astype(np.float64), np.asarray(w, np.float64),
                                       rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=str)
@pytest.mark.parametrize("fn", [norm, select], ids=lambda f: f.__name__)
def test_chains_larger_than_the_cache_equal_unfused(fresh_runtime, tmp_path, fn,
                                                   dtype):
    # Past the last-level cache (32 MiB here) a chain stores the results
    # that no later op of it reads with non-temporal stores, a block at a
    # time; norm's first output is read again by the chain (plain stores),
    # its second is not (streamed); select's two outputs are both last.
    arrs = arrays(((2048, 4096), (2048, 1), (4096,)), dtype, 3)
    got = check_same(tmp_path, fresh_runtime, fn, arrs)
    if np.dtype(dtype) == np.float32:
        for g, w in zip(got, fn(*arrs)):
            np.testing.assert_allclose(g.astype(np.float64), np.asarray(w, np.float64),
                                       rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint16, np.int64])
@pytest.mark.parametrize("shapes", FLOAT_SHAPES[:4], ids=str)
def test_int_chains_equal_unfused(fresh_runtime, tmp_path, shapes, dtype):
    arrs = arrays(shapes, dtype, 2)
    got = check_same(tmp_path, fresh_runtime, ints, arrs)
    np.testing.assert_array_equal(got[0], ints(*arrs))


def layernorm(x, g):
    # mean over the last axis of a chain (joins it), then the chain that
    # uses it, and a variance (a chain ending in a mean).
    mu = np.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = np.mean(d * d, axis=-1, keepdims=True)
    return d / np.sqrt(var + np.asarray(1e-5, x.dtype)) * g


def reductions(x, g):
    # trailing axes of a 3-D chain, all axes, max/min, and an axis that is
    # not trailing (that sum stays on its own).
    y = x * g + 1
    return (np.sum(y * y, axis=(1, 2)), np.max(np.abs(y), axis=None),
            np.min(y - g, axis=-1), np.sum(y * 3, axis=0))


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16, np.float64], ids=str)
@pytest.mark.parametrize("shape", [(64, 2048), (3, 20000), (5, 3), (7, 1)], ids=str)
def test_layernorm_equal_unfused(fresh_runtime, tmp_path, shape, dtype):
    x, g = arrays([shape, shape[-1:]], dtype, 4)
    got = check_same(tmp_path, fresh_runtime, layernorm, [x, g])
    if np.dtype(dtype) == np.float32 and shape[-1] > 1:
        np.testing.assert_allclose(got[0], layernorm(x, g), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int32], ids=str)
@pytest.mark.parametrize("shape", [(4, 30, 500), (2, 3, 70000), (6, 5, 4)], ids=str)
def test_reductions_equal_unfused(fresh_runtime, tmp_path, shape, dtype):
    x, g = arrays([shape, shape[-1:]], dtype, 5)
    got = check_same(tmp_path, fresh_runtime, reductions, [x, g])
    if np.dtype(dtype) == np.int32:
        for g_, w in zip(got, reductions(x, g)):
            np.testing.assert_array_equal(g_, w)


def test_aliased_input_and_output(fresh_runtime, tmp_path):
    # One tensor as an input and an output of a fused chain: the blocked
    # order gives what the ops one by one give.
    x = arrays([(64, 300)], np.float32, 3)[0]
    path = nrtpy.neff.compile(lambda a: (a * 2 + 1) * a, x, path=tmp_path / "a.neff")
    results = []
    for fusion in ("1", "0"):
        fresh_runtime.setenv("NRTPY_EMU_FUSION", fusion)
        model = NrtpyModel.load_from_neff(path)
        t = NrtpyTensor.from_numpy(x)
        model(inputs={"a": t}, outputs={"output_0": t})
        results.append(t.numpy())
    assert results[0].tobytes() == results[1].tobytes()
    np.testing.assert_array_equal(results[0], (x * 2 + 1) * x)


def test_bad_fusion_setting(fresh_runtime, tmp_path):
    x = np.ones(4, np.float32)
    path = nrtpy.neff.compile(lambda a: a + 1, x, path=tmp_path / "b.neff")
    fresh_runtime.setenv("NRTPY_EMU_FUSION", "maybe")
    with pytest.raises(NrtError, match="invalid NRTPY_EMU_FUSION='maybe'"):
        NrtpyModel.load_from_neff(path)


# Row groups (program_fuse_rows.c): a reduction over trailing axes, the
# chain before it and the ops after it that read its result run one block
# of whole rows at a time.

def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def rmsnorm(x, g):
    # widened for the reduction, the input read again after it, the
    # result narrowed; the sum is also an output of the program.
    xf = x.astype(np.float32)
    ss = np.sum(xf * xf, axis=-1)
    r = 1 / np.sqrt(ss.reshape(ss.shape + (1,)) / np.float32(x.shape[-1])
                    + np.float32(1e-6))
    return (xf * r * g.astype(np.float32)).astype(x.dtype), ss


def rmsnorm_twice(x, g):
    # x cast twice, as the HLO compiler writes it: the group computes
    # the second cast's elements once (program_fuse_rows.c, same_as).
    ss = np.sum(x.astype(np.float32) * x.astype(np.float32), axis=-1, keepdims=True)
    r = 1 / np.sqrt(ss / np.float32(x.shape[-1]) + np.float32(1e-6))
    return (x.astype(np.float32) * r * g.astype(np.float32)).astype(x.dtype)


ROW_SHAPES = [(37, 3001),      # blocks of 10 rows, the last of 7
              (4097, 1024),    # shared among the pool's threads
              (3, 5, 700),     # rows of two dimensions
              (7, 1),          # rows of one element
              (2, 65537)]      # rows too wide: no group


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16], ids=str)
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=str)
@pytest.mark.parametrize("fn", [softmax, rmsnorm, rmsnorm_twice, layernorm],
                         ids=lambda f: f.__name__)
def test_row_groups_equal_unfused(fresh_runtime, tmp_path, fn, shape, dtype):
    x, g = arrays([shape, shape[-1:]], dtype, 8)
    arrs = [x] if fn is softmax else [x, g]
    got = check_same(tmp_path, fresh_runtime, fn, arrs)
    if np.dtype(dtype) == np.float32:
        want = fn(*arrs)
        want = want if isinstance(want, tuple) else (want,)
        for g_, w in zip(got, want):
            np.testing.assert_allclose(g_.astype(np.float64), np.asarray(w, np.float64),
                                       rtol=1e-4, atol=1e-4)


def test_row_group_aliased_input_and_output(fresh_runtime, tmp_path):
    # One tensor as the input and the output of a row group: each block
    # reads its rows before it writes them, as the ops one by one do.
    x = arrays([(300, 257)], np.float32, 9)[0]
    path = nrtpy.neff.compile(softmax, x, path=tmp_path / "s.neff")
    results = []
    for fusion in ("1", "0"):
        fresh_runtime.setenv("NRTPY_EMU_FUSION", fusion)
        model = NrtpyModel.load_from_neff(path)
        t = NrtpyTensor.from_numpy(x)
        model(inputs={"x": t}, outputs={"output_0": t})
        results.append(t.numpy())
    assert results[0].tobytes() == results[1].tobytes()
    np.testing.assert_allclose(results[0], softmax(x), rtol=1e-5, atol=1e-6)


# An operand broadcast along the leading row dimensions and full along
# the others (attention's mask [1, T, T] for rows [H, T]): each block
# reads the matching rows of it, and no block crosses from one of its
# repeats into the next, so the masked softmax forms one group.

def masked_softmax(s, m, b):
    lead = s.ndim - m.ndim
    m = m.reshape((1,) * lead + m.shape)
    b = b.reshape((1,) * (s.ndim - b.ndim) + b.shape)
    z = np.where(m > 0, s + b, np.asarray(-1e4, s.dtype))
    return softmax(z)


MASK_SHAPES = [((3, 37, 3001), (37, 3001), (37, 3001)),  # 4 blocks per mask, the last of 7 rows
               ((5, 700, 12), (700, 12), (700, 12)),    # a block is one mask
               ((2, 3, 5, 64), (5, 64), (3, 5, 64)),    # two row dims of extent 1
               ((4, 1, 9, 33), (1, 9, 33), (9, 33)),    # a row dim of extent 1 in both
               ((7, 9, 1), (9, 1), (9, 1))]             # rows of one element


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=str)
@pytest.mark.parametrize("shapes", MASK_SHAPES, ids=str)
def test_row_group_mask_broadcast_along_rows_equal_unfused(fresh_runtime, tmp_path,
                                                           shapes, dtype):
    arrs = arrays(shapes, dtype, 10)
    got = check_same(tmp_path, fresh_runtime, masked_softmax, arrs)[0]
    if np.dtype(dtype) == np.float32:
        np.testing.assert_allclose(got, masked_softmax(*arrs), rtol=1e-5, atol=1e-6)
