"""The emulator ops with XLA's semantics (docs/neff-emulator-format.md §3),
run end to end: programs written by hand into NEFFs (what the HLO compiler
emits) and NumPy functions traced by nrtpy.neff.compile, against NumPy and
Python's float64 math."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

import nrtpy.neff
from nrtpy import NrtError, NrtpyModel, NrtpyTensor
from nrtpy.neff import _container

_counter = itertools.count()


def program_neff(tmp_path, inputs, outputs, ops, temps=None):
    """A NEFF holding an emulator program: `inputs` and `outputs` map names
    to (dtype, shape), `temps` likewise; `ops` are op objects."""
    var, buffers = {}, {}
    for kind, group in (("input", inputs), ("output", outputs)):
        for name, (dtype, shape) in group.items():
            size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            var[name] = {"type": kind, "size": size, "shape": list(shape),
                         "dtype": dtype}
            buffers[name] = {"kind": kind, "dtype": dtype, "shape": list(shape)}
    for name, (dtype, shape) in (temps or {}).items():
        buffers[name] = {"kind": "temp", "dtype": dtype, "shape": list(shape)}
    files = {
        "sg00/def.json": json.dumps({"var": var,
                                     "emulator_program": "program.json"}).encode(),
        "sg00/program.json": json.dumps({
            "format": "nrtpy-emulator-program", "version": 1,
            "buffers": buffers, "ops": ops}).encode()}
    path = tmp_path / f"p{next(_counter)}.neff"
    return _container.write(path, files, name=path.stem)


def run_program(tmp_path, inputs, outputs, ops, temps=None):
    """Write, load and run a program on `inputs` (name -> array); the
    outputs as arrays, by name."""
    path = program_neff(tmp_path,
                        {k: (v.dtype.name, v.shape) for k, v in inputs.items()},
                        outputs, ops, temps)
    model = NrtpyModel.load_from_neff(path)
    result = model(inputs={k: NrtpyTensor.from_numpy(v, name=k)
                           for k, v in inputs.items()})
    return {k: t.numpy() for k, t in result.items()}


def one_op(tmp_path, op, arrays, out_dtype, out_shape=None, **attrs):
    ins = {f"x{i}": a for i, a in enumerate(arrays)}
    shape = out_shape if out_shape is not None else np.broadcast_shapes(
        *(a.shape for a in arrays))
    rec = {"op": op, "in": list(ins), "out": "y", **attrs}
    return run_program(tmp_path, ins, {"y": (out_dtype, shape)}, [rec])["y"]


def test_integer_division_and_remainder(tmp_path):
    info = np.iinfo(np.int32)
    a = np.array([7, -7, 7, -7, 5, info.min, info.min, -3], np.int32)
    b = np.array([2, 2, -2, -2, 0, -1, 0, 0], np.int32)
    assert one_op(tmp_path, "rem", [a, b], "int32").tolist() == \
        [1, -1, 1, -1, 5, 0, info.min, -3]
    assert one_op(tmp_path, "trunc_divide", [a, b], "int32").tolist() == \
        [3, -3, -3, 3, -1, info.min, -1, -1]
    u = np.array([7, 9, 0xFFFFFFFF], np.uint32)
    v = np.array([2, 0, 0], np.uint32)
    assert one_op(tmp_path, "trunc_divide", [u, v], "uint32").tolist() == \
        [3, 0xFFFFFFFF, 0xFFFFFFFF]
    assert one_op(tmp_path, "rem", [u, v], "uint32").tolist() == [1, 9, 0xFFFFFFFF]
    # Floats: C's fmod, and plain division.
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32) * 10
    y = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(one_op(tmp_path, "rem", [x, y], "float32"),
                                  np.fmod(x, y))
    np.testing.assert_array_equal(one_op(tmp_path, "trunc_divide", [x, y], "float32"),
                                  x / y)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint16", "uint64"])
def test_bitwise_and_shifts(tmp_path, dtype):
    dt = np.dtype(dtype)
    bits = dt.itemsize * 8
    rng = np.random.default_rng(bits)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, 300, dtype=dt, endpoint=True)
    y = rng.integers(info.min, info.max, 300, dtype=dt, endpoint=True)
    # Shift counts around the width, negative ones for signed types.
    counts = np.arange(-3 if dt.kind == "i" else 0, bits + 3)
    c = np.resize(counts, 300).astype(dt)
    ins = {"x": x, "y": y, "c": c}
    ops = [{"op": "bitwise_and", "in": ["x", "y"], "out": "band"},
           {"op": "bitwise_or", "in": ["x", "y"], "out": "bor"},
           {"op": "bitwise_xor", "in": ["x", "y"], "out": "bxor"},
           {"op": "bitwise_not", "in": ["x"], "out": "bnot"},
           {"op": "shift_left", "in": ["x", "c"], "out": "shl"},
           {"op": "shift_right_logical", "in": ["x", "c"], "out": "shrl"},
           {"op": "shift_right_arithmetic", "in": ["x", "c"], "out": "shra"}]
    got = run_program(tmp_path, ins, {op["out"]: (dtype, [300]) for op in ops}, ops)
    np.testing.assert_array_equal(got["band"], x & y)
    np.testing.assert_array_equal(got["bor"], x | y)
    np.testing.assert_array_equal(got["bxor"], x ^ y)
    np.testing.assert_array_equal(got["bnot"], ~x)
    # The references, from Python integers on the unsigned bits.
    ubits = [int(v) & ((1 << bits) - 1) for v in x]
    ucount = [int(v) & ((1 << bits) - 1) for v in c]
    signed = [u - (1 << bits) if u >> (bits - 1) else u for u in ubits]

    def as_dt(vals):
        return np.array([v & ((1 << bits) - 1) for v in vals], np.uint64).astype(
            f"u{dt.itemsize}").view(dt)

    np.testing.assert_array_equal(
        got["shl"], as_dt([u << n if n < bits else 0 for u, n in zip(ubits, ucount)]))
    np.testing.assert_array_equal(
        got["shrl"], as_dt([u >> n if n < bits else 0 for u, n in zip(ubits, ucount)]))
    np.testing.assert_array_equal(
        got["shra"], as_dt([s >> min(n, bits - 1) for s, n in zip(signed, ucount)]))


def test_bool_bitwise_is_logical(tmp_path):
    a = np.array([0, 0, 1, 1], np.bool_)
    b = np.array([0, 1, 0, 1], np.bool_)
    assert one_op(tmp_path, "bitwise_and", [a, b], "bool").tolist() == [0, 0, 0, 1]
    assert one_op(tmp_path, "bitwise_xor", [a, b], "bool").tolist() == [0, 1, 1, 0]
    assert one_op(tmp_path, "bitwise_not", [b], "bool").tolist() == [1, 0, 1, 0]


@pytest.mark.parametrize("op, ref", [("expm1", math.expm1), ("log1p", math.log1p),
                                     ("cbrt", lambda v: math.copysign(abs(v) ** (1 / 3), v)),
                                     ("erf", math.erf)])
def test_float32_math_against_float64(tmp_path, op, ref):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(3000) * s for s in (1e-6, 0.3, 2, 30)])
    if op == "log1p":
        x = np.abs(x) - 0.999
    if op == "expm1":
        x = x[x < 88]  # (e^88 still fits float32)
    x = x.astype(np.float32)
    got = one_op(tmp_path, op, [x], "float32")
    want = np.array([ref(float(v)) for v in x])
    if op == "cbrt":  # ** (1/3) is itself off by an ulp of float64: compare loosely
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=0)
    else:
        # Within one float32 ulp of the float64 value.
        np.testing.assert_array_less(np.abs(got - want.astype(np.float32)),
                                     np.spacing(np.abs(want).astype(np.float32)) * 1.01)
    # float64 compute: libm, within a couple of float64 ulps.
    x64 = x.astype(np.float64)
    got64 = one_op(tmp_path, op, [x64], "float64")
    want64 = np.array([ref(float(v)) for v in x64])
    np.testing.assert_allclose(got64, want64, rtol=1e-14 if op != "cbrt" else 1e-15,
                               atol=0)


def test_rounding_is_finite_sign(tmp_path):
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -0.3, 0.49999997, 8388607.5,
                  np.nan, -np.inf, np.inf, -0.0, 0.0], np.float32)
    np.testing.assert_array_equal(one_op(tmp_path, "round_even", [x], "float32"),
                                  np.rint(x))
    want_away = np.array([1, 2, 3, -1, -3, -0.0, 0, 8388608, np.nan, -np.inf,
                          np.inf, -0.0, 0.0], np.float32)
    got = one_op(tmp_path, "round_away", [x], "float32")
    np.testing.assert_array_equal(got, want_away)
    assert np.signbit(got[5]) and np.signbit(got[11])
    assert one_op(tmp_path, "is_finite", [x], "bool").tolist() == \
        [True] * 8 + [False] * 3 + [True] * 2
    sign = one_op(tmp_path, "sign", [x], "float32")
    assert np.isnan(sign[8]) and np.signbit(sign[11]) and not np.signbit(sign[12])
    assert sign[:5].tolist() == [1, 1, 1, -1, -1]
    i = np.array([-3, 4], np.int16)
    assert one_op(tmp_path, "round_away", [i], "int16").tolist() == [-3, 4]


def test_bitcast_and_saturating_cast(tmp_path):
    x = np.array([[1.0, -2.0, np.nan], [np.inf, 3e9, -0.0]], np.float32)
    np.testing.assert_array_equal(one_op(tmp_path, "bitcast", [x], "int32", [6]),
                                  x.reshape(-1).view(np.int32))
    np.testing.assert_array_equal(one_op(tmp_path, "bitcast", [x], "uint8", [3, 8]),
                                  x.reshape(-1).view(np.uint8).reshape(3, 8))
    np.testing.assert_array_equal(one_op(tmp_path, "bitcast", [x], "float64", [3]),
                                  x.reshape(-1).view(np.float64))
    info = np.iinfo(np.int32)
    assert one_op(tmp_path, "cast", [x], "int32").tolist() == \
        [[1, -2, 0], [info.max, info.max, 0]]
    assert one_op(tmp_path, "cast", [x], "uint8").tolist() == [[1, 0, 0], [255, 255, 0]]
    assert one_op(tmp_path, "cast", [x], "bool").tolist() == \
        [[True, True, True], [True, True, False]]


def test_integer_pow_negative_exponents(tmp_path):
    b = np.array([2, 1, -1, -1, 0, 3, -2], np.int32)
    e = np.array([-1, -5, -3, -4, -2, 4, 3], np.int32)
    assert one_op(tmp_path, "pow", [b, e], "int32").tolist() == [0, 1, -1, 1, 0, 81, -8]


@pytest.mark.parametrize("op, ins, out, detail", [
    ("shift_left", [("float32", [3]), ("float32", [3])], ("float32", [3]),
     "the compute dtype float32 is not an integer type, which shift_left needs"),
    ("shift_right_logical", [("bool", [3]), ("bool", [3])], ("bool", [3]),
     "the compute dtype bool is not an integer type"),
    ("bitwise_and", [("float32", [3]), ("float32", [3])], ("float32", [3]),
     "the compute dtype float32 is not an integer or bool type, which bitwise_and"),
    ("erf", [("int32", [3])], ("int32", [3]), "the compute dtype int32 is not a float"),
    ("is_finite", [("float32", [3])], ("float32", [3]),
     "out 'y' is float32; the result is bool"),
    ("is_finite", [("int32", [3])], ("bool", [3]), "the compute dtype int32 is not a float"),
    ("bitcast", [("float32", [3])], ("int64", [2]),
     "in[0] 'x0' has 12 bytes and out 'y' 16: a bitcast keeps the bytes"),
    ("rem", [("float32", [3]), ("float32", [4])], ("float32", [3]),
     "in[1] 'x1' of shape [4] does not broadcast"),
])
def test_bad_programs_are_invalid(tmp_path, op, ins, out, detail):
    inputs = {f"x{i}": spec for i, spec in enumerate(ins)}
    path = program_neff(tmp_path, inputs, {"y": out},
                        [{"op": op, "in": list(inputs), "out": "y"}])
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path)
    assert ei.value.status_code == 2  # NRT_INVALID
    assert f"({op}): {detail}" in str(ei.value)


def test_traced_numpy_functions(tmp_path):
    def kernel(i, j, f):
        return (np.bitwise_and(i, j), i | 0x0F, np.bitwise_xor(i, j), ~i,
                np.left_shift(i, 3), np.right_shift(i, 2),
                np.right_shift(j.astype(np.uint16), 3),
                np.fmod(f, 1.5), np.expm1(f), np.log1p(np.abs(f)), np.cbrt(f),
                np.rint(f), np.isfinite(f / (f - f[0])), np.isfinite(i))

    rng = np.random.default_rng(3)
    i = rng.integers(-1000, 1000, (4, 8), dtype=np.int32)
    j = rng.integers(0, 60000, (4, 8), dtype=np.int32)
    f = (rng.standard_normal((4, 8)) * 4).astype(np.float32)
    path = nrtpy.neff.compile(kernel, i, j, f, path=tmp_path / "traced.neff")
    model = NrtpyModel.load_from_neff(path)
    outs = model(inputs={"i": NrtpyTensor.from_numpy(i), "j": NrtpyTensor.from_numpy(j),
                         "f": NrtpyTensor.from_numpy(f)})
    got = [t.numpy() for t in outs.values()]
    with np.errstate(all="ignore"):
        want = kernel(i, j, f)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=3e-7, atol=0)
        else:
            np.testing.assert_array_equal(g, w)
    ops = {op["op"] for op in json.loads(
        _container_program(path))["ops"]}
    assert {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left",
            "shift_right_arithmetic", "shift_right_logical", "rem", "expm1", "log1p",
            "cbrt", "round_even", "is_finite"} <= ops


def _container_program(path) -> bytes:
    from support import neff_members
    return neff_members(path)["sg00/program.json"]
