"""The older NKI namespace (neuronxcc.nki) over the same tracer:
``jit(mode=...)``, ``simulate_kernel``, ``mgrid``, ``par_dim``, masks and
ISA calls that return tiles, each against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from nrtpy.nki import legacy as nki
from nrtpy.nki.legacy import isa as nisa
from nrtpy.nki.legacy import language as nl

RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.uniform(-3, 3, shape).astype(np.float32)


@nki.jit(mode="simulation")
def _matmul_blocks(a, b):
    # a [256, 128] contracted with b [256, 512] over two K tiles; the
    # stationary's free axis becomes the result's partitions
    out = nl.ndarray([128, 512], dtype=nl.float32, buffer=nl.shared_hbm)
    g = nl.mgrid[0:128, 0:512]
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(2):
        s = nl.load(a[k * 128 + nl.arange(128)[:, None], nl.arange(128)[None, :]])
        m = nl.load(b[k * 128 + g.p, g.x])
        acc += nisa.nc_matmul(s, m)
    nl.store(out[g.p, g.x], acc)
    return out


def test_matmul_with_mgrid_and_psum_accumulation():
    a, b = rand(256, 128), rand(256, 512)
    np.testing.assert_allclose(_matmul_blocks(a, b), a.T @ b, rtol=1e-4, atol=1e-4)


def test_par_dim_blocks_and_simulate_kernel():
    def kernel(a):
        B, N, M = a.shape
        t = nl.ndarray((B, nl.par_dim(N), M), dtype=a.dtype, buffer=nl.sbuf)
        out = nl.ndarray((B, N, M), dtype=a.dtype, buffer=nl.shared_hbm)
        for b in nl.affine_range(B):
            t[b] = nl.load(a[b])
            nl.store(out[b], value=nl.exp(t[b]))
        return out
    a = rand(4, 128, 100)
    np.testing.assert_allclose(nki.simulate_kernel(kernel, a), np.exp(a), rtol=1e-6)


def test_masked_compute_and_store():
    @nki.jit(mode="simulation")
    def kernel(a):
        out = nl.ndarray([64, 256], dtype=a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(512)[None, :]
        t = nl.load(a[i_p, i_f])
        sq = nl.square(t, mask=((i_p < 64) & (i_f < 256)))
        nl.store(out[i_p, i_f], sq[i_p, i_f], mask=((i_p < 64) & (i_f < 256)))
        return out
    a = rand(128, 512)
    np.testing.assert_allclose(kernel(a), np.square(a[:64, :256]), rtol=1e-6)


def test_tile_returning_isa_calls():
    @nki.jit(mode="simulation")
    def kernel(a, c):
        o = [nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm) for _ in range(4)]
        o.append(nl.ndarray((a.shape[1], a.shape[0]), a.dtype, buffer=nl.shared_hbm))
        t, tc = nl.load(a), nl.load(c)
        nl.store(o[0], nisa.activation(op=nl.exp, data=t, bias=tc, scale=0.5))
        nl.store(o[1], nisa.tensor_scalar(t, np.subtract, 1.0, reverse0=True))
        nl.store(o[2], nisa.tensor_tensor(t, t, op=nl.multiply))
        nl.store(o[3], nisa.tensor_copy(t) + nisa.memset((128, 64), 2.0, nl.float32))
        nl.store(o[4], nisa.nc_transpose(t))
        return tuple(o)
    a, c = rand(128, 64), rand(128, 1)
    o0, o1, o2, o3, o4 = kernel(a, c)
    np.testing.assert_allclose(o0, np.exp(a * 0.5 + c), rtol=1e-5)
    np.testing.assert_allclose(o1, 1.0 - a, rtol=1e-6)
    np.testing.assert_allclose(o2, a * a, rtol=1e-6)
    np.testing.assert_allclose(o3, a + 2, rtol=1e-6)
    np.testing.assert_array_equal(o4, a.T)


def test_indirect_load_and_store_with_an_index_tile():
    @nki.jit(mode="simulation")
    def gather(data, idx):
        out = nl.ndarray([64, 512], dtype=data.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(64)[:, None]
        i_f = nl.arange(512)[None, :]
        idx_tile = nl.load(idx[i_p])
        nl.store(out, nl.load(data[idx_tile[i_p, 0], i_f]))
        return out

    @nki.jit(mode="simulation")
    def scatter(src):
        out = nl.ndarray([128, 512], dtype=src.dtype, buffer=nl.shared_hbm)
        nl.store(out, 0.0)
        idx_tile = nisa.iota(2 * nl.arange(64)[:, None], dtype=np.int32)
        nl.store(out[idx_tile, nl.arange(512)[None, :]], value=nl.load(src))
        return out
    data = rand(128, 512)
    idx = (3 * np.arange(64, dtype=np.int32)) % 128
    np.testing.assert_array_equal(gather(data, idx), data[idx])
    src = rand(64, 512)
    out = scatter(src)
    np.testing.assert_array_equal(out[0::2], src)
    np.testing.assert_array_equal(out[1::2], 0)

    bad = idx.copy()
    bad[5] = 400
    with pytest.raises(IndexError, match="index 204800 is out of bounds for "
                                         "axis 0 with size 65536"):
        gather(data, bad)


def test_spmd_grid_with_nc_dims():
    @nki.jit
    def kernel(a):
        b = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i, j = nl.program_id(0), nl.program_id(1)
        nl.store(b[i, j], nl.load(a[i, j]))
        return b
    kernel = nki.jit(kernel, mode="simulation", platform_target="trn2")
    src = rand(4, 2, 1, 1)
    np.testing.assert_array_equal(kernel[nl.spmd_dim(nl.nc(2), 2), 2](src), src)
    np.testing.assert_array_equal(kernel[2 * nl.nc(2), 2](src), src)


def test_benchmark_mode_keeps_latencies():
    @nki.benchmark(warmup=1, iters=3)
    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out
    a = rand(8, 8)
    np.testing.assert_array_equal(kernel(a), a)
    assert kernel.benchmark_result.nc_latency.get_latency_percentile(50) > 0
