"""Loops the device runs (nl.dynamic_range, fori_loop, while_loop with
bounds and conditions in registers): one trace of the body in an emulator
``while``, the index a register that moves accesses when the NEFF runs.
Each against NumPy, with the bound chosen at run time from an input."""

from __future__ import annotations

import numpy as np
import pytest

from nrtpy import NrtError, nki
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl

RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.uniform(-2.0, 2.0, shape).astype(np.float32)


def _load_reg(n):
    """A register holding the int32 in the (1, 1) HBM tensor ``n``."""
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    reg = nisa.register_alloc()
    nisa.register_load(reg, n_sb)
    return reg


@nki.jit
def row_tiles(x, n):
    """Rows tiles 0..n-1 of x, doubled (the rest of out zero)."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    for i in nl.dynamic_range(_load_reg(n)):
        t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128 + nl.arange(128)[:, None],
                                   nl.arange(x.shape[1])[None, :]])
        r = nl.ndarray(t.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=r)
    return out


def _n(v):
    return np.array([[v]], dtype=np.int32)


def test_row_tiles_bound_from_input():
    x = rand(512, 96)
    for n in (4, 1, 3):
        y = row_tiles(x, _n(n))
        np.testing.assert_array_equal(y[:n * 128], 2 * x[:n * 128])


def test_zero_iterations():
    x = rand(256, 8)
    y = row_tiles(x, _n(0))
    assert y.shape == x.shape


def test_out_of_bounds_is_nrt_exec_oob():
    x = rand(256, 8)
    with pytest.raises(NrtError) as info:
        row_tiles(x, _n(3))
    assert info.value.status_name == "NRT_EXEC_OOB"


@nki.jit
def fori_sum(x, lo, hi):
    """The sum of rows lo..hi-1 of x (one row per iteration), with
    fori_loop bounds from inputs, carried in an SBUF tile."""
    out = nl.ndarray((1, x.shape[1]), nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((1, x.shape[1]), nl.float32, buffer=nl.sbuf)

    def body(i):
        row = nl.ndarray((1, x.shape[1]), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=row, src=x.ap([[x.shape[1], 1], [1, x.shape[1]]],
                                        scalar_offset=i, indirect_dim=0))
        nisa.tensor_tensor(dst=acc, data1=acc, data2=row, op=nl.add)

    nl.fori_loop(_load_reg(lo), _load_reg(hi), body)
    nisa.dma_copy(dst=out, src=acc)
    return out


def test_fori_loop_register_bounds():
    x = rand(20, 16)
    for lo, hi in ((0, 20), (3, 11), (7, 7), (9, 2)):
        y = fori_sum(x, _n(lo), _n(hi))
        np.testing.assert_allclose(y[0], x[lo:hi].sum(axis=0) if hi > lo
                                   else np.zeros(16), rtol=1e-5, atol=1e-5)


@nki.jit
def halve_until_small(x, limit):
    """Halve x while its first element is above the limit, counting the
    rounds: a while loop whose exit depends on the data."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    rounds = nl.ndarray((1, 1), nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    lim = nl.ndarray((1, 1), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=lim, src=limit)
    flag = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    count = nl.zeros((1, 1), nl.int32, buffer=nl.sbuf)

    def above():
        nisa.tensor_tensor(dst=flag, data1=t[0:1, 0:1], data2=lim,
                           op=nl.greater)
        reg = nisa.register_alloc()
        nisa.register_load(reg, flag)
        return reg

    def body(r):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=0.5)
        nisa.tensor_scalar(dst=count, data=count, op0=nl.add, operand0=1)
        return above()

    nl.while_loop(above(), body)
    nisa.dma_copy(dst=out, src=t)
    nisa.dma_copy(dst=rounds, src=count)
    return out, rounds


def test_while_loop_data_dependent_exit():
    x = np.full((4, 8), 3.0, np.float32) + rand(4, 8) * 0.01
    x[0, 0] = 100.0
    for limit in (1.0, 30.0, 200.0):
        y, rounds = halve_until_small(x, np.array([[limit]], np.float32))
        k = 0
        while x[0, 0] / 2**k > limit:
            k += 1
        assert int(rounds[0, 0]) == k
        np.testing.assert_allclose(y, x / 2**k, rtol=1e-6)


@nki.jit
def countdown(n):
    """The documented form: the body reloads the register it returns."""
    out = nl.ndarray((1, 1), nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((1, 1), nl.float32, buffer=nl.sbuf)
    count = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=count, src=n)
    one = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=one, value=1)
    reg = nisa.register_alloc()
    nisa.register_load(reg, count)

    def body(r):
        nisa.tensor_scalar(dst=acc, data=acc, op0=nl.add, operand0=2.5)
        nisa.tensor_tensor(dst=count, data1=count, data2=one, op=nl.subtract)
        nisa.register_load(r, count)
        return r

    nl.while_loop(reg, body)
    nisa.dma_copy(dst=out, src=acc)
    return out


def test_while_loop_countdown():
    assert countdown(_n(4))[0, 0] == 10.0
    assert countdown(_n(0))[0, 0] == 0.0


@nki.jit
def dyn_matmul(a_t, b, k_tiles):
    """out = a_t.T @ b over the first k_tiles tiles of K, accumulated in
    PSUM by nc_matmul across iterations of a run-time loop."""
    K, M = a_t.shape
    _, N = b.shape
    out = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), nl.float32, buffer=nl.psum)
    for k in nl.dynamic_range(_load_reg(k_tiles)):
        at = nl.ndarray((128, M), a_t.dtype, buffer=nl.sbuf)
        bt = nl.ndarray((128, N), b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=at, src=a_t[nl.ds(k * 128, 128), :])
        nisa.dma_copy(dst=bt, src=b[nl.ds(k * 128, 128), :])
        nisa.nc_matmul(dst=acc, stationary=at, moving=bt)
    res = nl.ndarray((M, N), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


def test_psum_accumulation_in_dynamic_loop():
    a_t, b = rand(512, 64), rand(512, 100)
    for kt in (4, 1, 2):
        y = dyn_matmul(a_t, b, _n(kt))
        ref = a_t[:kt * 128].T.astype(np.float64) @ b[:kt * 128]
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


@nki.jit
def legacy_psum(a_t, b, k_tiles):
    """The older form: ``psum[...] += nl.matmul(...)`` in the loop."""
    K, M = a_t.shape
    _, N = b.shape
    out = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((M, N), nl.float32, buffer=nl.psum)
    for k in nl.sequential_range(_load_reg(k_tiles)):
        at = nl.load(a_t[k * 128 + nl.arange(128)[:, None], nl.arange(M)[None, :]])
        bt = nl.load(b[k * 128 + nl.arange(128)[:, None], nl.arange(N)[None, :]])
        acc[...] += nl.matmul(at, bt, transpose_x=True)
    nl.store(out, nl.copy(acc))
    return out


def test_psum_plus_equals_in_dynamic_loop():
    a_t, b = rand(384, 32), rand(384, 48)
    y = legacy_psum(a_t, b, _n(3))
    np.testing.assert_allclose(y, a_t.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@nki.jit
def free_axis_offset(x, n):
    """Columns blocks of an SBUF tile at a run-time offset, and
    register_store of the loop index."""
    out = nl.ndarray((128, 4), nl.float32, buffer=nl.shared_hbm)
    idx = nl.ndarray((1, 4), nl.int32, buffer=nl.shared_hbm)
    t = nl.load(x)
    sums = nl.zeros((128, 4), nl.float32, buffer=nl.sbuf)
    seen = nl.zeros((1, 4), nl.int32, buffer=nl.sbuf)
    for j in nl.dynamic_range(_load_reg(n)):
        blk = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=blk, data=t[:, nl.ds(j * 16, 16)], op=nl.add,
                           axis=1)
        nisa.tensor_copy(dst=sums[:, j], src=blk)
        nisa.register_store(seen.ap([[4, 1], [1, 1]], scalar_offset=j,
                                    indirect_dim=1), j)
    nl.store(out, sums)
    nl.store(idx, seen)
    return out, idx


def test_free_axis_offset_and_register_store():
    x = rand(128, 64)
    out, idx = free_axis_offset(x, _n(3))
    ref = x.reshape(128, 4, 16).sum(axis=2)
    np.testing.assert_allclose(out[:, :3], ref[:, :3], rtol=1e-5, atol=1e-5)
    assert (out[:, 3] == 0).all()
    assert idx.tolist() == [[0, 1, 2, 0]]


@nki.jit
def nested(x, n, m):
    """Nested run-time loops: block (i, j) of 32 x 32 of x, scaled by its
    position, into out."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    mr = _load_reg(m)
    for i in nl.dynamic_range(_load_reg(n)):
        for j in nl.dynamic_range(mr):
            t = nl.load(x[nl.ds(i * 32, 32), nl.ds(j * 32, 32)])
            nl.store(out[nl.ds(i * 32, 32), nl.ds(j * 32, 32)], t)
    return out


def test_nested_dynamic_loops():
    x = rand(96, 128)
    y = nested(x, _n(2), _n(3))
    np.testing.assert_array_equal(y[:64, :96], x[:64, :96])


def test_register_move_and_static_bounds_unroll():
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        lo = nisa.register_alloc(1)
        hi = nisa.register_alloc()
        nisa.register_move(hi, 3)
        for i in nl.dynamic_range(lo, hi):
            nl.store(out[i], nl.load(x[i]))
        z = nl.zeros((1, x.shape[1]), x.dtype)
        for i in nl.dynamic_range(1):  # int bounds: unrolled, i an int
            assert isinstance(i, int)
            nl.store(out[0:1, :], z)
        return out
    x = rand(4, 8)
    y = k(x)
    np.testing.assert_array_equal(y[1:3], x[1:3])
    np.testing.assert_array_equal(y[0], 0)


def test_register_in_python_control_flow_is_a_type_error():
    @nki.jit
    def k(x):
        r = nisa.register_alloc(1)
        if r:
            pass
        return x
    with pytest.raises(TypeError, match="register"):
        k(rand(2, 2))


def test_loop_index_is_read_only():
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        for i in nl.dynamic_range(nisa.register_alloc(2)):
            nisa.register_move(i, 0)
        nl.store(out, nl.load(x))
        return out
    with pytest.raises(nki.NkiCompileError, match="read-only"):
        k(rand(2, 2))


def test_dynamic_write_out_of_bounds():
    @nki.jit
    def k(x, n):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x[0:1, :])
        for i in nl.dynamic_range(_load_reg(n)):
            nl.store(out[i, :], t)
        return out
    x = rand(4, 8)
    y = k(x, _n(4))
    np.testing.assert_array_equal(y, np.broadcast_to(x[0], (4, 8)))
    with pytest.raises(NrtError) as info:
        k(x, _n(5))
    assert info.value.status_name == "NRT_EXEC_OOB"


def test_break_out_of_a_dynamic_loop_is_an_error():
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        for i in nl.dynamic_range(nisa.register_alloc(2)):
            nl.store(out[i], nl.load(x[i]))
            break
        return out
    with pytest.raises(RuntimeError, match="break or return"):
        k(rand(2, 2))
