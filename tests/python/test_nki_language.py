"""nrtpy.nki (the current namespace): kernels traced, compiled to NEFFs and
run on the emulated device, each result against NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nrtpy import nki
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(dtype)


def _binary_kernel(fn):
    @nki.jit
    def kernel(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, fn(nl.load(a), nl.load(b)))
        return out
    return kernel


BINARY = [
    (nl.add, np.add), (nl.subtract, np.subtract), (nl.multiply, np.multiply),
    (nl.divide, np.divide), (nl.maximum, np.maximum), (nl.minimum, np.minimum),
    (nl.power, lambda a, b: np.power(np.abs(a), b)),
    (nl.abs_max, lambda a, b: np.maximum(np.abs(a), np.abs(b))),
]


@pytest.mark.parametrize("nki_fn,ref", BINARY, ids=lambda f: getattr(f, "__name__", "ref"))
def test_binary_float32(nki_fn, ref):
    a, b = rand(128, 256), rand(128, 256)
    if nki_fn is nl.power:
        a = np.abs(a) + 0.1
    got = _binary_kernel(nki_fn)(a, b)
    np.testing.assert_allclose(got, ref(a, b), rtol=2e-6, atol=1e-6)


def test_binary_bfloat16_computes_in_float32_and_rounds_once():
    a = rand(128, 64, dtype=ml_dtypes.bfloat16)
    b = rand(128, 64, dtype=ml_dtypes.bfloat16)
    got = _binary_kernel(nl.multiply)(a, b)
    want = (a.astype(np.float32) * b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = [
    (nl.exp, np.exp), (nl.tanh, np.tanh), (nl.sigmoid, _sigmoid),
    (nl.relu, lambda x: np.maximum(x, 0)), (nl.square, np.square),
    (nl.abs, np.abs), (nl.negative, np.negative), (nl.sin, np.sin),
    (nl.cos, np.cos), (nl.silu, lambda x: x * _sigmoid(x)),
    (nl.softplus, lambda x: np.log1p(np.exp(x))),
    (nl.gelu_apprx_tanh, lambda x: 0.5 * x * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    (nl.floor, np.floor), (nl.ceil, np.ceil), (nl.sign, np.sign),
    (nl.trunc, np.trunc),
]
POSITIVE = [(nl.log, np.log), (nl.sqrt, np.sqrt),
            (nl.rsqrt, lambda x: 1 / np.sqrt(x)), (nl.reciprocal, np.reciprocal)]


def _unary_kernel(fn):
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, fn(nl.load(a)))
        return out
    return kernel


@pytest.mark.parametrize("nki_fn,ref", UNARY + POSITIVE,
                         ids=lambda f: getattr(f, "__name__", "ref"))
def test_unary(nki_fn, ref):
    a = rand(128, 200)
    if (nki_fn, ref) in POSITIVE:
        a = np.abs(a) + 0.05
    np.testing.assert_allclose(_unary_kernel(nki_fn)(a), ref(a), rtol=1e-5, atol=1e-6)


def test_gelu_exact():
    from math import erf
    a = rand(64, 32, lo=-4, hi=4)
    want = np.vectorize(lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))))(a.astype(np.float64))
    np.testing.assert_allclose(_unary_kernel(nl.gelu)(a), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,ref", [(nl.sum, np.sum), (nl.max, np.max),
                                    (nl.min, np.min), (nl.mean, np.mean)],
                         ids=["sum", "max", "min", "mean"])
def test_reductions_along_free_axis(fn, ref):
    @nki.jit
    def kernel(a):
        out = nl.ndarray((a.shape[0], 1), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, fn(nl.load(a), axis=1, keepdims=True))
        return out
    a = rand(128, 300)
    np.testing.assert_allclose(kernel(a), ref(a, axis=1, keepdims=True), rtol=1e-5)


def test_matmul_accumulates_in_psum_over_k_tiles():
    @nki.jit
    def kernel(a_t, b):  # a_t [K, M], b [K, N]
        out = nl.ndarray((a_t.shape[1], b.shape[1]), nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((a_t.shape[1], b.shape[1]), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(a_t.shape[0] // 128):
            acc += nisa.nc_matmul(nl.ndarray(acc.shape, nl.float32, buffer=nl.psum),
                                  nl.load(a_t[k * 128:(k + 1) * 128, :]),
                                  nl.load(b[k * 128:(k + 1) * 128, :]))
        nl.store(out, acc)
        return out
    a_t, b = rand(384, 128), rand(384, 512)
    np.testing.assert_allclose(kernel(a_t, b), a_t.T @ b, rtol=1e-4, atol=1e-4)


def test_nc_matmul_into_dst_accumulates_after_the_first_write():
    @nki.jit
    def kernel(a_t, b):
        out = nl.ndarray((64, 96), nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((64, 96), nl.float32, buffer=nl.psum)
        for k in nl.sequential_range(2):
            nisa.nc_matmul(acc, nl.load(a_t[k * 128:(k + 1) * 128, :]),
                           nl.load(b[k * 128:(k + 1) * 128, :]))
        nl.store(out, acc)
        return out
    a_t, b = rand(256, 64), rand(256, 96)
    np.testing.assert_allclose(kernel(a_t, b), a_t.T @ b, rtol=1e-4, atol=1e-4)


def test_bf16_matmul_accumulates_in_float32():
    @nki.jit
    def kernel(x, y):
        out = nl.ndarray((x.shape[0], y.shape[1]), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.matmul(nl.load(x), nl.load(y)))
        return out
    x = rand(128, 128, dtype=ml_dtypes.bfloat16)
    y = rand(128, 256, dtype=ml_dtypes.bfloat16)
    want = x.astype(np.float32) @ y.astype(np.float32)
    np.testing.assert_allclose(kernel(x, y), want, rtol=1e-5, atol=1e-4)


def test_transposes():
    @nki.jit
    def kernel(a):
        o1 = nl.ndarray((a.shape[1], a.shape[0]), a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray((a.shape[1], a.shape[0]), a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        p = nl.ndarray((a.shape[1], a.shape[0]), nl.float32, buffer=nl.psum)
        nisa.nc_transpose(p, t)
        nl.store(o1, p)
        nl.store(o2, nl.transpose(t))
        return o1, o2
    a = rand(96, 120)
    o1, o2 = kernel(a)
    np.testing.assert_array_equal(o1, a.T)
    np.testing.assert_array_equal(o2, a.T)


def test_indexing_arange_mgrid_steps_and_transposed_access():
    @nki.jit
    def kernel(a):
        o1 = nl.ndarray((64, 100), a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray((100, 64), a.dtype, buffer=nl.shared_hbm)
        o3 = nl.ndarray((32, 50), a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(64)[:, None]
        i_f = nl.arange(100)[None, :]
        nl.store(o1, nl.load(a[2 * i_p + 1, i_f + 28]))
        g = nl.mgrid[0:100, 0:64]
        nl.store(o2[g.p, g.x], nl.load(a[g.x, g.p]))  # a gather, transposed
        nl.store(o3, nl.load(a[0:128:4, 3:103:2]))
        return o1, o2, o3
    a = rand(128, 128)
    o1, o2, o3 = kernel(a)
    np.testing.assert_array_equal(o1, a[1:128:2, 28:128])
    np.testing.assert_array_equal(o2, a[:64, :100].T)
    np.testing.assert_array_equal(o3, a[0:128:4, 3:103:2])


def test_partial_stores_and_masks():
    @nki.jit
    def kernel(a):
        out = nl.ndarray((100, 300), a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(3):  # tiles of 128 rows over 100: masked
            i_p = nl.arange(128)[:, None] + 0
            i_f = nl.arange(100)[None, :] + 100 * i
            t = nl.load(a[i_p, i_f], mask=(i_p < 100))
            nl.store(out[i_p, i_f], nl.multiply(t, 2.0), mask=(i_p < 100))
        return out
    a = rand(100, 300)
    np.testing.assert_array_equal(kernel(a), a * 2)


def test_out_of_bounds_access_without_a_mask_is_a_compile_error():
    @nki.jit
    def kernel(a):
        out = nl.ndarray((100, 100), a.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        nl.store(out, nl.load(a[i_p, nl.arange(100)[None, :]])[0:100, :])
        return out
    with pytest.raises(nki.NkiCompileError, match="outside the tensor"):
        kernel(rand(100, 100))


def test_spmd_grid_and_program_id():
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        i, j = nl.program_id(0), nl.program_id(1)
        assert nl.num_programs(0) == 3 and nl.num_programs(1) == 2
        nl.store(out[i, j], nl.add(nl.load(a[i, j]), 10.0 * i + j))
        return out
    a = rand(3, 2, 16, 8)
    want = a + (10.0 * np.arange(3)[:, None, None, None] + np.arange(2)[None, :, None, None])
    np.testing.assert_allclose(kernel[3, 2](a), want, rtol=1e-6)


def test_copy_astype_where_and_constants():
    @nki.jit
    def kernel(a):
        o1 = nl.ndarray(a.shape, nl.bfloat16, buffer=nl.shared_hbm)
        o2 = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(o1, nl.copy(t, dtype=nl.bfloat16))
        nl.store(o2, nl.where(nl.greater(t, 0.0), t, nl.full(a.shape, -1.0, nl.float32)))
        return o1, o2
    a = rand(128, 40)
    o1, o2 = kernel(a)
    np.testing.assert_array_equal(o1, a.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(o2, np.where(a > 0, a, -1.0))


def test_activation_tensor_scalar_tensor_tensor_reduce():
    @nki.jit
    def kernel(a, b, bias):
        o1 = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        o3 = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        o4 = nl.ndarray((a.shape[0], 1), a.dtype, buffer=nl.shared_hbm)
        ta, tb, tbias = nl.load(a), nl.load(b), nl.load(bias)
        r = nl.ndarray(a.shape, a.dtype)
        nisa.activation(r, nl.tanh, ta, bias=tbias, scale=0.5)
        nl.store(o1, r)
        s = nl.ndarray(a.shape, a.dtype)
        nisa.tensor_scalar(s, ta, nl.multiply, 3.0, op1=nl.subtract, operand1=tbias,
                           reverse1=True)
        nl.store(o2, s)
        t = nl.ndarray(a.shape, a.dtype)
        nisa.tensor_tensor(t, ta, tb, nl.maximum)
        nl.store(o3, t)
        m = nl.ndarray((a.shape[0], 1), a.dtype)
        nisa.tensor_reduce(m, nl.add, ta, axis=1, keepdims=True)
        nl.store(o4, m)
        return o1, o2, o3, o4
    a, b, bias = rand(128, 64), rand(128, 64), rand(128, 1)
    o1, o2, o3, o4 = kernel(a, b, bias)
    np.testing.assert_allclose(o1, np.tanh(a * 0.5 + bias), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o2, bias - a * 3.0, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(o3, np.maximum(a, b))
    np.testing.assert_allclose(o4, a.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_iota_and_memset():
    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, 8), nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 8), nl.int32)
        nisa.iota(t, [[1, 8]], offset=5, channel_multiplier=100)
        nl.store(out, t)
        return out
    want = 5 + np.arange(128)[:, None] * 100 + np.arange(8)[None, :]
    np.testing.assert_array_equal(kernel(np.zeros(1, np.float32)), want)


def test_traced_once_per_signature():
    calls = []

    @nki.jit
    def kernel(a, scale):
        calls.append(1)
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(a), scale))
        return out
    a = rand(8, 8)
    for _ in range(3):
        np.testing.assert_allclose(kernel(a, 2.0), a * 2)
    assert len(calls) == 1
    np.testing.assert_allclose(kernel(a, 3.0), a * 3)  # a new constant
    np.testing.assert_allclose(kernel(rand(16, 8), 3.0).shape, (16, 8))
    assert len(calls) == 3


def test_simulate_runs_plain_functions_too():
    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(a)))
        return out
    a = rand(4, 4)
    np.testing.assert_allclose(nki.simulate(kernel)(a), np.exp(a), rtol=1e-6)


@pytest.mark.parametrize("key", [
    (slice(0, 3), 2, slice(1, 6, 2)), (1, slice(None), 3), (2,), (Ellipsis, 1),
    (np.arange(3)[:, None], np.arange(4)[None, :]), (slice(None, None, -2), 0),
    (np.arange(4)[:, None, None], 1, np.arange(6)[None, None, :]),
], ids=str)
def test_views_select_what_numpy_selects(key):
    # the flat indices of a view, computed from the key alone
    from nrtpy.nki._core import _select
    shape = (4, 5, 6)
    got, oob = _select(shape, key)
    np.testing.assert_array_equal(got, np.arange(120).reshape(shape)[key])
    assert oob is None


def test_benchmark_gives_the_models_latency_figures():
    import nrtpy

    def add(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(b)))
        return out

    a, b = rand(128, 64), rand(128, 64)
    for kernel, mode in ((add, "device"), (nki.jit(add), "host")):
        res = nki.benchmark(kernel, warmup=1, iters=4, mode=mode)(a, b)
        assert isinstance(res, nrtpy.BenchmarkResult)
        assert res.iterations == 4 and res.warmup_iterations == 1
        assert res.mode == mode and len(res.durations_ms) == 4
        assert 0 < res.min_ms <= res.p50_ms <= res.p99_ms <= res.max_ms
    with pytest.raises(TypeError, match="iters must be an int"):
        nki.benchmark(add, iters=2.0)
    with pytest.raises(ValueError, match="iters must be at least 1"):
        nki.benchmark(add, iters=0)
    with pytest.raises(ValueError, match="mode"):
        nki.benchmark(add, mode="cycles")


def test_dynamic_range_and_fori_loop_with_int_bounds():
    # Bounds known when the kernel is traced: the loops unroll, and every
    # row block is doubled exactly once.
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        for i in nl.dynamic_range(2):
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], nl.add(t, t))

        def body(i):
            t = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], nl.multiply(t, 2.0))

        nl.fori_loop(2, 4, body)
        return out
    a = rand(512, 64)
    np.testing.assert_array_equal(kernel(a), a * 2)


def test_fori_loop_refuses_bad_arguments():
    @nki.jit
    def kernel(a):
        nl.fori_loop(0, 2, "not a function")
        return a
    with pytest.raises(TypeError, match="body_fun must be callable"):
        kernel(rand(128, 4))

    @nki.jit
    def kernel2(a):
        nl.fori_loop(0, 2, lambda i: None, step=0)
        return a
    with pytest.raises(ValueError, match="step must be a positive int"):
        kernel2(rand(128, 4))
