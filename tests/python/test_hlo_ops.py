"""HLO compiler, opcode by opcode: each JAX function is compiled with
``nrtpy.neff.compile_hlo``, run on the emulator, and compared with
``jax.jit`` on XLA:CPU (exactly, unless a tolerance is given: float
transcendental functions and accumulations differ in the last bits)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from jax import lax

from hlo_support import check_jax, compile_jax, jax, jnp

RNG = np.random.default_rng(1234)
X = RNG.standard_normal((3, 5)).astype(np.float32)
Y = RNG.standard_normal((3, 5)).astype(np.float32)
POS = (np.abs(X) + 0.1).astype(np.float32)
# Specials: NaN, infinities, signed zeros, ties for rounding.
SPECIAL = np.array([[np.nan, -np.inf, np.inf, -0.0, 0.0],
                    [0.5, -0.5, 1.5, -2.5, 3.0],
                    [1e30, -1e-30, 7.0, -7.0, np.nan]], np.float32)
I = RNG.integers(-50, 50, (3, 5)).astype(np.int32)
J = RNG.integers(1, 9, (3, 5)).astype(np.int32)
BIG = np.array([[2**31 - 1, -2**31, 65536, -65536, 12345]], np.int32)

TOL = dict(rtol=2e-6, atol=1e-6)

# -- elementwise: float unary ---------------------------------------------------

UNARY_EXACT = {
    "negate": lambda x: -x,
    "abs": jnp.abs,
    "floor": jnp.floor,
    "ceil": jnp.ceil,
}
UNARY_APPROX = {
    "exponential": jnp.exp,
    "tanh": jnp.tanh,
    "logistic": jax.nn.sigmoid,
    "sine": jnp.sin,
    "cosine": jnp.cos,
}


@pytest.mark.parametrize("name", sorted(UNARY_EXACT))
def test_unary_exact(tmp_path, name):
    check_jax(UNARY_EXACT[name], np.concatenate([X, SPECIAL]), tmp_path=tmp_path)


@pytest.mark.parametrize("name", sorted(UNARY_APPROX))
def test_unary_float(tmp_path, name):
    check_jax(UNARY_APPROX[name], X * 3, tmp_path=tmp_path, **TOL)


def test_log_sqrt_rsqrt(tmp_path):
    check_jax(lambda x: (jnp.log(x), jnp.sqrt(x), lax.rsqrt(x)), POS,
              tmp_path=tmp_path, **TOL)


# -- elementwise: binary, select, clamp, compare ---------------------------------


def test_float_binary(tmp_path):
    check_jax(lambda x, y: (x + y, x - y, x * y, x / y, jnp.maximum(x, y),
                            jnp.minimum(x, y)), X, Y, tmp_path=tmp_path)


def test_max_min_propagate_nan(tmp_path):
    s = SPECIAL
    check_jax(lambda x, y: (jnp.maximum(x, y), jnp.minimum(x, y)), s, s[::-1].copy(),
              tmp_path=tmp_path)


def test_power(tmp_path):
    check_jax(lambda x, y: x ** y, POS, Y, tmp_path=tmp_path, **TOL)


def test_int_arith_wraps(tmp_path):
    check_jax(lambda a, b: (a + b, a - b, a * b, -a, jnp.abs(a),
                            jnp.maximum(a, b), jnp.minimum(a, b)),
              BIG, np.full_like(BIG, 3), tmp_path=tmp_path)


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare_float_and_int(tmp_path, op):
    fn = getattr(lax, op)
    s = SPECIAL
    check_jax(lambda x, y, a, b: (fn(x, y), fn(a, b)), s, s[::-1].copy(), I, J,
              tmp_path=tmp_path)


def test_compare_unsigned(tmp_path):
    a = np.array([0, 1, 2**32 - 1, 2**31], np.uint32)
    b = np.array([2**32 - 1, 1, 0, 5], np.uint32)
    check_jax(lambda a, b: (a < b, a >= b), a, b, tmp_path=tmp_path)


def test_select_and_clamp(tmp_path):
    check_jax(lambda x, y: (jnp.where(x > y, x, y), jnp.clip(x, -0.5, 0.5),
                            lax.clamp(y, x, y + 1)), X, Y, tmp_path=tmp_path)


def test_bool_logic(tmp_path):
    check_jax(lambda x, y: ((x > 0) & (y > 0), (x > 0) | (y > 0),
                            (x > 0) ^ (y > 0), ~(x > 0)), X, Y, tmp_path=tmp_path)


# -- convert ---------------------------------------------------------------------


def test_convert(tmp_path):
    x = X * 100
    check_jax(lambda x, a: (x.astype(jnp.int32), a.astype(jnp.float32),
                            x.astype(jnp.bfloat16), x.astype(jnp.float16),
                            a.astype(jnp.int8), a.astype(jnp.uint8),
                            (x > 0).astype(jnp.float32), x.astype(jnp.bool_)),
              x, I * 7, tmp_path=tmp_path)


# -- shapes ----------------------------------------------------------------------


def test_broadcast_reshape_transpose(tmp_path):
    v = X[0]
    check_jax(lambda x, v: (x + v, x.T + v[None, :3], x.reshape(5, 3),
                            jnp.broadcast_to(v, (2, 4, 5)),
                            lax.broadcast_in_dim(x, (5, 2, 3), (2, 0))),
              X, v, tmp_path=tmp_path)


def test_transpose_3d(tmp_path):
    z = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    check_jax(lambda z: (jnp.transpose(z, (2, 0, 1)), jnp.transpose(z, (1, 2, 0))),
              z, tmp_path=tmp_path)


def test_slice_reverse_concatenate(tmp_path):
    z = RNG.standard_normal((4, 6)).astype(np.float32)
    check_jax(lambda z: (z[1:3, ::2], z[::-1, 1:], jnp.flip(z),
                         lax.slice(z, (0, 1), (4, 6), (3, 2)),
                         jnp.concatenate([z, z[:, :2], z[:, 4:]], axis=1)),
              z, tmp_path=tmp_path)


def test_iota(tmp_path):
    check_jax(lambda x: (x + jnp.arange(5, dtype=jnp.float32),
                         lax.broadcasted_iota(jnp.int32, (3, 4), 0),
                         jnp.tril(jnp.ones((4, 4), jnp.float32))),
              X, tmp_path=tmp_path)


# -- dot ---------------------------------------------------------------------------


def test_dot_matmul_and_vector(tmp_path):
    a = RNG.standard_normal((4, 6)).astype(np.float32)
    b = RNG.standard_normal((6, 3)).astype(np.float32)
    v = RNG.standard_normal(6).astype(np.float32)
    check_jax(lambda a, b, v: (a @ b, a @ v, v @ b, v @ v), a, b, v,
              tmp_path=tmp_path, **TOL)


def test_dot_general_dimension_numbers(tmp_path):
    a = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 2, 6, 4)).astype(np.float32)
    # batch 0<->1, contract (2, 3)<->(3, 0), in a scrambled order
    check_jax(lambda a, b: (jnp.einsum("bikl,lbjk->bij", a, b),
                            jnp.einsum("bikl,lbjk->jib", a, b),
                            lax.dot_general(a, b, (((3, 2), (0, 3)), ((0,), (1,))))),
              a, b, tmp_path=tmp_path, **TOL)


def test_dot_int(tmp_path):
    a = RNG.integers(-9, 9, (3, 4)).astype(np.int32)
    b = RNG.integers(-9, 9, (4, 2)).astype(np.int32)
    check_jax(lambda a, b: a @ b, a, b, tmp_path=tmp_path)


def test_dot_bf16(tmp_path):
    a = RNG.standard_normal((8, 16)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((16, 4)).astype(ml_dtypes.bfloat16)
    check_jax(lambda a, b: (a @ b, jnp.dot(a, b, preferred_element_type=jnp.float32)),
              a, b, tmp_path=tmp_path, rtol=1e-2, atol=1e-2)


# -- reduce ------------------------------------------------------------------------


def test_reduce_float(tmp_path):
    z = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    check_jax(lambda z: (z.sum(axis=1), z.sum(), z.max(axis=(0, 2)), z.min(axis=2),
                         jnp.prod(z, axis=0)), z, tmp_path=tmp_path, **TOL)


def test_reduce_int_bool(tmp_path):
    check_jax(lambda a, x: (a.sum(axis=0), a.max(axis=1), a.min(), jnp.prod(a, axis=1),
                            jnp.any(x > 1, axis=1), jnp.all(x > -2, axis=0)),
              I, X, tmp_path=tmp_path)


def test_reduce_max_nan(tmp_path):
    check_jax(lambda s: (s.max(axis=1), s.min(axis=0)), SPECIAL, tmp_path=tmp_path)


def test_reduce_initial_value(tmp_path):
    check_jax(lambda x, a: (lax.reduce(x, np.float32(5.0), lax.add, (1,)),
                            lax.reduce(a, np.int32(7), lax.max, (0,))),
              X, I, tmp_path=tmp_path, **TOL)


def test_argmax_argmin(tmp_path):
    ties = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [-1, -5, -5, 0]], np.float32)
    check_jax(lambda x, t, a: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0),
                               jnp.argmax(t, axis=1), jnp.argmin(t, axis=1),
                               jnp.argmax(x), jnp.argmax(a, axis=1)),
              X, ties, I, tmp_path=tmp_path)


def test_argmax_nan(tmp_path):
    check_jax(lambda s: (jnp.argmax(s, axis=1), jnp.argmin(s, axis=1)), SPECIAL,
              tmp_path=tmp_path)


# -- structure ---------------------------------------------------------------------


def test_call_tuple_and_nested_outputs(tmp_path):
    @jax.jit
    def inner(x, y):
        return jnp.where(x > y, x, 0.0), x * 2

    def f(x, y):
        a, b = inner(x, y)
        return {"a": a, "pair": (b, x)}

    path, ins, outs = compile_jax(f, (X, Y), tmp_path)
    assert ins == ["x", "y"]
    assert outs == ["output0", "output1", "output2"]
    check_jax(f, X, Y, tmp_path=tmp_path)


def test_reduce_precision(tmp_path):
    x = np.concatenate([X.ravel() * 1000, SPECIAL.ravel(), [70000.0, 1e-8]]).astype(np.float32)
    check_jax(lambda x: (lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7),
                         lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
                         lax.reduce_precision(x, exponent_bits=8, mantissa_bits=23)),
              x, tmp_path=tmp_path)


def test_tan(tmp_path):
    check_jax(lambda x, b: (jnp.tan(x), jnp.tan(b)), X, X.astype(ml_dtypes.bfloat16),
              tmp_path=tmp_path, rtol=1e-5, atol=1e-6)


def test_lazy_broadcasts_in_every_kind_of_use(tmp_path):
    # broadcast/iota values read by elementwise ops, by non-elementwise ops
    # (dot, reduce, slice, reshape, transpose, concatenate), passed through
    # calls and tuples, and returned as outputs.
    @jax.jit
    def inner(b):
        return b * 2.0, b

    def f(x, v):
        b = jnp.broadcast_to(v, (3, 5))
        i = lax.broadcasted_iota(jnp.float32, (3, 5), 1)
        two, same = inner(b)
        return (b, i, b + i, (b @ i.T), b.sum(axis=0), b[1:, ::2], b.T,
                jnp.concatenate([b, i]), two + same, jnp.exp(b) * x,
                jnp.full((2, 2), 7.0), jnp.zeros((3,), jnp.int32))

    check_jax(f, X, X[0], tmp_path=tmp_path, **TOL)


def test_variadic_separable_reduce(tmp_path):
    def f(x, a):
        return lax.reduce((x, a), (np.float32(0), np.int32(-(2**31))),
                          lambda p, q: (p[0] + q[0], lax.max(p[1], q[1])), (1,))

    check_jax(f, X, I, tmp_path=tmp_path, **TOL)
