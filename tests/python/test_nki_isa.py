"""nrtpy.nki.isa beyond arithmetic: scans, statistics, top-8, transposes,
gathers and trace-time random values, each against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from nrtpy import nki
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl
from nrtpy.nki.legacy import isa as old_isa

RNG = np.random.default_rng(5)


def rand(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def _unary_isa(body):
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        r = nl.ndarray(a.shape, nl.float32)
        body(r, t)
        nl.store(out, r)
        return out
    return kernel


@pytest.mark.parametrize("op1,ref", [(nl.add, np.add), (nl.multiply, np.multiply),
                                     (nl.maximum, np.maximum), (nl.minimum, np.minimum)],
                         ids=["add", "multiply", "maximum", "minimum"])
def test_tensor_scalar_cumulative(op1, ref):
    a = rand(128, 100, lo=0.5, hi=1.5)
    k = _unary_isa(lambda r, t: nisa.tensor_scalar_cumulative(
        r, t, op0=nl.multiply, op1=op1, imm0=0.75))
    np.testing.assert_allclose(k(a), ref.accumulate(a * 0.75, axis=1), rtol=1e-5)


def test_cumulative_registers_carry_between_instructions():
    a = rand(16, 37)

    def body(r, t):
        nisa.tensor_scalar_cumulative(r, t, nl.add, nl.add, 0.0)
        nisa.tensor_scalar_cumulative(r, t, nl.add, nl.add, 0.0,
                                      reduce_cmd=nisa.reduce_cmd.reduce)
    want = np.cumsum(a, axis=1) + a.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(_unary_isa(body)(a), want, rtol=1e-5, atol=1e-5)


def test_tensor_tensor_scan_is_the_linear_recurrence():
    @nki.jit
    def kernel(a, b, init):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        r = nl.ndarray(a.shape, nl.float32)
        nisa.tensor_tensor_scan(r, nl.load(a), nl.load(b), nl.load(init),
                                nl.multiply, nl.add)
        nl.store(out, r)
        return out
    a, b, init = rand(32, 200, lo=0, hi=1), rand(32, 200), rand(32, 1)
    want = np.empty_like(a)
    prev = init[:, 0].astype(np.float64)
    for i in range(a.shape[1]):
        prev = a[:, i] * prev + b[:, i]
        want[:, i] = prev
    np.testing.assert_allclose(kernel(a, b, init), want, rtol=1e-4, atol=1e-5)


def test_bn_stats_and_bn_aggr_give_mean_and_variance():
    @nki.jit
    def kernel(a):
        out = nl.ndarray((a.shape[0], 2), nl.float32, buffer=nl.shared_hbm)
        stats = nl.ndarray((a.shape[0], 12), nl.float32)
        for i in nl.affine_range(2):
            s = nl.ndarray((a.shape[0], 6), nl.float32)
            nisa.bn_stats(s, nl.load(a[:, i * 300:(i + 1) * 300]))
            stats[:, i * 6:(i + 1) * 6] = s
        r = nl.ndarray((a.shape[0], 2), nl.float32)
        nisa.bn_aggr(r, stats)
        nl.store(out, r)
        return out
    a = rand(64, 600, lo=0, hi=10)
    got = kernel(a)
    np.testing.assert_allclose(got[:, 0], a.mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(got[:, 1], a.var(axis=1), rtol=1e-4)


def test_max8_find_index8_match_replace8():
    @nki.jit
    def kernel(a):
        o_max = nl.ndarray((a.shape[0], 8), nl.float32, buffer=nl.shared_hbm)
        o_idx = nl.ndarray((a.shape[0], 8), nl.uint32, buffer=nl.shared_hbm)
        o_rep = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        m = nl.ndarray((a.shape[0], 8), nl.float32)
        nisa.max8(m, t)
        i = nl.ndarray((a.shape[0], 8), nl.uint32)
        nisa.nc_find_index8(i, t, m)
        r = nl.ndarray(a.shape, nl.float32)
        nisa.nc_match_replace8(r, t, m, -100.0)
        nl.store(o_max, m)
        nl.store(o_idx, i)
        nl.store(o_rep, r)
        return o_max, o_idx, o_rep
    a = rand(32, 50)
    o_max, o_idx, o_rep = kernel(a)
    order = np.argsort(-a, axis=1, kind="stable")[:, :8]
    np.testing.assert_array_equal(o_max, np.take_along_axis(a, order, axis=1))
    np.testing.assert_array_equal(o_idx, order)
    want = a.copy()
    np.put_along_axis(want, order, -100.0, axis=1)
    np.testing.assert_array_equal(o_rep, want)


def test_dma_transpose_and_gather_flattened():
    @nki.jit
    def kernel(a, idx):
        o1 = nl.ndarray((a.shape[1], a.shape[0]), a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(idx.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((a.shape[1], a.shape[0]), a.dtype)
        nisa.dma_transpose(t, a)
        nl.store(o1, t)
        nl.store(o2, nl.gather_flattened(nl.load(a), nl.load(idx)))
        return o1, o2
    a = rand(64, 48)
    idx = RNG.integers(0, 48, (64, 7)).astype(np.uint32)
    o1, o2 = kernel(a, idx)
    np.testing.assert_array_equal(o1, a.T)
    np.testing.assert_array_equal(o2, np.take_along_axis(a, idx.astype(np.int64), axis=1))


def test_rand_is_uniform_and_fixed_at_trace_time():
    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, 256), nl.float32, buffer=nl.shared_hbm)
        nl.random_seed(3)
        nl.store(out, nl.rand((128, 256)))
        return out
    x = np.zeros(1, np.float32)
    r1, r2 = kernel(x), kernel(x)
    assert 0 <= r1.min() and r1.max() < 1 and abs(r1.mean() - 0.5) < 0.02
    np.testing.assert_array_equal(r1, r2)


def test_affine_select_of_the_older_namespace():
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.mgrid[0:a.shape[0], 0:a.shape[1]]
        t = nl.load(a)
        nl.store(out, old_isa.affine_select(iy < ix, t[ix, iy], -7.0))
        return out
    a = rand(40, 40)
    np.testing.assert_array_equal(kernel(a), np.where(np.tri(40, k=-1, dtype=bool), a, -7.0))


def test_select_reduce_and_range_select_with_the_reduce_registers():
    @nki.jit(platform_target="trn2")
    def kernel(pred, a, b0, b1):
        o1 = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        o2 = nl.ndarray((a.shape[0], 1), nl.float32, buffer=nl.shared_hbm)
        o3 = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        o4 = nl.ndarray((a.shape[0], 1), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        r = nl.ndarray(a.shape, nl.float32)
        m = nl.ndarray((a.shape[0], 1), nl.float32)
        nisa.select_reduce(r, nl.load(pred), t, -5.0, reduce_res=m,
                           reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nl.store(o1, r)
        nl.store(o2, m)
        r2 = nl.ndarray(a.shape, nl.float32)
        m2 = nl.ndarray((a.shape[0], 1), nl.float32)
        nisa.range_select(r2, t, nl.greater_equal, nl.less, nl.load(b0), nl.load(b1),
                          reduce_res=m2, range_start=10, on_false_value=-9.0)
        nl.store(o3, r2)
        nl.store(o4, m2)
        return o1, o2, o3, o4
    a = rand(32, 40)
    pred = (RNG.random((32, 40)) < 0.5).astype(np.uint8)
    b0 = RNG.integers(10, 30, (32, 1)).astype(np.float32)
    b1 = b0 + RNG.integers(1, 20, (32, 1)).astype(np.float32)
    o1, o2, o3, o4 = kernel(pred, a, b0, b1)
    want1 = np.where(pred != 0, a, -5.0)
    np.testing.assert_array_equal(o1, want1)
    np.testing.assert_array_equal(o2, want1.max(axis=1, keepdims=True))
    idx = 10 + np.arange(40)[None, :]
    want3 = np.where((idx >= b0) & (idx < b1), a, -9.0)
    np.testing.assert_array_equal(o3, want3)
    np.testing.assert_array_equal(o4, want3.max(axis=1, keepdims=True))


def test_nc_stream_shuffle_within_quadrants():
    mask = [(i * 7) % 32 for i in range(32)]
    mask[3] = 255

    def body(r, t):
        nisa.tensor_copy(r, t)
        nisa.nc_stream_shuffle(r, t, mask)
    a = rand(64, 10)
    want = a.copy()
    for p in range(64):
        if mask[p % 32] != 255:
            want[p] = a[(p // 32) * 32 + mask[p % 32]]
    np.testing.assert_array_equal(_unary_isa(body)(a), want)


def test_dropout_drops_about_prob_and_keeps_the_rest():
    a = rand(128, 512, lo=1, hi=2)
    got = _unary_isa(lambda r, t: nisa.dropout(r, t, 0.25))(a)
    dropped = got == 0
    assert abs(dropped.mean() - 0.25) < 0.01
    np.testing.assert_array_equal(got[~dropped], a[~dropped])


def test_sequence_bounds():
    @nki.jit
    def kernel(ids):
        out = nl.ndarray((1, 2, ids.shape[1]), ids.dtype, buffer=nl.shared_hbm)
        r = nl.ndarray((1, 2, ids.shape[1]), ids.dtype)
        nisa.sequence_bounds(r, nl.load(ids))
        nl.store(out, r)
        return out
    ids = np.array([[0, 0, 3, 3, 3, 5, 7, 7, 0, 2]], np.float32)
    n = ids.shape[1]
    want = np.array([[[n, n, 2, 2, 2, 5, 6, 6, n, 9],
                      [-1, -1, 5, 5, 5, 6, 8, 8, -1, 10]]], np.float32)
    np.testing.assert_array_equal(kernel(ids), want)


def test_local_gather_runs_within_groups_of_16_partitions():
    @nki.jit
    def kernel(src, idx):
        out = nl.ndarray((32, 6 * 2), src.dtype, buffer=nl.shared_hbm)
        r = nl.ndarray((32, 6 * 2), src.dtype)
        nisa.local_gather(r, nl.load(src), nl.load(idx), num_elem_per_idx=2,
                          num_valid_indices=6)
        nl.store(out, r)
        return out
    src = rand(32, 40)
    idx = RNG.integers(0, 39, (32, 1)).astype(np.uint16)
    want = np.empty((32, 6, 2), np.float32)
    for c in range(2):
        starts = idx[c * 16:(c + 1) * 16].flatten(order="F")[:6].astype(np.int64)
        runs = starts[:, None] + np.arange(2)[None, :]
        want[c * 16:(c + 1) * 16] = src[c * 16:(c + 1) * 16][:, runs]
    np.testing.assert_array_equal(kernel(src, idx), want.reshape(32, 12))
