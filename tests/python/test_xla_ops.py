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


def _scatter_reference(mode, operand, indices, updates):
    out = operand.copy().reshape(-1)
    for k, u in zip(indices.reshape(-1).tolist(), updates.reshape(-1)):
        if 0 <= k < out.size:
            if mode == "assign":
                out[k] = u
            elif mode == "add":
                out[k] = out[k] + u
            elif mode == "mul":
                out[k] = out[k] * u
            elif mode == "max":
                out[k] = np.maximum(out[k], u)
            else:
                out[k] = np.minimum(out[k], u)
    return out.reshape(operand.shape)


@pytest.mark.parametrize("mode", ["assign", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype, idx_dtype", [("float32", "int32"), ("int16", "int64"),
                                              ("float16", "uint8"), ("float64", "int8")])
def test_scatter_modes(tmp_path, mode, dtype, idx_dtype):
    rng = np.random.default_rng(11)
    operand = (rng.standard_normal((4, 5)) * 4).astype(dtype)
    # Repeated indices, and out-of-range ones (skipped) where the type allows.
    lo = -3 if np.dtype(idx_dtype).kind == "i" else 0
    indices = rng.integers(lo, 24, (3, 6)).astype(idx_dtype)
    updates = (rng.standard_normal(18) * 3).astype(dtype)
    got = run_program(tmp_path, {"a": operand, "i": indices, "u": updates},
                      {"y": (dtype, [4, 5])},
                      [{"op": "scatter", "in": ["a", "i", "u"], "out": "y",
                        "mode": mode}])["y"]
    np.testing.assert_array_equal(got, _scatter_reference(mode, operand, indices, updates))


def test_scatter_in_place_on_an_output(tmp_path):
    # The HLO compiler's dynamic-update-slice: scatter into the buffer that
    # already holds the operand.
    x = np.arange(6, dtype=np.float32)
    got = run_program(
        tmp_path, {"x": x, "i": np.array([5, 0, 9], np.int32),
                   "u": np.array([50, 10, 99], np.float32)},
        {"y": ("float32", [6])},
        [{"op": "copy", "in": ["x"], "out": "y"},
         {"op": "scatter", "in": ["y", "i", "u"], "out": "y", "mode": "add"}])["y"]
    assert got.tolist() == [10, 1, 2, 3, 4, 55]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32", "uint8", "float64"])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_stable(tmp_path, dtype, descending):
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype, dtype))
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 7, (3, 40, 5)).astype(dt)  # many ties
    for axis in (0, 1, -1):
        got = run_program(tmp_path, {"k": keys}, {"y": ("int32", keys.shape)},
                          [{"op": "argsort", "in": ["k"], "out": "y", "axis": axis,
                            "descending": descending}])["y"]
        if descending:
            # Stable descending: sort the negated keys stably.
            want = np.argsort(-keys.astype(np.float64), axis=axis, kind="stable")
        else:
            want = np.argsort(keys, axis=axis, kind="stable")
        np.testing.assert_array_equal(got, want)


def test_argsort_float_total_order(tmp_path):
    neg_nan = -np.float32(np.nan)
    keys = np.array([1.0, neg_nan, 0.0, np.nan, -np.inf, -0.0, 1.0, np.inf, -1.0],
                    np.float32)
    got = run_program(tmp_path, {"k": keys}, {"y": ("int32", [9])},
                      [{"op": "argsort", "in": ["k"], "out": "y"}])["y"]
    assert got.tolist() == [1, 4, 8, 5, 2, 0, 6, 7, 3]
    got = run_program(tmp_path, {"k": keys}, {"y": ("int32", [9])},
                      [{"op": "argsort", "in": ["k"], "out": "y", "descending": True}])["y"]
    assert got.tolist() == [3, 7, 0, 6, 2, 5, 8, 4, 1]


def test_traced_argsort(tmp_path):
    x = np.random.default_rng(2).integers(0, 5, (6, 7)).astype(np.float32)
    for fn in (lambda a: np.argsort(a, kind="stable"),
               lambda a: np.argsort(a, axis=0, kind="stable"),
               lambda a: np.argsort(a, axis=None, kind="stable")):
        path = nrtpy.neff.compile(fn, x, path=tmp_path / f"s{next(_counter)}.neff")
        model = NrtpyModel.load_from_neff(path)
        (out,) = model(inputs={"a": NrtpyTensor.from_numpy(x)}).values()
        got = out.numpy()
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, fn(x))


@pytest.mark.parametrize("attrs, ins, out, detail", [
    ({}, [("float32", [4]), ("int32", [2]), ("float32", [2])], ("float32", [4]),
     '"mode" must be one of "assign", "add", "mul", "max", "min"'),
    ({"mode": "sum"}, [("float32", [4]), ("int32", [2]), ("float32", [2])],
     ("float32", [4]), '"mode" "sum" is not one of "assign"'),
    ({"mode": 3}, [("float32", [4]), ("int32", [2]), ("float32", [2])],
     ("float32", [4]), '"mode" must be one of'),
    ({"mode": "add"}, [("float32", [4]), ("float32", [2]), ("float32", [2])],
     ("float32", [4]), "in[1] 'x1' holds float32: indices must be integers"),
    ({"mode": "add"}, [("float32", [4]), ("int32", [3]), ("float32", [2])],
     ("float32", [4]), "in[1] 'x1' has 3 indices but in[2] 'x2' 2 updates"),
    ({"mode": "add"}, [("float32", [4]), ("int32", [2]), ("float16", [2])],
     ("float32", [4]), "out 'y' is float32 but in[2] 'x2' is float16: the op does not convert"),
    ({"mode": "add"}, [("float32", [4]), ("int32", [2]), ("float32", [2])],
     ("float32", [2, 2]), "out 'y' has shape [2,2]; the result has [4]"),
])
def test_bad_scatter_is_invalid(tmp_path, attrs, ins, out, detail):
    inputs = {f"x{i}": spec for i, spec in enumerate(ins)}
    path = program_neff(tmp_path, inputs, {"y": out},
                        [{"op": "scatter", "in": list(inputs), "out": "y", **attrs}])
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path)
    assert ei.value.status_code == 2
    assert f"(scatter): {detail}" in str(ei.value)


@pytest.mark.parametrize("attrs, out, detail", [
    ({"descending": 1}, ("int32", [2, 3]), '"descending" must be true or false'),
    ({"axis": 2}, ("int32", [2, 3]), '"axis" 2 is out of range for 2 dimensions'),
    ({"axis": "0"}, ("int32", [2, 3]), '"axis" must be an integer'),
    ({}, ("int64", [2, 3]), "out 'y' is int64; the result is int32"),
    ({}, ("int32", [3, 2]), "out 'y' has shape [3,2]; the result has [2,3]"),
])
def test_bad_argsort_is_invalid(tmp_path, attrs, out, detail):
    path = program_neff(tmp_path, {"k": ("float32", [2, 3])}, {"y": out},
                        [{"op": "argsort", "in": ["k"], "out": "y", **attrs}])
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path)
    assert ei.value.status_code == 2
    assert f"(argsort): {detail}" in str(ei.value)


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


# -- update_slice -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8", "float64"])
def test_update_slice(tmp_path, dtype):
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype, dtype))
    rng = np.random.default_rng(9)
    x = rng.integers(-50, 50, (4, 6, 9)).astype(dt)
    u = rng.integers(-50, 50, (2, 3, 4)).astype(dt)
    cases = [([1, 0, 2], [2, 2, 1]),    # rows of 4, a copy each
             ([3, 5, 8], [-2, -2, -2]),  # backwards
             ([0, 1, 0], [3, 1, 2])]
    for start, step in cases:
        # into an output, then in place into a temporary copied out
        got = run_program(
            tmp_path, {"x": x, "u": u}, {"y": (dtype, x.shape), "z": (dtype, x.shape)},
            [{"op": "update_slice", "in": ["x", "u"], "out": "y", "start": start,
              "step": step},
             {"op": "copy", "in": ["x"], "out": "t"},
             {"op": "update_slice", "in": ["t", "u"], "out": "t", "start": start,
              "step": step},
             {"op": "copy", "in": ["t"], "out": "z"}],
            temps={"t": (dtype, x.shape)})
        want = x.copy()
        want[tuple(slice(s, s + st * (n - 1) + (1 if st > 0 else -1) if
                         s + st * (n - 1) + (1 if st > 0 else -1) >= 0 else None, st)
                   for s, st, n in zip(start, step, u.shape))] = u
        assert got["y"].tobytes() == want.tobytes(), (start, step)
        assert got["z"].tobytes() == want.tobytes(), (start, step)


@pytest.mark.parametrize("attrs, ins, out, detail", [
    ({"start": [0, 3]}, [("float32", [4, 5]), ("float32", [2, 3])], ("float32", [4, 5]),
     "dimension 1: 3 elements from 3 in steps of 1 run past the 5 of out 'y'"),
    ({"start": [4, 0]}, [("float32", [4, 5]), ("float32", [2, 3])], ("float32", [4, 5]),
     "start[0] = 4 is out of range [0, 4) of out 'y'"),
    ({"step": [0, 1]}, [("float32", [4, 5]), ("float32", [2, 3])], ("float32", [4, 5]),
     "step[0] is 0"),
    ({}, [("float32", [4, 5]), ("float32", [6])], ("float32", [4, 5]),
     "in[1] 'x1' has 1 dimensions and in[0] 'x0' 2: an update keeps them"),
    ({}, [("float32", [4, 5]), ("float16", [2, 3])], ("float32", [4, 5]),
     "out 'y' is float32 but in[1] 'x1' is float16: the op does not convert"),
    ({}, [("float32", [4, 5]), ("float32", [2, 3])], ("float32", [5, 4]),
     "out 'y' has shape [5,4]; the result has [4,5]"),
])
def test_bad_update_slice_is_invalid(tmp_path, attrs, ins, out, detail):
    inputs = {f"x{i}": spec for i, spec in enumerate(ins)}
    path = program_neff(tmp_path, inputs, {"y": out},
                        [{"op": "update_slice", "in": list(inputs), "out": "y", **attrs}])
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path)
    assert ei.value.status_code == 2
    assert f"(update_slice): {detail}" in str(ei.value)


# -- dynamic_slice, dynamic_update_slice -------------------------------------------


def _window(shape, sizes, starts, bounds):
    """The clamped starts of a window, or None where "check" refuses."""
    out = []
    for n, s, v in zip(shape, sizes, starts):
        if not 0 <= v <= n - s:
            if bounds == "check":
                return None
            v = min(max(v, 0), n - s)
        out.append(int(v))
    return out


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e4m3fn", "int8",
                                   "uint16", "float64", "bool"])
@pytest.mark.parametrize("sdtype", ["int32", "int64", "uint32", "int8", "uint64"])
def test_dynamic_slice_and_update(tmp_path, dtype, sdtype):
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype, dtype))
    sdt = np.dtype(sdtype)
    rng = np.random.default_rng(11)
    x = rng.integers(0, 2 if dt == np.bool_ else 50, (4, 6, 9)).astype(dt)
    u = rng.integers(0, 2 if dt == np.bool_ else 50, (2, 6, 4)).astype(dt)
    info = np.iinfo(sdt)
    cands = [[1, 0, 2], [2, 0, 5], [3, 0, 6], [0, 0, 0],
             [info.max, 0, info.min], [info.min, 1, info.max]]
    for bounds in ("clamp", "check"):
        path = program_neff(
            tmp_path, {"x": (dtype, x.shape), "u": (dtype, u.shape),
                       "s": (sdtype, [3])},
            {"w": (dtype, u.shape), "y": (dtype, x.shape), "z": (dtype, x.shape)},
            [{"op": "dynamic_slice", "in": ["x", "s"], "out": "w", "bounds": bounds},
             {"op": "dynamic_update_slice", "in": ["x", "u", "s"], "out": "y",
              "bounds": bounds},
             # in place, into a temporary copied out
             {"op": "copy", "in": ["x"], "out": "t"},
             {"op": "dynamic_update_slice", "in": ["t", "u", "s"], "out": "t",
              "bounds": bounds},
             {"op": "copy", "in": ["t"], "out": "z"}],
            temps={"t": (dtype, x.shape)})
        model = NrtpyModel.load_from_neff(path)
        for c in cands:
            s = np.array(c, dtype=sdt)
            start = _window(x.shape, u.shape, [int(v) for v in s], bounds)
            feed = {"x": x, "u": u, "s": s}
            inputs = {k: NrtpyTensor.from_numpy(v, name=k) for k, v in feed.items()}
            if start is None:
                with pytest.raises(NrtError) as ei:
                    model(inputs=inputs)
                assert ei.value.status_code == 1006, (bounds, c)
                assert "is out of bounds: a window of" in str(ei.value)
                continue
            got = {k: t.numpy() for k, t in model(inputs=inputs).items()}
            box = tuple(slice(b, b + n) for b, n in zip(start, u.shape))
            want = x.copy()
            want[box] = u
            assert got["w"].tobytes() == x[box].tobytes(), (bounds, c)
            assert got["y"].tobytes() == want.tobytes(), (bounds, c)
            assert got["z"].tobytes() == want.tobytes(), (bounds, c)


def test_dynamic_slice_scalar_and_empty(tmp_path):
    # rank 0: no starts (shape [0], a temporary: I/O is never empty); an
    # empty window: any start clamps into [0, n]
    x = np.array(3.5, np.float32)
    got = run_program(tmp_path, {"x": x}, {"y": ("float32", [])},
                      [{"op": "full", "out": "s", "value": 0},
                       {"op": "dynamic_slice", "in": ["x", "s"], "out": "y",
                        "bounds": "check"}],
                      temps={"s": ("int32", [0])})
    assert got["y"] == 3.5
    v = np.arange(5, dtype=np.int16)
    got = run_program(tmp_path, {"v": v, "s": np.array([9], np.int64)},
                      {"y": ("int16", [5])},
                      [{"op": "full", "out": "e", "value": 0},
                       {"op": "dynamic_update_slice", "in": ["v", "e", "s"],
                        "out": "y", "bounds": "clamp"}],
                      temps={"e": ("int16", [0])})
    assert got["y"].tolist() == v.tolist()


@pytest.mark.parametrize("op, ins, out, attrs, detail", [
    ("dynamic_slice", [("float32", [4, 5]), ("int32", [2])], ("float32", [2, 3]),
     {}, "\"bounds\" must be \"clamp\" or \"check\""),
    ("dynamic_slice", [("float32", [4, 5]), ("float32", [2])], ("float32", [2, 3]),
     {"bounds": "clamp"}, "in[1] 'x1' holds float32: starts must be integers"),
    ("dynamic_slice", [("float32", [4, 5]), ("int32", [3])], ("float32", [2, 3]),
     {"bounds": "clamp"}, "in[1] 'x1' has shape [3]: the starts are one per "
     "dimension of in[0] 'x0', shape [2]"),
    ("dynamic_slice", [("float32", [4, 5]), ("int32", [2])], ("float32", [2, 6]),
     {"bounds": "check"}, "out 'y', shape [2,6], does not fit in in[0] 'x0', "
     "shape [4,5]"),
    ("dynamic_update_slice", [("float32", [4, 5]), ("float32", [5, 1]),
                              ("int64", [2])], ("float32", [4, 5]),
     {"bounds": "check"}, "in[1] 'x1', shape [5,1], does not fit in in[0] 'x0'"),
    ("dynamic_update_slice", [("float32", [4, 5]), ("float32", [2, 1]),
                              ("bool", [2])], ("float32", [4, 5]),
     {"bounds": "check"}, "in[2] 'x2' holds bool: starts must be integers"),
])
def test_bad_dynamic_slice_is_invalid(tmp_path, op, ins, out, attrs, detail):
    inputs = {f"x{i}": spec for i, spec in enumerate(ins)}
    path = program_neff(tmp_path, inputs, {"y": out},
                        [{"op": op, "in": list(inputs), "out": "y", **attrs}])
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path)
    assert ei.value.status_code == 2
    assert f"({op}): {detail}" in str(ei.value)
