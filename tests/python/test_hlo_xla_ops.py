"""HLO compiler, the opcodes whose XLA semantics need the emulator's
XLA ops (hlo-contract section A): integer division and remainder,
bitwise ops and shifts, expm1/log1p/cbrt/erf, rounding, is-finite,
saturating converts, bitcast-convert, sign, TOTALORDER comparisons.
Each is compared with ``jax.jit`` on XLA:CPU."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from jax import lax

import nrtpy.neff
from hlo_support import (F32, check_jax, computation, f_bytes, f_int, instr, jax,
                         jnp, module, run_neff, shape)

RNG = np.random.default_rng(99)
TOL = dict(rtol=2e-6, atol=1e-6)
I32 = np.array([[7, -7, 7, -7, 0, 2**31 - 1, -2**31, -2**31, 5, 1000]], np.int32)
D32 = np.array([[2, 2, -2, -2, 3, -1, -1, 1, 0, 7]], np.int32)
SPECIAL = np.array([np.nan, -np.nan, -np.inf, np.inf, -0.0, 0.0, 0.5, -0.5, 1.5,
                    -2.5, 2.5, 1e30, -1e30, 3e9, -3e9, 255.7, -1.2, 7.0], np.float32)


def test_integer_divide_remainder(tmp_path):
    check_jax(lambda a, b: (lax.div(a, b), lax.rem(a, b)), I32, D32, tmp_path=tmp_path)


def test_unsigned_divide_remainder(tmp_path):
    a = np.array([7, 0, 255, 200, 13], np.uint8)
    b = np.array([2, 3, 0, 7, 255], np.uint8)
    check_jax(lambda a, b: (lax.div(a, b), lax.rem(a, b)), a, b, tmp_path=tmp_path)


def test_float_remainder(tmp_path):
    x = np.array([5.5, -5.5, 5.5, -5.5, 1.0, np.inf, 3.0], np.float32)
    y = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 2.0, np.inf], np.float32)
    check_jax(lambda x, y: lax.rem(x, y), x, y, tmp_path=tmp_path)


def test_bitwise_and_shifts(tmp_path):
    a = RNG.integers(-2**31, 2**31 - 1, (2, 8), dtype=np.int64).astype(np.int32)
    b = RNG.integers(-2**31, 2**31 - 1, (2, 8), dtype=np.int64).astype(np.int32)
    s = np.array([[0, 1, 5, 31, 32, 33, -1, 100]] * 2, np.int32)
    check_jax(lambda a, b, s: (a & b, a | b, a ^ b, ~a, lax.shift_left(a, s),
                               lax.shift_right_logical(a, s),
                               lax.shift_right_arithmetic(a, s)),
              a, b, s, tmp_path=tmp_path)


def test_bitwise_uint8(tmp_path):
    a = np.arange(0, 256, 17, dtype=np.uint8)
    b = a[::-1].copy()
    check_jax(lambda a, b: (a & b, a | b, a ^ b, ~a), a, b, tmp_path=tmp_path)


def test_float_unary_xla(tmp_path):
    x = np.linspace(-3, 3, 13).astype(np.float32)
    check_jax(lambda x: (jnp.expm1(x), jnp.log1p(jnp.abs(x)), jnp.cbrt(x),
                         lax.erf(x)), x, tmp_path=tmp_path, **TOL)


def test_rounding_sign_is_finite(tmp_path):
    check_jax(lambda x: (jnp.round(x), lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
                         jnp.sign(x), jnp.isfinite(x)), SPECIAL, tmp_path=tmp_path)


def test_convert_saturates(tmp_path):
    check_jax(lambda x: (x.astype(jnp.int32), x.astype(jnp.uint8), x.astype(jnp.int8),
                         x.astype(jnp.bool_), x.astype(jnp.uint32)),
              SPECIAL, tmp_path=tmp_path)


def test_convert_fp8(tmp_path):
    x = np.linspace(-20, 20, 17).astype(np.float32)
    check_jax(lambda x: (x.astype(ml_dtypes.float8_e4m3fn), x.astype(ml_dtypes.float8_e5m2),
                         x.astype(ml_dtypes.float8_e4m3fn).astype(jnp.float32) * 2),
              x, tmp_path=tmp_path)


def test_bitcast_convert(tmp_path):
    x = SPECIAL.reshape(3, 6)
    u = np.arange(24, dtype=np.uint8).reshape(6, 4)
    check_jax(lambda x, u: (lax.bitcast_convert_type(x, jnp.int32),
                            lax.bitcast_convert_type(x, jnp.uint8),
                            lax.bitcast_convert_type(u, jnp.float32),
                            lax.bitcast_convert_type(x.astype(jnp.bfloat16), jnp.uint16)),
              x, u, tmp_path=tmp_path)


def binary_module(opcode, et, out_et, n, **extra):
    """A module computing ``opcode(x, y)`` of two [n] parameters
    (hand-built: JAX does not emit every form)."""
    s = shape(et, (n,))
    ps = [instr("x", "parameter", s, 1), instr("y", "parameter", s, 2, pn=f_int(9, 1))]
    op = instr("r", opcode, shape(out_et, (n,)), 3, [1, 2], **extra)
    return module("m", [computation("main", 1, ps + [op], 3)], 1)


def test_integer_power(tmp_path):
    # XLA: a negative exponent gives 0, except for bases 1 and -1.
    a = np.array([2, -2, 1, -1, -1, 3, 0, 5, -1, 7, 2], np.int32)
    b = np.array([3, 3, -4, -3, -4, -1, 0, 0, 2, 2, 31], np.int32)
    path = nrtpy.neff.compile_hlo(binary_module("power", 4, 4, len(a)), tmp_path / "p.neff")
    got = run_neff(path, {"x": a, "y": b})["output0"]
    want = np.array([8, -8, 1, -1, 1, 0, 1, 1, 1, 49, -2**31], np.int32)
    np.testing.assert_array_equal(got, want)


def _total_order(v):
    bits = v.view(np.int32).astype(np.int64)
    return np.where(bits < 0, bits ^ 0x7FFFFFFF, bits)


@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
def test_compare_totalorder(tmp_path, direction):
    # Hand-built: JAX only emits TOTALORDER inside sort comparators.
    raw = binary_module("compare", F32, 1, len(SPECIAL),
                        direction=f_bytes(63, direction), kind=f_bytes(72, "TOTALORDER"))
    path = nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    x = SPECIAL
    y = np.roll(SPECIAL, 1)
    got = run_neff(path, {"x": x, "y": y})["output0"]
    kx, ky = _total_order(x), _total_order(y)
    want = {"EQ": kx == ky, "NE": kx != ky, "LT": kx < ky, "LE": kx <= ky,
            "GT": kx > ky, "GE": kx >= ky}[direction]
    np.testing.assert_array_equal(got, want)



def test_atan2_and_inverse_trig(tmp_path):
    # every quadrant, signed zeros, infinities, NaN
    v = np.array([0.0, -0.0, 1.0, -1.0, 0.3, -2.5, 1e-30, 1e30, np.inf, -np.inf,
                  np.nan], np.float32)
    y, x = (a.ravel() for a in np.meshgrid(v, v))
    check_jax(lambda y, x: jnp.arctan2(y, x), y, x, tmp_path=tmp_path, rtol=1e-6, atol=1e-7)
    t = np.linspace(-0.999, 0.999, 41).astype(np.float32)
    check_jax(lambda t: (jnp.arctan(t * 50), jnp.arcsin(t), jnp.arccos(t),
                         jnp.arctan2(t.astype(jnp.bfloat16), jnp.bfloat16(0.5))),
              t, tmp_path=tmp_path, name="inv", rtol=2e-6, atol=1e-6)



def test_copysign_bits(tmp_path):
    # JAX writes copysign as signbit (a bitcast and a shift), abs, negate
    # and select; the emulator's copysign row is the tracer's.  Both give
    # XLA's bits: signed zeros and the sign of NaN included.
    v = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, -np.nan, 1e-40],
                 np.float32)
    x, y = (a.ravel() for a in np.meshgrid(v, v))
    got = check_jax(jnp.copysign, x, y, tmp_path=tmp_path)
    (out,) = got.values()
    assert np.asarray(out).tobytes() == np.asarray(jax.jit(jnp.copysign)(x, y)).tobytes()
    assert np.asarray(out).tobytes() == np.copysign(x, y).tobytes()


def test_atan2_float64(tmp_path):
    # Hand-built (JAX without x64 has no f64): the emulator's atan2 row.
    v = np.array([0.0, -0.0, 1.0, -1.0, 0.3, -2.5, 1e-300, 1e300, np.inf,
                  -np.inf, np.nan])
    y, x = (a.ravel() for a in np.meshgrid(v, v))
    path = nrtpy.neff.compile_hlo(binary_module("atan2", 12, 12, len(y)),
                                  tmp_path / "a.neff")
    got = run_neff(path, {"x": y, "y": x})["output0"]
    np.testing.assert_array_equal(got, np.arctan2(y, x))


def test_popcnt_clz(tmp_path):
    a = np.array([0, 1, -1, 2**31 - 1, -2**31, 12345, 255, 256], np.int32)
    fns = lambda a: (lax.population_count(a), lax.clz(a),
                     lax.population_count(a.astype(jnp.uint8)),
                     lax.clz(a.astype(jnp.uint16)), lax.clz(a.astype(jnp.int8)))
    check_jax(fns, a, tmp_path=tmp_path)


@pytest.mark.parametrize("opcode", ["popcnt", "count-leading-zeros"])
def test_popcnt_clz_s64(tmp_path, opcode):
    # Hand-built (JAX without x64 has no s64); the reference is Python's.
    a = np.array([0, 1, -1, 2**63 - 1, -2**63, 0x0123456789ABCDEF, 255], np.int64)
    s = shape(5, (len(a),))
    raw = module("m", [computation("main", 1, [instr("x", "parameter", s, 1),
                                               instr("r", opcode, s, 2, [1])], 2)], 1)
    path = nrtpy.neff.compile_hlo(raw, tmp_path / "b.neff")
    got = run_neff(path, {"x": a})["output0"]
    u = [int(v) for v in a.view(np.uint64)]
    want = [bin(v).count("1") for v in u] if opcode == "popcnt" else \
        [64 - v.bit_length() for v in u]
    np.testing.assert_array_equal(got, np.array(want, np.int64))


def test_jax_random_bits_exact(tmp_path):
    # threefry (a while loop of uint32 adds, shifts, xors and ors), then
    # bitcast-convert and the float transforms of uniform and normal.
    key = np.asarray(jax.random.key_data(jax.random.key(42)))

    def f(k):
        k = jax.random.wrap_key_data(k)
        return jax.random.bits(k, (4, 8), jnp.uint32), jax.random.uniform(k, (16,))

    check_jax(f, key, tmp_path=tmp_path)
    check_jax(lambda k: jax.random.normal(jax.random.wrap_key_data(k), (16,)), key,
              tmp_path=tmp_path, name="normal", **TOL)
