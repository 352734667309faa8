"""Trace a NumPy-style function into an emulator program.

``compile`` calls the function once with symbolic arrays (``Traced``) in
place of its inputs.  Each NumPy operator, ufunc or function applied to them
appends an operation to a program (docs/neff-emulator-format.md §3), and
NumPy itself decides every result dtype, so the program computes what NumPy
would.  NumPy arrays the function closes over become constants.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Sequence

import numpy as np

from nrtpy import _dtypes

from nrtpy.neff import _ops

MAX_DIMS = 8

# Unary ufuncs -> program op names.
_UNARY = {
    np.negative: "neg", np.absolute: "abs", np.exp: "exp", np.log: "log",
    np.sqrt: "sqrt", np.reciprocal: "reciprocal", np.square: "square",
    np.tanh: "tanh", np.sin: "sin", np.cos: "cos", np.floor: "floor",
    np.ceil: "ceil", np.sign: "sign", np.logical_not: "logical_not",
    np.positive: "copy", np.expm1: "expm1", np.log1p: "log1p",
    np.cbrt: "cbrt", np.rint: "round_even", np.isfinite: "is_finite",
}
# Binary ufuncs -> program op names.
_BINARY = {
    np.add: "add", np.subtract: "sub", np.multiply: "mul",
    np.true_divide: "div", np.power: "pow", np.maximum: "maximum",
    np.minimum: "minimum", np.remainder: "mod", np.floor_divide: "floor_divide",
    np.equal: "equal", np.not_equal: "not_equal", np.less: "less",
    np.less_equal: "less_equal", np.greater: "greater",
    np.greater_equal: "greater_equal", np.logical_and: "logical_and",
    np.logical_or: "logical_or", np.logical_xor: "logical_xor",
    np.fmod: "rem", np.left_shift: "shift_left", np.arctan2: "atan2",
    np.copysign: "copysign",
}
# Bitwise ufuncs: on booleans the logical ops, on integers the bitwise ops.
_BOOL_BITWISE = {
    np.bitwise_and: np.logical_and, np.bitwise_or: np.logical_or,
    np.bitwise_xor: np.logical_xor, np.invert: np.logical_not,
}
_INT_BITWISE = {
    np.bitwise_and: "bitwise_and", np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor", np.invert: "bitwise_not",
}
def dtype_name(dt: np.dtype) -> str:
    name = _dtypes.name_of(dt)
    if name is None:
        raise TypeError(f"nrtpy.neff.compile: dtype {np.dtype(dt).name} is not "
                        f"supported on the emulator (supported: "
                        f"{', '.join(sorted(_dtypes.NAMES))})")
    return name


class Program:
    """The program being recorded: buffers, ops and constants."""

    def __init__(self) -> None:
        self.buffers: dict[str, dict[str, Any]] = {}
        self.ops: list[dict[str, Any]] = []
        self.consts: dict[str, np.ndarray] = {}
        # id(array) -> (array, its constant).  The array is kept so that its
        # id is not reused by another (temporary) array while tracing.
        self._const_ids: dict[int, tuple[np.ndarray, Traced]] = {}
        self._n = 0
        # Ranks that load the NEFF: the group of collectives without
        # replica groups (compile's world_size).
        self.world_size = 1

    def buffer(self, kind: str, shape: tuple[int, ...], dtype: np.dtype,
               name: str | None = None) -> Traced:
        if len(shape) > MAX_DIMS:
            raise ValueError(f"nrtpy.neff.compile: arrays of {len(shape)} "
                             f"dimensions are not supported (at most {MAX_DIMS})")
        if name is None:
            name = f"tmp.{self._n}"
            self._n += 1
        self.buffers[name] = {"kind": kind, "dtype": dtype_name(dtype),
                              "shape": [int(d) for d in shape]}
        return Traced(self, name, tuple(int(d) for d in shape), np.dtype(dtype))

    def const(self, array: np.ndarray) -> Traced:
        key = id(array)
        if key in self._const_ids:
            return self._const_ids[key][1]
        original = array
        # (np.ascontiguousarray makes 0-d arrays 1-d: keep the shape)
        array = np.ascontiguousarray(array).reshape(np.shape(array))
        name = f"const.{len(self.consts)}"
        t = self.buffer("const", array.shape, array.dtype, name)
        self.buffers[name]["var"] = name
        self.consts[name] = array
        self._const_ids[key] = (original, t)
        return t

    def emit(self, op: str, inputs: Sequence[Traced], shape: tuple[int, ...],
             dtype: np.dtype, compute: np.dtype | None = None,
             **attrs: Any) -> Traced:
        out = self.buffer("temp", shape, dtype)
        rec: dict[str, Any] = {"op": op, "in": [t.name for t in inputs],
                               "out": out.name}
        if compute is not None and np.dtype(compute) != np.dtype(dtype):
            rec["dtype"] = dtype_name(compute)
        rec.update(attrs)
        self.ops.append(rec)
        return out

    def operand(self, value: Any, like: np.dtype | None = None) -> Traced:
        """A Traced for a Traced, an array (constant) or a Python scalar."""
        if isinstance(value, Traced):
            if value.program is not self:
                raise ValueError("nrtpy.neff.compile: a traced array from "
                                 "another compile() call was used")
            return value
        if isinstance(value, np.ndarray) or isinstance(value, np.generic):
            return self.const(np.asarray(value))
        if isinstance(value, (bool, numbers.Number)):
            dt = np.result_type(like, value) if like is not None else np.asarray(value).dtype
            return self.full(value, (), dt)
        raise TypeError(f"nrtpy.neff.compile: unsupported operand of type "
                        f"{type(value).__name__}")

    def full(self, value: Any, shape: tuple[int, ...], dtype: np.dtype) -> Traced:
        v: Any = value
        if isinstance(value, (float, np.floating)):
            f = float(value)
            v = "nan" if f != f else ("inf" if f == float("inf") else
                                      "-inf" if f == float("-inf") else f)
        elif isinstance(value, (bool, np.bool_)):
            v = int(bool(value))
        elif isinstance(value, (numbers.Integral,)):
            v = int(value)
        else:
            raise TypeError(f"nrtpy.neff.compile: unsupported constant {value!r}")
        return self.emit("full", [], shape, np.dtype(dtype), value=v)


def _axes(axis: Any, ndim: int) -> list[int]:
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    out = []
    for a in axis:
        a = int(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    return sorted(set(out))


def _reduced_shape(shape: tuple[int, ...], axes: list[int], keepdims: bool):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class Traced(np.lib.mixins.NDArrayOperatorsMixin):
    """A symbolic array: records what is done to it instead of computing."""

    __array_priority__ = 1000

    def __init__(self, program: Program, name: str, shape: tuple[int, ...],
                 dtype: np.dtype) -> None:
        self.program = program
        self.name = name
        self.shape = shape
        self.dtype = np.dtype(dtype)

    # -- array-like attributes ------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def T(self) -> Traced:
        return self.transpose()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized traced array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Traced({self.name}, shape={self.shape}, dtype={self.dtype})"

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes Traced lacks: name NumPy's, if it is one.
        if not name.startswith("_") and hasattr(np.ndarray, name):
            raise TypeError(f"nrtpy.neff.compile: unsupported operation "
                            f"numpy.ndarray.{name}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __bool__(self) -> bool:
        raise TypeError("nrtpy.neff.compile: the truth value of a traced "
                        "array is not known while tracing (data-dependent "
                        "Python control flow cannot be compiled)")

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError("nrtpy.neff.compile: a traced array cannot be "
                        "converted to a NumPy array while tracing")

    # -- methods ----------------------------------------------------------
    def astype(self, dtype: Any, copy: bool = True) -> Traced:
        dtype = np.dtype(dtype)
        return self.program.emit("cast", [self], self.shape, dtype)

    def reshape(self, *shape: Any, order: str = "C", **kw: Any) -> Traced:
        if order != "C":
            raise TypeError("nrtpy.neff.compile: only C-order reshape is supported")
        # np.reshape(a, shape=...) (NumPy >= 2.1) or newshape=... (older)
        for key in ("shape", "newshape"):
            if key in kw and not shape:
                shape = (kw.pop(key),)
        if kw or not shape:
            raise TypeError(f"reshape() got unexpected arguments {sorted(kw)}"
                            if kw else "reshape() needs a shape")
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        new = np.empty(self.shape, dtype=np.bool_).reshape(shape).shape
        return self.program.emit("reshape", [self], new, self.dtype)

    def transpose(self, *axes: Any) -> Traced:
        if len(axes) == 1 and axes[0] is not None and not isinstance(axes[0], (int, np.integer)):
            axes = tuple(axes[0])
        perm = list(range(self.ndim))[::-1] if not axes or axes == (None,) else [
            int(a) % self.ndim for a in axes]
        if sorted(perm) != list(range(self.ndim)):
            raise ValueError(f"axes {axes} don't match array of {self.ndim} dims")
        shape = tuple(self.shape[p] for p in perm)
        return self.program.emit("transpose", [self], shape, self.dtype, perm=perm)

    def sum(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Traced:
        return _reduce("sum", self, axis, keepdims, kw)

    def mean(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Traced:
        return _reduce("mean", self, axis, keepdims, kw)

    def max(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Traced:
        return _reduce("max", self, axis, keepdims, kw)

    def min(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Traced:
        return _reduce("min", self, axis, keepdims, kw)

    def prod(self, axis: Any = None, keepdims: bool = False, **kw: Any) -> Traced:
        return _reduce("prod", self, axis, keepdims, kw)

    def argmax(self, axis: Any = None, keepdims: bool = False) -> Traced:
        return _argreduce("argmax", self, axis, keepdims)

    def argmin(self, axis: Any = None, keepdims: bool = False) -> Traced:
        return _argreduce("argmin", self, axis, keepdims)

    def __getitem__(self, key: Any) -> Traced:
        return _getitem(self, key)

    # -- NumPy protocols --------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any,
                        **kwargs: Any) -> Any:
        # Keyword arguments change the result (dtype=, out=, where=...): only
        # their defaults are accepted, never silently ignored.
        unsupported = sorted(k for k, v in kwargs.items()
                             if not (k in _UFUNC_DEFAULTS and _is_default(v, _UFUNC_DEFAULTS[k])))
        if method != "__call__" or unsupported:
            raise TypeError(f"nrtpy.neff.compile: unsupported operation "
                            f"numpy.{ufunc.__name__}.{method} with {unsupported}"
                            if method != "__call__" else
                            f"nrtpy.neff.compile: unsupported arguments to "
                            f"numpy.{ufunc.__name__}: {unsupported}")
        if ufunc is np.matmul:
            return _matmul(self.program, *inputs)
        if ufunc in _BOOL_BITWISE:
            # `&`, `|`, `^` and `~` of booleans (masks such as (x > 0) & (x < 1))
            # are the logical ops; of integers the bitwise ops.
            loop = ufunc.resolve_dtypes(tuple(_weak(v) for v in inputs) + (None,))
            if loop[-1] == np.bool_:
                ufunc = _BOOL_BITWISE[ufunc]
            elif ufunc is np.invert:
                (x,) = inputs
                x = self.program.operand(x)
                return self.program.emit("bitwise_not", [x], x.shape, loop[-1],
                                         compute=loop[0])
            else:
                return _binary(self.program, ufunc, *inputs, op=_INT_BITWISE[ufunc])
        if ufunc is np.right_shift:
            # NumPy's right shift is arithmetic for signed types, logical for
            # unsigned ones; both give 0 or the sign fill past the width, as
            # the emulator's shifts do.
            loop = ufunc.resolve_dtypes(tuple(_weak(v) for v in inputs) + (None,))
            return _binary(self.program, ufunc, *inputs,
                           op="shift_right_arithmetic" if loop[0].kind == "i"
                           else "shift_right_logical")
        if ufunc in _UNARY:
            (x,) = inputs
            x = self.program.operand(x)
            loop = ufunc.resolve_dtypes((x.dtype, None))
            compute = loop[0]
            if ufunc is np.isfinite and compute.kind != "f":
                compute = np.dtype(np.float64)  # integers are all finite
            return self.program.emit(_UNARY[ufunc], [x], x.shape, loop[-1],
                                     compute=compute)
        if ufunc in _BINARY:
            return _binary(self.program, ufunc, *inputs)
        raise TypeError(f"nrtpy.neff.compile: unsupported operation "
                        f"numpy.{ufunc.__name__}")

    def __array_function__(self, func: Any, types: Any, args: Any,
                           kwargs: Any) -> Any:
        impl = _FUNCTIONS.get(func)
        if impl is None:
            module = getattr(func, "__module__", None) or "numpy"
            raise TypeError(f"nrtpy.neff.compile: unsupported operation "
                            f"{module}.{getattr(func, '__name__', func)}")
        return impl(*args, **kwargs)


# The ufunc keyword arguments accepted, with the only value accepted.
_UFUNC_DEFAULTS: dict[str, Any] = {"out": None, "where": True, "casting": "same_kind",
                                   "order": "K", "subok": True}


def _is_default(value: Any, default: Any) -> bool:
    if default is None:  # out=None arrives as a tuple of Nones
        return value is None or (isinstance(value, tuple) and all(v is None for v in value))
    return value is default or (isinstance(value, str) and value == default)


def _program_of(*values: Any) -> Program:
    for v in values:
        if isinstance(v, Traced):
            return v.program
        if isinstance(v, (list, tuple)):
            for w in v:
                if isinstance(w, Traced):
                    return w.program
    raise TypeError("nrtpy.neff.compile: no traced operand")


def _weak(value: Any) -> Any:
    """What to pass to resolve_dtypes: a dtype, or a Python type for weak
    scalars (NEP 50)."""
    if isinstance(value, Traced):
        return value.dtype
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value).dtype
    if isinstance(value, bool):
        # (resolve_dtypes takes no Python bool; the bool dtype is the lowest
        # kind, so it promotes like a weak bool would)
        return np.dtype(np.bool_)
    if isinstance(value, numbers.Integral):
        return int
    if isinstance(value, numbers.Real):
        return float
    if isinstance(value, numbers.Complex):
        return complex
    raise TypeError(f"nrtpy.neff.compile: unsupported operand of type "
                    f"{type(value).__name__}")


def _binary(program: Program, ufunc: np.ufunc, a: Any, b: Any,
            op: str | None = None) -> Traced:
    loop = ufunc.resolve_dtypes((_weak(a), _weak(b), None))
    ta = program.operand(a, like=loop[0])
    tb = program.operand(b, like=loop[1])
    shape = np.broadcast_shapes(ta.shape, tb.shape)
    return program.emit(op or _BINARY[ufunc], [ta, tb], shape, loop[2],
                        compute=loop[0])


def _matmul(program: Program, a: Any, b: Any) -> Traced:
    ta, tb = program.operand(a), program.operand(b)
    if ta.ndim == 0 or tb.ndim == 0:
        raise ValueError("matmul: operands must not be scalars")
    loop = np.matmul.resolve_dtypes((ta.dtype, tb.dtype, None))
    shape = np.matmul(np.empty(ta.shape, np.bool_), np.empty(tb.shape, np.bool_)).shape \
        if ta.size * tb.size < 1 << 16 else _matmul_shape(ta.shape, tb.shape)
    return program.emit("matmul", [ta, tb], shape, loop[2], compute=loop[0])


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    a1, b1 = len(a) == 1, len(b) == 1
    a2 = (1,) + a if a1 else a
    b2 = b + (1,) if b1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: core dimension mismatch {a} @ {b}")
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if a1:
        out = out[:-2] + out[-1:]
    if b1:
        out = out[:-1]
    return out


def _reduce(op: str, x: Any, axis: Any, keepdims: bool, kw: dict) -> Traced:
    if kw.get("out") is not None or kw.get("where", True) is not True or \
            kw.get("initial", np._NoValue) is not np._NoValue:
        raise TypeError(f"nrtpy.neff.compile: unsupported arguments to "
                        f"numpy.{op}: {sorted(k for k in kw if kw[k] is not None)}")
    program = _program_of(x)
    x = program.operand(x)
    axes = _axes(axis, x.ndim)
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min,
          "prod": np.prod}[op]
    dtype = kw.get("dtype")
    probe = fn(np.ones((1,) * x.ndim, dtype=x.dtype), axis=tuple(axes) or None,
               dtype=dtype) if op in ("sum", "mean", "prod") else x
    out_dtype = np.asarray(probe).dtype if op in ("sum", "mean", "prod") else x.dtype
    if op == "mean" and x.dtype.kind in "biu" and dtype is None:
        out_dtype = np.dtype(np.float64)
    shape = _reduced_shape(x.shape, axes, bool(keepdims))
    return program.emit(op, [x], shape, out_dtype, axes=axes,
                        keepdims=bool(keepdims))


def _argreduce(op: str, x: Any, axis: Any, keepdims: bool) -> Traced:
    program = _program_of(x)
    x = program.operand(x)
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    (ax,) = _axes(axis, x.ndim)
    shape = _reduced_shape(x.shape, [ax], bool(keepdims))
    return program.emit(op, [x], shape, np.dtype(np.int64), axis=ax,
                        keepdims=bool(keepdims))


def _getitem(x: Traced, key: Any) -> Traced:
    if not isinstance(key, tuple):
        key = (key,)
    if any(isinstance(k, (Traced, np.ndarray, list, bool, np.bool_)) for k in key):
        raise TypeError("nrtpy.neff.compile: only basic slicing with constant "
                        "ints, slices, None and ... is supported (use np.take "
                        "for gathers)")
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis")
    used = sum(k is not None and k is not Ellipsis for k in key)  # dims indexed
    if used > x.ndim:
        raise IndexError(f"too many indices for a {x.ndim}-d array")
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (x.ndim - used) + key[i + 1:]
    else:
        key = key + (slice(None),) * (x.ndim - used)
    start, step, shape, final = [], [], [], []
    dims = iter(x.shape)
    for k in key:
        if k is None:  # np.newaxis: a new dimension of 1
            final.append(1)
            continue
        dim = next(dims)
        if isinstance(k, slice):
            s0, s1, st = k.indices(dim)
            n = len(range(s0, s1, st))
            start.append(s0 if n else 0)
            step.append(st)
            shape.append(n)
            final.append(n)
        elif isinstance(k, (int, np.integer)):
            i = int(k)
            if not -dim <= i < dim:
                raise IndexError(f"index {i} is out of bounds for axis with size {dim}")
            start.append(i % dim)
            step.append(1)
            shape.append(1)
        else:
            raise TypeError(f"nrtpy.neff.compile: unsupported index {k!r}")
    out = x
    if any(n != d or st != 1 for n, d, st in zip(shape, x.shape, step)):
        out = x.program.emit("slice", [x], tuple(shape), x.dtype, start=start, step=step)
    if tuple(final) != tuple(out.shape):
        out = x.program.emit("reshape", [out], tuple(final), x.dtype)
    return out


def _f_where(cond: Any, x: Any = None, y: Any = None) -> Traced:
    if x is None or y is None:
        raise TypeError("nrtpy.neff.compile: numpy.where with one argument "
                        "(nonzero) is not supported")
    program = _program_of(cond, x, y)
    loop_dt = np.result_type(_weak_value(x), _weak_value(y))
    tc = program.operand(cond)
    if tc.dtype != np.bool_:
        tc = tc.astype(np.bool_)
    tx, ty = program.operand(x, like=loop_dt), program.operand(y, like=loop_dt)
    shape = np.broadcast_shapes(tc.shape, tx.shape, ty.shape)
    return program.emit("where", [tc, tx, ty], shape, loop_dt, compute=loop_dt)


def _weak_value(v: Any) -> Any:
    if isinstance(v, Traced):
        return v.dtype
    return v


def _f_take(a: Any, indices: Any, axis: Any = None, out: Any = None,
            mode: str = "raise") -> Traced:
    if out is not None or mode != "raise":
        raise TypeError("nrtpy.neff.compile: numpy.take supports only "
                        "mode='raise' without out=")
    program = _program_of(a, indices)
    ta = program.operand(a)
    ti = program.operand(np.asarray(indices) if not isinstance(indices, Traced) else indices)
    if ti.dtype.kind not in "iu":
        raise TypeError(f"numpy.take: indices must be integers, got {ti.dtype}")
    if axis is None:
        ta = ta.reshape(-1)
        axis = 0
    (ax,) = _axes(axis, ta.ndim)
    shape = ta.shape[:ax] + ti.shape + ta.shape[ax + 1:]
    return program.emit("take", [ta, ti], shape, ta.dtype, axis=ax)


def _f_concatenate(arrays: Sequence[Any], axis: Any = 0, out: Any = None,
                   dtype: Any = None, casting: str = "same_kind") -> Traced:
    if out is not None or axis is None:
        raise TypeError("nrtpy.neff.compile: numpy.concatenate supports an "
                        "integer axis without out=")
    program = _program_of(list(arrays))
    ts = [program.operand(a) for a in arrays]
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*[t.dtype for t in ts])
    ts = [t if t.dtype == dt else t.astype(dt) for t in ts]
    (ax,) = _axes(axis, ts[0].ndim)
    shape = np.concatenate([np.empty(t.shape, np.bool_) for t in ts], axis=ax).shape
    return program.emit("concatenate", ts, shape, dt, axis=ax)


def _f_broadcast_to(array: Any, shape: Any, subok: bool = False) -> Traced:
    program = _program_of(array)
    t = program.operand(array)
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    np.broadcast_shapes(t.shape, shape)
    return program.emit("broadcast_to", [t], shape, t.dtype)


def _f_argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
               stable: Any = None) -> Traced:
    # The emulator's argsort is stable, which every kind may be; NumPy's
    # indices are intp (int64), the op's int32.
    if order is not None:
        return _unsupported("numpy.argsort with order=")
    program = _program_of(a)
    t = program.operand(a)
    if axis is None:
        t = t.reshape(-1)
        axis = 0
    ax = _axes(axis, max(t.ndim, 1))[0]
    perm = program.emit("argsort", [t], t.shape, np.dtype(np.int32), axis=ax)
    return program.emit("cast", [perm], t.shape, np.dtype(np.int64))


def _unsupported(what: str) -> Any:
    raise TypeError(f"nrtpy.neff.compile: unsupported operation {what}")


def _method(name: str) -> Callable[..., Any]:
    def impl(a: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(a, Traced):
            a = _program_of(a).operand(a)
        return getattr(a, name)(*args, **kwargs)
    return impl


_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.sum: _method("sum"), np.mean: _method("mean"), np.max: _method("max"),
    np.min: _method("min"), np.prod: _method("prod"),
    np.argmax: _method("argmax"), np.argmin: _method("argmin"),
    np.transpose: _method("transpose"), np.reshape: _method("reshape"),
    np.where: _f_where, np.take: _f_take, np.concatenate: _f_concatenate,
    np.broadcast_to: _f_broadcast_to, np.argsort: _f_argsort,
    np.matmul: lambda a, b, **kw: _matmul(_program_of(a, b), a, b),
    np.dot: lambda a, b, out=None: _matmul(_program_of(a, b), a, b) if out is None
    else _unsupported("numpy.dot with out="),
}
for _name in ("amax", "amin"):
    if hasattr(np, _name):
        _FUNCTIONS[getattr(np, _name)] = _method(_name[1:])

# The activation helpers of nrtpy.neff work on both NumPy and traced arrays.
_ops.register(Traced, lambda op, x, **attrs: x.program.emit(
    op, [x], x.shape,
    x.dtype if _ops.is_float(x.dtype) else np.dtype(np.float64), **attrs))
