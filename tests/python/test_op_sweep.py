"""Every row of the op table against NumPy, generated from the table.

For each elementwise row of ``_nrtpy.OPS`` and each dtype of ``DTYPES``,
a one-op program is written (the row's op by name, through the tracer's
own emitter), run on the emulator over a few shapes (odd sizes, a
broadcast operand, a scalar operand) and compared with NumPy / ml_dtypes
computing the same thing in the emulator's compute type (float32 for
floats of at most 32 bits, float64, 64-bit integers, bool as 0/1;
docs/neff-emulator-format.md §3), rounded or wrapped once to the result's
dtype.  A float-only row must refuse the other dtypes (the table's own
column says which); nothing else may be refused.  The reductions and
layout rows are swept through the tracer's NumPy functions.

Rows with kernels of their own that need more than an operand to be
tested (control flow, collectives, scatter, sort, matmul, gather) are
declared in ``ELSEWHERE`` with the test file that covers them.  A row that
is in neither place fails ``test_every_row_has_a_case``: adding an op to
the table means adding its case here.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import nrtpy.neff as nn
from nrtpy import NrtError, NrtpyModel, NrtpyTensor, _dtypes, _nrtpy

OPS = _nrtpy.OPS
HERE = Path(__file__).resolve().parent

FP8 = np.dtype(ml_dtypes.float8_e4m3fn)
DTYPES = [np.dtype(d) for d in (np.float32, np.float64, ml_dtypes.bfloat16,
                                np.float16, FP8, np.int32, np.int64, np.int8,
                                np.uint8, np.uint32, np.bool_)]
SHAPES = [((3, 7), (3, 7)), ((5, 9), (9,)), ((4, 1, 3), ())]

# Rows covered by tests of their own (control flow, collectives, and ops
# the tracer does not write from a NumPy function), with the test file
# under tests/ that covers each.
ELSEWHERE = {
    "iota": "python/test_hlo_module.py", "full": "python/test_control_flow.py",
    "while": "python/test_control_flow.py",
    "conditional": "python/test_control_flow.py",
    "all_reduce": "python/test_collectives.py",
    "all_gather": "python/test_collectives.py",
    "reduce_scatter": "python/test_collectives.py",
    "all_to_all": "python/test_collectives.py",
    "collective_permute": "python/test_collectives.py",
    "bitcast": "python/test_xla_ops.py", "scatter": "python/test_xla_ops.py",
    "argsort": "python/test_xla_ops.py",
    "update_slice": "python/test_xla_ops.py",
    "dynamic_slice": "python/test_xla_ops.py",
    "dynamic_update_slice": "python/test_xla_ops.py",
}


def _erf(x):
    from math import erf
    return np.vectorize(erf, otypes=[np.float64])(x)


# The NumPy meaning of each elementwise row, in the compute type.
UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "reciprocal": lambda x: (np.reciprocal(x) if x.dtype.kind == "f"
                             else _trunc_div(np.ones_like(x), x)),
    "square": np.square, "tanh": np.tanh, "sigmoid": nn.sigmoid,
    "relu": nn.relu, "gelu": nn.gelu, "sin": np.sin, "cos": np.cos,
    "floor": np.floor, "ceil": np.ceil,
    # XLA's sign, as the format documents: a zero keeps its sign
    "sign": lambda x: np.where(x == 0, x, np.sign(x)),
    "logical_not": np.logical_not, "expm1": np.expm1, "log1p": np.log1p,
    "cbrt": np.cbrt, "erf": _erf, "round_even": np.rint,
    "round_away": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x)
    if x.dtype.kind == "f" else x,
    "is_finite": np.isfinite, "bitwise_not": np.invert, "cast": None, "copy": None,
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": lambda a, b: a / b if a.dtype.kind == "f" else np.floor_divide(a, b),
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "mod": np.mod, "floor_divide": np.floor_divide, "equal": np.equal,
    "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "shift_left": np.left_shift, "shift_right_logical": None,
    "shift_right_arithmetic": np.right_shift, "rem": np.fmod,
    "atan2": np.arctan2, "copysign": np.copysign,
    "trunc_divide": lambda a, b: a / b if a.dtype.kind == "f" else _trunc_div(a, b),
}
TERNARY = {"where": np.where}
# Rows whose values need care: operands drawn from where they are defined.
POSITIVE = {"log", "sqrt", "rsqrt", "log1p"}
NONZERO_DIVISOR = {"div", "mod", "floor_divide", "rem", "trunc_divide"}
NONZERO = {"reciprocal"}
TRANSCENDENTAL = {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu",
                  "sin", "cos", "expm1", "log1p", "cbrt", "erf", "pow", "atan2",
                  "reciprocal", "div", "trunc_divide"}


def _trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)




def compute_type(dt: np.dtype) -> np.dtype:
    if dt == np.float64:
        return dt
    if dt.kind in "fV" or dt in (np.dtype(ml_dtypes.bfloat16), FP8):
        return np.dtype(np.float32)
    if dt == np.bool_:
        return np.dtype(np.int64)
    return np.dtype(np.uint64 if dt.kind == "u" else np.int64)


def is_float(dt: np.dtype) -> bool:
    return _dtypes.is_float(dt)


def values(rng, dt: np.dtype, shape, op: str, which: int) -> np.ndarray:
    """Operand ``which`` of ``op``: values where the op is defined and the
    emulator and NumPy must agree (the edges have tests of their own)."""
    if dt == np.bool_:
        if op in NONZERO_DIVISOR and which == 1:
            return np.ones(shape, np.bool_)
        return rng.random(shape) < 0.5
    if is_float(dt):
        x = rng.standard_normal(shape) * 3
        if op in POSITIVE or (op == "pow" and which == 0):
            x = np.abs(x) + 0.25
        if op == "pow" and which == 1:
            x = np.round(x) / 2  # exponents that keep results in range
        if op in NONZERO_DIVISOR and which == 1:
            x = np.where(np.abs(x) < 0.5, 1.5, x)
        if dt == FP8 or dt == np.float16:
            x = np.clip(x, -100, 100)
        if op not in POSITIVE and op not in NONZERO_DIVISOR | NONZERO:
            x.flat[::4] = 0.0  # zeros of both signs, where ties are decided
            x.flat[1::8] = -0.0
        return x.astype(dt)
    lo, hi = (0, 40) if dt.kind == "u" else (-20, 20)
    if op.startswith("shift") and which == 1:
        lo, hi = 0, 7
    if op == "pow":
        lo, hi = (0, 4) if which == 1 else (-3, 4)
    x = rng.integers(lo, hi, size=shape)
    if (op in NONZERO_DIVISOR and which == 1) or op in NONZERO:
        x = np.where(x == 0, 3, x)
    return x.astype(dt)


def out_dtype(op: str, dt: np.dtype) -> np.dtype:
    family = OPS[op]["family"]
    if family in ("compare", "logical", "test"):
        return np.dtype(np.bool_)
    return dt


def accepts(op: str, dt: np.dtype) -> bool:
    row = OPS[op]
    if row["float_only"]:
        return is_float(dt)
    if row["family"] == "bitwise":
        return not is_float(dt) and not (op.startswith("shift") and dt == np.bool_)
    return True


def reference(op: str, arrays: list[np.ndarray], dt: np.dtype) -> np.ndarray:
    ct = compute_type(dt)
    if OPS[op]["family"] in ("logical",):
        xs = [a.astype(np.bool_) for a in arrays]
    elif op == "where":
        xs = [arrays[0].astype(np.bool_)] + [a.astype(ct) for a in arrays[1:]]
    else:
        xs = [a.astype(ct) for a in arrays]
    fn = {**UNARY, **BINARY, **TERNARY}[op]
    with np.errstate(all="ignore"):
        if op == "shift_right_logical":
            ux = arrays[0].astype(f"u{dt.itemsize}")
            r = (ux >> arrays[1].astype(ux.dtype)).view(dt)
        elif op in ("copy",):
            r = xs[0]
        elif op == "bitwise_not" and dt == np.bool_:
            r = np.logical_not(arrays[0])
        elif op in ("bitwise_and", "bitwise_or", "bitwise_xor") and dt == np.bool_:
            r = fn(arrays[0], arrays[1])
        else:
            r = fn(*xs)
    want = out_dtype(op, dt)
    r = np.asarray(r)
    if want == np.bool_:
        return r.astype(np.bool_)
    if is_float(want):
        return r.astype(want)
    return r.astype(np.int64).astype(want) if want.kind != "u" else \
        r.astype(np.uint64).astype(want)


def run_op(tmp_path, op: str, arrays: list[np.ndarray], out_dt: np.dtype,
           out_shape) -> np.ndarray:
    """The one-op program ``op(arrays)`` written by the tracer's emitter,
    loaded and run on the emulator."""
    def program(*xs):
        return xs[0].program.emit(op, list(xs), tuple(out_shape), out_dt)

    path = nn.compile(program, *arrays, path=tmp_path / f"{op}.neff")
    model = NrtpyModel.load_from_neff(path)
    ins = {n: NrtpyTensor.from_numpy(np.ascontiguousarray(a), name=n)
           for n, a in zip(model.input_tensors_info, arrays)}
    return next(iter(model(ins).values())).numpy()


def check_close(op: str, got: np.ndarray, want: np.ndarray, dt: np.dtype,
                x: np.ndarray | None = None):
    assert got.dtype == want.dtype and got.shape == want.shape, \
        (op, got.dtype, want.dtype, got.shape, want.shape)
    if not is_float(want.dtype) or op not in TRANSCENDENTAL:
        np.testing.assert_array_equal(got, want, err_msg=f"{op} {dt}", strict=True)
        if is_float(want.dtype):  # and the sign of each zero (np.maximum's ties)
            g, w = got.astype(np.float64), want.astype(np.float64)
            zeros = (g == 0) & (w == 0)
            assert np.array_equal(np.signbit(g[zeros]), np.signbit(w[zeros])), \
                (op, dt, "signed zeros differ")
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    # Within a few ulps of the result type (a step of the narrow types);
    # float32 gelu within 2.5 (2 + |m|) ulps, m = -2u the argument of its
    # exponential (docs/neff-emulator-format.md, accuracy).
    eps = float(ml_dtypes.finfo(want.dtype).eps)
    steps = np.full(w.shape, 1.0 if want.dtype.itemsize < 4 else 8.0)
    if op == "gelu" and want.dtype.itemsize >= 4:
        xf = np.broadcast_to(x.astype(np.float64), w.shape)
        m = 2 * np.sqrt(2 / np.pi) * (xf + 0.044715 * xf ** 3)
        steps = np.maximum(steps, 2.5 * (2 + np.abs(m)))
    tol = steps * eps * np.maximum(np.abs(w), float(ml_dtypes.finfo(want.dtype).tiny))
    with np.errstate(invalid="ignore"):  # (inf - inf: equal, counted below)
        bad = ~((np.abs(g - w) <= tol) | (np.isnan(g) & np.isnan(w)) | (g == w))
    assert not bad.any(), (op, dt, g[bad][:5], w[bad][:5])


ELEMENTWISE = [op for op, row in OPS.items() if row["family"] is not None]


def test_every_row_has_a_case():
    swept = set(ELEMENTWISE) | set(REDUCTIONS) | set(LAYOUT) | set(TRACED)
    missing = [op for op in OPS if op not in swept and op not in ELSEWHERE]
    assert not missing, f"op(s) {missing} of the table have no case: add " \
                        f"them to test_op_sweep.py"
    for op, where in ELSEWHERE.items():
        assert op in OPS and op not in swept, op
        assert re.search(rf"\b{op}\b", (HERE.parent / where).read_text()), (op, where)
    # the elementwise rows have a NumPy meaning each
    for op in ELEMENTWISE:
        assert op in {**UNARY, **BINARY, **TERNARY}, op


@pytest.mark.parametrize("op", ELEMENTWISE)
def test_elementwise_row(tmp_path, op):
    rng = np.random.default_rng(sum(map(ord, op)))
    arity = OPS[op]["arity"]
    for dt in DTYPES:
        if op == "cast":
            continue  # test_cast_row
        for s0, s1 in SHAPES:
            shapes = [s0, s1, s0][:arity]
            if op == "where":
                shapes = [s1, s0, s1]
            arrays = [values(rng, np.dtype(np.bool_) if op == "where" and k == 0
                             else dt, shp, op, k) for k, shp in enumerate(shapes)]
            out_shape = np.broadcast_shapes(*shapes)
            odt = out_dtype(op, dt)
            if not accepts(op, dt):
                with pytest.raises((ValueError, TypeError, NrtError)):
                    run_op(tmp_path, op, arrays, odt, out_shape)
                break
            got = run_op(tmp_path, op, arrays, odt, out_shape)
            check_close(op, got, reference(op, arrays, dt), dt, arrays[0])


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_cast_row(tmp_path, dt):
    # to and from float32, with values every type holds
    rng = np.random.default_rng(7)
    src = values(rng, dt, (5, 9), "cast", 0)
    got = run_op(tmp_path, "cast", [src], np.dtype(np.float32), (5, 9))
    np.testing.assert_array_equal(got, src.astype(np.float32), strict=True)
    f = np.round(rng.standard_normal((5, 9)) * 4).astype(np.float32)
    if dt.kind == "u":
        f = np.abs(f)
    got = run_op(tmp_path, "cast", [f], dt, (5, 9))
    np.testing.assert_array_equal(got, f.astype(dt), strict=True)


REDUCTIONS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min,
              "prod": np.prod}
LAYOUT = {"transpose": lambda x: np.transpose(x, (2, 0, 1)),
          "reshape": lambda x: x.reshape(4, -1),
          "broadcast_to": lambda x: np.broadcast_to(x[:, :1], (4, 5, 6)),
          "concatenate": lambda x: np.concatenate([x, x[:1]], axis=0)}


def run_traced(tmp_path, fn, x) -> np.ndarray:
    path = nn.compile(fn, x, path=tmp_path / "t.neff")
    model = NrtpyModel.load_from_neff(path)
    ins = {n: NrtpyTensor.from_numpy(x, name=n) for n in model.input_tensors_info}
    return next(iter(model(ins).values())).numpy()


@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reduction_row(tmp_path, op):
    rng = np.random.default_rng(3)
    for dt in DTYPES:
        if dt == np.bool_ and op in ("mean", "prod"):
            continue
        x = values(rng, dt, (4, 5, 6), op, 0)
        if op == "prod" and dt.kind in "iu":
            x = (x % 3).astype(dt)
        for axes in ((1,), (0, 2), None):
            fn = (lambda a, axes=axes: REDUCTIONS[op](a, axis=axes))
            got = run_traced(tmp_path, fn, x)
            ct = compute_type(dt) if dt != np.bool_ else np.dtype(np.int64)
            want = REDUCTIONS[op](x.astype(np.float64 if is_float(dt) else ct),
                                  axis=axes)
            with np.errstate(over="ignore"):  # (a product past the type's range)
                want = np.asarray(want).astype(got.dtype)
            if is_float(got.dtype):
                # float32 accumulation in any order: within count * eps of
                # the sum of magnitudes (a relative bound for prod).
                xf = np.abs(x.astype(np.float64))
                n = xf.size / np.asarray(want).size
                eps = float(ml_dtypes.finfo(got.dtype).eps)
                scale = {"sum": np.sum(xf, axis=axes), "mean": np.mean(xf, axis=axes),
                         "prod": np.abs(want.astype(np.float64))}.get(op, 0)
                tol = n * eps * np.asarray(scale) + eps * np.abs(want.astype(np.float64))
                with np.errstate(invalid="ignore"):  # (inf - inf: checked below)
                    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                ok = (diff <= tol + 1e-300) | (got.astype(np.float64) == want) | \
                    (np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64)))
                assert np.all(ok), (op, dt, axes, got, want)
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{op} {dt} {axes}")


@pytest.mark.parametrize("op", list(LAYOUT))
def test_layout_row(tmp_path, op):
    rng = np.random.default_rng(5)
    for dt in DTYPES:
        x = values(rng, dt, (4, 5, 6), op, 0)
        got = run_traced(tmp_path, LAYOUT[op], x)
        np.testing.assert_array_equal(got, LAYOUT[op](x), strict=True)


# Rows the tracer writes from NumPy functions, exact (indices, data moved)
# or within a tolerance of the float64 result (a float32 accumulation).
TRACED = {
    "argmax": (lambda x: np.argmax(x, axis=1), None),
    "argmin": (lambda x: np.argmin(x, axis=2), None),
    "slice": (lambda x: x[1:4:2, ::-1, 2:], None),
    "take": (lambda x: np.take(x, np.array([3, 0, 0, 2]), axis=1), None),
    "matmul": (lambda x: x @ np.ones((6, 3), x.dtype), "matmul"),
    "softmax": (lambda x: nn.softmax(x, axis=-1), "softmax"),
}


@pytest.mark.parametrize("op", list(TRACED))
def test_traced_row(tmp_path, op):
    fn, inexact = TRACED[op]
    rng = np.random.default_rng(11)
    for dt in DTYPES:
        if inexact and not is_float(dt) and op == "softmax":
            continue  # float-only (its row says so)
        if op in ("argmax", "argmin") and dt == np.bool_:
            continue
        x = values(rng, dt, (4, 5, 6), op, 0)
        if op == "matmul" and not is_float(dt):
            x = (x % 4).astype(dt)
        got = run_traced(tmp_path, fn, x)
        if op == "softmax":
            xf = x.astype(np.float64)
            e = np.exp(xf - xf.max(axis=-1, keepdims=True))
            want = e / e.sum(axis=-1, keepdims=True)
        else:
            want = fn(x.astype(np.float64) if inexact and is_float(dt) else x)
        want = np.asarray(want)
        if inexact and is_float(dt):
            eps = float(ml_dtypes.finfo(got.dtype).eps)
            scale = (np.abs(x.astype(np.float64)) @ np.ones((6, 3))
                     if op == "matmul" else np.abs(want))
            tiny = float(ml_dtypes.finfo(got.dtype).tiny)
            tol = (8 if op == "matmul" else 4) * eps * scale + \
                eps * np.maximum(np.abs(want), tiny)
            assert np.all(np.abs(got.astype(np.float64) - want) <= tol + 1e-30), \
                (op, dt, got, want)
        else:
            np.testing.assert_array_equal(got, want.astype(got.dtype), strict=True,
                                          err_msg=f"{op} {dt}")
