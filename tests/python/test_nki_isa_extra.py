"""nki.isa: scalar_tensor_tensor, tensor_scalar_reduce, exponential,
activate2, affine_select, nonzero_with_count and topk, each against a NumPy
reference (and the reduce registers they share)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nrtpy import nki
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl

RNG = np.random.default_rng(11)


def rand(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def hbm(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype, buffer=nl.shared_hbm)


@pytest.mark.parametrize("op0,op1,rev0,rev1,ref", [
    (nl.multiply, nl.add, False, False, lambda d, s, t: d * s + t),
    (nl.subtract, nl.maximum, True, False, lambda d, s, t: np.maximum(s - d, t)),
    (nl.add, nl.subtract, False, True, lambda d, s, t: t - (d + s)),
])
@pytest.mark.parametrize("scalar", [True, False], ids=["scalar", "per-partition"])
def test_scalar_tensor_tensor(op0, op1, rev0, rev1, ref, scalar):
    a, b, s = rand(128, 48), rand(128, 48), rand(128, 1)

    @nki.jit
    def kernel(a, b, s):
        out = hbm(a.shape)
        r = nl.ndarray(a.shape, nl.float32)
        nisa.scalar_tensor_tensor(dst=r, data=nl.load(a), op0=op0,
                                  operand0=1.5 if scalar else nl.load(s),
                                  op1=op1, operand1=nl.load(b),
                                  reverse0=rev0, reverse1=rev1)
        nl.store(out, r)
        return out
    s_ref = np.float32(1.5) if scalar else s
    np.testing.assert_allclose(kernel(a, b, s), ref(a, s_ref, b), rtol=1e-6, atol=1e-6)


def test_scalar_tensor_tensor_refuses_bitvec_operators():
    @nki.jit
    def kernel(a):
        t = nl.load(a)
        r = nl.ndarray(a.shape, nl.int32)
        nisa.scalar_tensor_tensor(dst=r, data=t, op0=nl.bitwise_and, operand0=3,
                                  op1=nl.add, operand1=t)
        return r
    with pytest.raises(nki.NkiCompileError, match="bitvec operator bitwise_and"):
        kernel(np.ones((8, 4), np.int32))


@pytest.mark.parametrize("reduce_op,ref", [(nl.add, np.sum), (nl.maximum, np.max),
                                           (nl.minimum, np.min),
                                           (nl.multiply, np.prod)],
                         ids=["add", "max", "min", "multiply"])
def test_tensor_scalar_reduce(reduce_op, ref):
    a = rand(128, 3, 16, lo=0.5, hi=1.5)

    @nki.jit
    def kernel(a):
        out, red = hbm(a.shape), hbm((a.shape[0], 1))
        r = nl.ndarray(a.shape, nl.float32)
        rr = nl.ndarray((a.shape[0], 1), nl.float32)
        nisa.tensor_scalar_reduce(dst=r, data=nl.load(a), op0=nl.multiply, operand0=0.5,
                                  reduce_op=reduce_op, reduce_res=rr)
        nl.store(out, r)
        nl.store(red, rr)
        return out, red
    out, red = kernel(a)
    np.testing.assert_allclose(out, a * 0.5, rtol=1e-6)
    np.testing.assert_allclose(red[:, 0], ref((a * 0.5).reshape(128, -1), axis=1),
                               rtol=1e-5)


def test_registers_chain_across_instructions():
    # tensor_scalar_reduce, then exponential reducing on top, load_reduce,
    # negation; the registers are the vector engine's, shared
    a, b = rand(128, 32), rand(128, 32)
    init = rand(128, 1)

    @nki.jit
    def kernel(a, b, init):
        red1, red2, red3 = hbm((128, 1)), hbm((128, 1)), hbm((128, 1))
        x, y = nl.load(a), nl.load(b)
        t = nl.ndarray(a.shape, nl.float32)
        nisa.tensor_scalar_reduce(dst=t, data=x, op0=nl.abs, operand0=None,
                                  reduce_op=nl.add)                  # regs = sum|a|
        e = nl.ndarray(a.shape, nl.float32)
        r1 = nl.ndarray((128, 1), nl.float32)
        nisa.exponential(dst=e, src=y, max_value=1.0, reduce_res=r1,
                         reduce_cmd=nisa.reduce_cmd.reduce)          # += sum exp(b-1)
        r2 = nl.ndarray((128, 1), nl.float32)
        nisa.exponential(dst=e, src=y, max_value=nl.load(init), reduce_res=r2,
                         reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=nl.load(init))
        r3 = nl.ndarray((128, 1), nl.float32)
        nisa.tensor_scalar_reduce(dst=t, data=x, op0=nl.add, operand0=1.0,
                                  reduce_op=nl.maximum, reduce_res=r3,
                                  reduce_res_negate=True)
        nl.store(red1, r1)
        nl.store(red2, r2)
        nl.store(red3, r3)
        return red1, red2, red3
    r1, r2, r3 = kernel(a, b, init)
    np.testing.assert_allclose(r1[:, 0], np.abs(a).sum(1) + np.exp(b - 1).sum(1), rtol=1e-5)
    np.testing.assert_allclose(r2[:, 0], init[:, 0] + np.exp(b - init).sum(1), rtol=1e-5)
    np.testing.assert_allclose(r3[:, 0], -(a + 1).max(1), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_exponential(dtype):
    a = rand(64, 40)
    m = rand(64, 1)

    @nki.jit
    def kernel(a, m):
        out = hbm(a.shape, dtype)
        e = nl.ndarray(a.shape, dtype)
        nisa.exponential(dst=e, src=nl.load(a), max_value=nl.load(m))
        nl.store(out, e)
        return out
    got = kernel(a, m)
    assert got.dtype == dtype
    # (the emulator's exp is within an ulp of NumPy's, then rounded once)
    np.testing.assert_allclose(got.astype(np.float32), np.exp(a - m),
                               rtol=1e-6 if dtype == np.float32 else 2 ** -8)


@pytest.mark.parametrize("op,op0,op1,ref", [
    (nl.gelu_apprx_tanh, nl.multiply, nl.add,
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    (nl.exp, nl.subtract, nl.bypass, np.exp),
    (nl.tanh, nl.bypass, nl.bypass, np.tanh),
])
def test_activate2(op, op0, op1, ref):
    a = rand(128, 24)

    @nki.jit
    def kernel(a):
        out, red = hbm(a.shape), hbm((128, 1))
        r = nl.ndarray(a.shape, nl.float32)
        rr = nl.ndarray((128, 1), nl.float32)
        nisa.activate2(dst=r, op=op, data=nl.load(a), imm0=2.0, imm1=0.5, op0=op0,
                       op1=op1, reduce_op=nl.add, reduce_res=rr,
                       reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nl.store(out, r)
        nl.store(red, rr)
        return out, red
    x = a * 2 + 0.5 if op1 is nl.add else (a - 2 if op0 is nl.subtract else a)
    out, red = kernel(a)
    np.testing.assert_allclose(out, ref(x), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(red[:, 0], out.sum(1), rtol=1e-5, atol=1e-5)


def test_activate2_reverse_and_what_is_not_implemented():
    a = rand(32, 16)

    @nki.jit
    def kernel(a, relu_param):
        out = hbm(a.shape)
        r = nl.ndarray(a.shape, nl.float32)
        nisa.activate2(dst=r, op=nl.relu, data=nl.load(a), imm0=1.0, imm1=3.0,
                       op0=nl.subtract, op1=nl.multiply, reverse0=True,
                       relu_param=relu_param)
        nl.store(out, r)
        return out
    np.testing.assert_allclose(kernel(a, 0.0), np.maximum((1.0 - a) * 3.0, 0), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="relu_param"):
        kernel(a, 0.25)


@pytest.mark.parametrize("cmp,ref", [(nl.greater_equal, np.greater_equal),
                                     (nl.equal, np.equal), (nl.less, np.less)])
def test_affine_select_causal_mask(cmp, ref):
    a = rand(128, 128)

    @nki.jit
    def kernel(a):
        out = hbm(a.shape)
        r = nl.ndarray(a.shape, nl.float32)
        # value = p - j (+0): p >= j keeps the element (a causal mask)
        nisa.affine_select(dst=r, pattern=[[-1, 128]], channel_multiplier=1,
                           on_true_tile=nl.load(a), on_false_value=-9984.0,
                           cmp_op=cmp)
        nl.store(out, r)
        return out
    p, j = np.mgrid[0:128, 0:128]
    np.testing.assert_array_equal(kernel(a), np.where(ref(p - j, 0), a, np.float32(-9984.0)))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_nonzero_with_count(dtype):
    src = (RNG.random((128, 24)) < 0.3).astype(dtype) * RNG.integers(1, 9, (128, 24)).astype(dtype)
    src[16] = 0  # none
    src[32] = 1  # all

    @nki.jit
    def kernel(src):
        out = hbm((128, 25), nl.int32)
        d = nl.ndarray((128, 25), nl.int32)
        nisa.memset(dst=d, value=7)
        nisa.nonzero_with_count(dst=d, src=nl.load(src), index_offset=16, padding_val=-1)
        nl.store(out, d)
        return out
    got = kernel(src)
    want = np.full((128, 25), 7, np.int32)
    for p in range(0, 128, 16):
        nz = np.flatnonzero(src[p]) + 16
        want[p, :nz.size] = nz
        want[p, nz.size:24] = -1
        want[p, 24] = nz.size
    np.testing.assert_array_equal(got, want)


def test_topk():
    n, k, p = 42, 8, 32
    x = -(-n // 16)
    src = RNG.standard_normal((p, x)).astype(ml_dtypes.bfloat16)
    src[0, 1] = src[3, 0]  # a tie: elements 3 and 16 of group 0

    @nki.jit
    def kernel(src):
        vo, io = hbm((p, k), nl.bfloat16), hbm((p, k), nl.uint32)
        v = nl.ndarray((p, k), nl.bfloat16)
        i = nl.ndarray((p, k), nl.uint32)
        nisa.topk(val_dst=v, idx_dst=i, src=nl.load(src), n=n)
        nl.store(vo, v)
        nl.store(io, i)
        return vo, io
    vals, idx = kernel(src)
    for g in range(p // 16):
        e = np.arange(n)
        snake = src[16 * g + e % 16, e // 16].astype(np.float32)
        order = sorted(range(n), key=lambda i: (-snake[i], i))[:k][::-1]
        for q in range(16 * g, 16 * g + 16):
            np.testing.assert_array_equal(idx[q], order)
            np.testing.assert_array_equal(vals[q].astype(np.float32), snake[order])


def test_topk_checks():
    @nki.jit
    def kernel(src, n):
        v = nl.ndarray((16, 8), nl.bfloat16)
        i = nl.ndarray((16, 8), nl.uint32)
        nisa.topk(val_dst=v, idx_dst=i, src=nl.load(src), n=n)
        return v
    with pytest.raises(nki.NkiCompileError, match="src and val_dst must be bfloat16"):
        kernel(np.ones((16, 4), np.float32), 40)
    with pytest.raises(nki.NkiCompileError, match=r"n = 4 is outside"):
        kernel(np.ones((16, 4), ml_dtypes.bfloat16), 4)
    with pytest.raises(nki.NkiCompileError, match="src has 4 columns; n = 80 needs 5"):
        kernel(np.ones((16, 4), ml_dtypes.bfloat16), 80)
    with pytest.raises(TypeError, match="n must be an int"):
        kernel(np.ones((16, 4), ml_dtypes.bfloat16), 40.0)


def test_prelu_language_and_activate2():
    a = rand(128, 40)
    alpha = rand(128, 1, lo=0.05, hi=0.5)

    @nki.jit
    def k(x, al):
        o1, o2, o3 = hbm(x.shape), hbm(x.shape), hbm(x.shape)
        t = nl.load(x)
        s = nl.load(al)
        nl.store(o1, nl.prelu(t, 0.25))
        nl.store(o2, nl.prelu(t, s))
        r = nl.ndarray(x.shape, nl.float32)
        nisa.activate2(dst=r, op=nl.prelu, data=t, imm0=2.0, imm1=0.0,
                       op0=nl.multiply, op1=nl.add, relu_param=s)
        nl.store(o3, r)
        return o1, o2, o3

    o1, o2, o3 = k(a, alpha)
    np.testing.assert_allclose(o1, np.where(a > 0, a, 0.25 * a), rtol=1e-6)
    np.testing.assert_allclose(o2, np.where(a > 0, a, alpha * a), rtol=1e-6)
    np.testing.assert_allclose(o3, np.where(a > 0, 2 * a, alpha * 2 * a), rtol=1e-6)


def test_arctan():
    a = rand(128, 64, lo=-50, hi=50)

    @nki.jit
    def k(x):
        o = hbm(x.shape)
        nl.store(o, nl.arctan(nl.load(x)))
        return o

    np.testing.assert_allclose(k(a), np.arctan(a), rtol=2e-6, atol=1e-6)


def test_nc_n_gather():
    data = rand(64, 4, 32)
    idx = RNG.integers(0, 128, (64, 10)).astype(np.uint32)

    @nki.jit
    def k(d, i):
        o = hbm((64, 10))
        dt, it = nl.load(d), nl.load(i)
        r = nl.ndarray((64, 10), nl.float32)
        nisa.nc_n_gather(dst=r, data=dt, indices=it)
        nl.store(o, r)
        return o

    ref = np.take_along_axis(data.reshape(64, -1), idx.astype(np.int64), axis=1)
    np.testing.assert_array_equal(k(data, idx), ref)
    idx[5, 3] = 128
    from nrtpy import NrtError
    with pytest.raises(NrtError) as info:
        k(data, idx)
    assert info.value.status_name == "NRT_EXEC_OOB"


def test_rng_rand2_dropout_values():
    @nki.jit
    def k(lo):
        o1, o2 = hbm((128, 256), nl.uint16), hbm((128, 256))
        o3 = hbm((128, 256))
        r = nl.ndarray((128, 256), nl.uint16)
        nisa.rng(dst=r)
        nl.store(o1, r)
        u = nl.ndarray((128, 256), nl.float32)
        nisa.rand2(dst=u, min=nl.load(lo), max=3.0)
        nl.store(o2, u)
        nl.store(o3, nl.dropout(nl.full((128, 256), 1.0, nl.float32), 0.25))
        return o1, o2, o3

    lo = np.linspace(-1, 2, 128, dtype=np.float32).reshape(128, 1)
    bits, u, d = k(lo)
    assert bits.dtype == np.uint16 and len(np.unique(bits)) > 1000
    assert (u >= lo).all() and (u <= 3.0).all()
    assert set(np.unique(d)) <= {0.0, 1.0}
    assert 0.2 < (d == 0).mean() < 0.3
    assert nisa.get_nc_sub_version() == 0


def test_dma_compute_sum_and_scatter_add():
    a, b, c = rand(16, 32), rand(16, 32), rand(16, 32)
    rows = np.array([[3], [0], [7], [1]], np.int32)

    @nki.jit
    def k(x, y, z, r):
        o = hbm(x.shape)
        tx, ty = nl.load(x), nl.load(y)
        nisa.dma_compute(dst=o, srcs=[tx, ty, z], reduce_op=nl.add)
        t = nl.load(x[0:4, :])
        idx = nl.load(r)
        tgt = o.ap([[32, 4], [1, 32]], vector_offset=idx, indirect_dim=0)
        nisa.dma_compute(dst=tgt, srcs=[tgt, t], reduce_op=nl.add)
        return o

    ref = a + b + c
    ref[rows[:, 0]] += a[0:4]
    np.testing.assert_allclose(k(a, b, c, rows), ref, rtol=1e-6)
    assert isinstance(nl.NkiTensor, type) and issubclass(nl.NkiTensor, nl.NKIObject)
