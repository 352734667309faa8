"""``nki.language`` on the emulated device: tensors, loads and stores,
element-wise math, reductions, loops, indices and the SPMD grid.

Each function traces into the kernel's emulator program (see
:mod:`nrtpy.nki._core`).  Element-wise and reduction functions compute in
float32 whatever the storage dtype (as the vector and scalar engines do)
and round once to the result dtype; integers compute in their own type.
``mask=`` (the older namespace's argument) limits which elements an
instruction writes.  Names of the SDK's ``nki.language`` that are not
implemented raise ``NotImplementedError`` naming them (docs/nki.md lists
every name and its state).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Sequence

import ml_dtypes
import numpy as np

from nrtpy.neff._trace import Traced
from nrtpy.nki import _core, _dynamic, _names, _notes
from nrtpy.nki._core import (MemoryRegion, NKIObject, NkiTensor, View, as_dtype, current,
                             fail, new_tile, require_on_chip, value_of)

# -- dtypes -----------------------------------------------------------------
bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
# (tfloat32 is stored as float32; the tensor engine's reduced mantissa is
# not emulated)
tfloat32 = np.dtype(np.float32)


class _FloatInfo:
    """``nl.fp32`` and friends of the older namespace: a dtype with its
    limits (``nl.fp32.min`` is float32's lowest value)."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = np.dtype(dtype)
        info = ml_dtypes.finfo(self.dtype)
        self.min = float(info.min)
        self.max = float(info.max)

    def __repr__(self) -> str:
        return f"nl.{self.dtype.name}"


fp32 = _FloatInfo(np.float32)
fp16 = _FloatInfo(np.float16)
bf16 = _FloatInfo(ml_dtypes.bfloat16)

# -- memories ---------------------------------------------------------------
sbuf = MemoryRegion.sbuf
psum = MemoryRegion.psum
private_hbm = MemoryRegion.private_hbm
shared_hbm = MemoryRegion.shared_hbm
hbm = MemoryRegion.private_hbm
is_hbm = _core.is_hbm
is_on_chip = _core.is_on_chip


def is_psum(buffer: Any) -> bool:
    return buffer is MemoryRegion.psum


def is_sbuf(buffer: Any) -> bool:
    return buffer is MemoryRegion.sbuf


class _TileSize:
    """Hardware tile limits (``nl.tile_size``)."""

    pmax = _core.PMAX
    psum_fmax = 512
    psum_bank_fmax = 512
    psum_bank_fmax_bytes = 2048
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_num_banks = 8

    @property
    def sbuf_fmax_bytes(self) -> int:
        return _target().sbuf_bytes

    @property
    def sbuf_fmax(self) -> int:
        return _target().sbuf_bytes // 4

    @property
    def sbuf_size_bytes(self) -> int:
        return _target().sbuf_bytes * _core.PMAX

    @property
    def total_available_sbuf_size(self) -> int:
        return _target().sbuf_bytes


def _target() -> _core.Target:
    return current().target if _core.tracing() else _core.target()


tile_size = _TileSize()


class par_dim(int):
    """The older namespace's marker of a tile's partition axis (a size):
    ``nl.ndarray((B, nl.par_dim(128), 512), ...)`` is B tiles of
    [128, 512]."""


# -- indices ----------------------------------------------------------------
def arange(start: int, stop: int | None = None, step: int = 1) -> np.ndarray:
    """An index along one axis (an integer array; index tensors with it,
    and add ``[:, None]`` / ``[None, :]`` to place it on an axis)."""
    return np.arange(start, stop, step, dtype=np.int64) if stop is not None \
        else np.arange(start, dtype=np.int64)


class _Grid(tuple):
    """``nl.mgrid[...]``: one index per axis, each on its own axis (so they
    broadcast to the grid); ``.p`` is the first, ``.x``, ``.y``, ``.z``
    the next."""

    @property
    def p(self) -> np.ndarray:
        return self[0]

    @property
    def x(self) -> np.ndarray:
        return self[1]

    @property
    def y(self) -> np.ndarray:
        return self[2]

    @property
    def z(self) -> np.ndarray:
        return self[3]


class _MGrid:
    def __getitem__(self, key: Any) -> _Grid:
        if not isinstance(key, tuple):
            key = (key,)
        n = len(key)
        axes = []
        for i, k in enumerate(key):
            if not isinstance(k, slice) or k.stop is None:
                raise TypeError("nl.mgrid takes slices with a stop, as "
                                "mgrid[0:128, 0:512]")
            r = np.arange(k.start or 0, k.stop, k.step or 1, dtype=np.int64)
            shape = [1] * n
            shape[i] = r.size
            axes.append(r.reshape(shape))
        return _Grid(axes)


mgrid = _MGrid()


def ds(start: Any, size: int) -> slice:
    """``start : start + size``; ``start`` may be a register or an
    expression of one (a loop's index), known when the kernel runs."""
    if isinstance(start, _core.Dynamic):
        return slice(start, start + int(size))
    if not isinstance(start, numbers.Integral):
        raise TypeError(f"nl.ds: start must be an int or a register, not "
                        f"{type(start).__name__}")
    return slice(int(start), int(start) + int(size))


# -- loops ----------------------------------------------------------------------
# Bounds known when the kernel is traced (ints) unroll the loop: the same
# iterations, with the index a Python int, and the emulator runs straight
# code faster than a loop of the same ops.  A bound in a register (or an
# expression of one) makes a loop the device runs: an emulator ``while``
# whose body is traced once, its index a register (nki/_dynamic.py).
def _range(start: Any, stop: Any = None, step: Any = 1, **_: Any) -> Any:
    if stop is None:
        start, stop = 0, start
    if isinstance(start, _core.Dynamic) or isinstance(stop, _core.Dynamic):
        return _dynamic.RangeLoop(start, stop, step)
    for v in (start, stop, step):
        if not isinstance(v, numbers.Integral):
            raise TypeError(f"loop bounds must be ints or registers, not "
                            f"{type(v).__name__}")
    return range(int(start), int(stop), int(step))


def affine_range(start: Any, stop: Any = None, step: int = 1, **kw: Any) -> Any:
    """A loop without carried dependencies (see _range)."""
    return _range(start, stop, step, **kw)


def sequential_range(start: Any, stop: Any = None, step: int = 1, **kw: Any) -> Any:
    """A loop with carried dependencies, in order (see _range)."""
    return _range(start, stop, step, **kw)


def static_range(start: Any, stop: Any = None, step: int = 1, **kw: Any) -> Any:
    """A loop the compiler unrolls (see _range)."""
    return _range(start, stop, step, **kw)


def dynamic_range(start: Any, stop: Any = None, step: int = 1, **kw: Any) -> Any:
    """A loop the device runs with bounds it reads at run time (see
    _range: int bounds give the same iterations, unrolled)."""
    return _range(start, stop, step, **kw)


def fori_loop(lower: Any, upper: Any, body_fun: Any, step: int = 1) -> None:
    """``body_fun(i)`` for ``i`` in ``range(lower, upper, step)``, bounds
    ints or registers as :func:`dynamic_range`'s; ``step`` must be a
    positive int."""
    if not callable(body_fun):
        raise TypeError(f"fori_loop: body_fun must be callable, not "
                        f"{type(body_fun).__name__}")
    if not isinstance(step, numbers.Integral) or isinstance(step, bool) or step <= 0:
        raise ValueError(f"fori_loop: step must be a positive int, not {step!r}")
    for i in _range(lower, upper, step):
        body_fun(i)


def while_loop(init: Any, body_fun: Any) -> None:
    """``r = init; while r != 0: r = body_fun(r)``, run by the device: the
    body is traced once, ``r`` a register holding the condition, and
    returns the register of the next one."""
    _dynamic.while_loop(init, body_fun)


# -- the SPMD grid ----------------------------------------------------------
def program_id(axis: int = 0) -> int:
    """This instance's index along ``axis`` of the launch grid."""
    t = current()
    if not t.grid:
        return 0
    if not 0 <= axis < len(t.grid):
        raise ValueError(f"program_id: axis {axis} outside the grid {t.grid}")
    return t.pid[axis]


def num_programs(axes: int = 0) -> int:
    """The size of the launch grid along ``axes``."""
    t = current()
    if not t.grid:
        return 1
    if isinstance(axes, (tuple, list)):
        return math.prod(t.grid[a] for a in axes)
    return t.grid[axes]


def program_ndim() -> int:
    return len(current().grid)


class nc(int):
    """``nl.nc(n)``: n physical NeuronCores in a grid dimension; here the
    grid's instances all run on one emulated core, so it counts as n."""


def spmd_dim(*sizes: int) -> int:
    """A grid dimension split among cores: the product of ``sizes``."""
    return math.prod(int(s) for s in sizes)


# -- tensors ----------------------------------------------------------------
def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    try:
        out = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of ints, got {shape!r:.80}") from None
    if any(d <= 0 for d in out):
        raise ValueError(f"shape {out} has a dimension that is not positive")
    return out


def _partition_axis(shape: Any) -> int:
    """The axis marked with ``nl.par_dim``, else the first."""
    if isinstance(shape, (tuple, list)):
        for i, d in enumerate(shape):
            if isinstance(d, par_dim):
                return i
    return 0


def _buffer(buffer: Any) -> MemoryRegion:
    if isinstance(buffer, MemoryRegion):
        return buffer
    if isinstance(buffer, str) and buffer in MemoryRegion.__members__:
        return MemoryRegion[buffer]
    if buffer is None:
        return MemoryRegion.sbuf
    raise TypeError(f"buffer must be nl.sbuf, nl.psum, nl.hbm, "
                    f"nl.private_hbm or nl.shared_hbm, got {buffer!r:.80}")


def ndarray(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "",
            address: Any = None, **_: Any) -> NkiTensor:
    """A new tensor on ``buffer``; its contents are undefined until written
    (the emulator fills it with zeros)."""
    trace = current()
    shape_in = shape
    shape = _shape(shape)
    dt = as_dtype(dtype, "ndarray")
    mem = _buffer(buffer)
    if mem is MemoryRegion.shared_hbm and trace.grid:
        # One tensor for every instance of the grid: the n-th shared_hbm
        # allocation of each instance is the first instance's n-th.
        if trace.shared_next < len(trace.shared):
            t = trace.shared[trace.shared_next]
            trace.shared_next += 1
            if t.shape != shape or t.dtype != dt:
                raise fail("ndarray", "instances of the SPMD grid allocate "
                                      "shared_hbm tensors of different shapes")
            return t
    if _core.is_on_chip(mem):
        _core.check_tile("ndarray", shape, dt, mem, _partition_axis(shape_in))
    t_ = trace.program.buffer("temp", shape, dt)
    t = NkiTensor(trace, t_.name, shape, dt, mem, written=False, label=name)
    if mem is MemoryRegion.shared_hbm and trace.grid:
        trace.shared.append(t)
        trace.shared_next += 1
    return t


def zeros(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "", **kw: Any) -> NkiTensor:
    return full(shape, 0, dtype, buffer, name, **kw)


def ones(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "", **kw: Any) -> NkiTensor:
    return full(shape, 1, dtype, buffer, name, **kw)


def full(shape: Any, fill_value: Any, dtype: Any, buffer: Any = sbuf,
         name: str = "", **kw: Any) -> NkiTensor:
    """A new tensor filled with ``fill_value``."""
    t = ndarray(shape, dtype, buffer, name, **kw)
    p = t.trace.program
    v = p.full(fill_value, (), t.dtype)
    p.ops.append({"op": "broadcast_to", "in": [v.name], "out": t.name})
    t.written = True
    return t


def zeros_like(x: Any, dtype: Any = None, buffer: Any = None, name: str = "",
               **kw: Any) -> NkiTensor:
    return zeros(x.shape, dtype if dtype is not None else x.dtype,
                 buffer if buffer is not None else x.buffer, name)


def ones_like(x: Any, dtype: Any = None, buffer: Any = None, name: str = "",
              **kw: Any) -> NkiTensor:
    return ones(x.shape, dtype if dtype is not None else x.dtype,
                buffer if buffer is not None else x.buffer, name)


def empty_like(x: Any, dtype: Any = None, buffer: Any = None, name: str = "",
               **kw: Any) -> NkiTensor:
    return ndarray(x.shape, dtype if dtype is not None else x.dtype,
                   buffer if buffer is not None else x.buffer, name)


def shared_constant(constant: Any, dtype: Any = None, **_: Any) -> NkiTensor:
    """A constant array as a read-only HBM tensor of the kernel."""
    trace = current()
    arr = np.asarray(constant)
    if dtype is not None:
        arr = arr.astype(as_dtype(dtype))
    c = trace.program.const(arr)
    return NkiTensor(trace, c.name, c.shape, c.dtype, MemoryRegion.shared_hbm,
                     written=True, readonly=True)


def shared_identity_matrix(n: int, dtype: Any = uint8, dst: Any = None,
                           **_: Any) -> NkiTensor:
    """The n x n identity, as a constant HBM tensor (or written to ``dst``)."""
    t = shared_constant(np.eye(int(n), dtype=as_dtype(dtype)))
    if dst is not None:
        _core.as_view(dst).assign(t)
        return dst
    return t


# -- loads and stores --------------------------------------------------------
def _mask(mask: Any) -> np.ndarray | None:
    if mask is None:
        return None
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError("mask must be a comparison of indices (nl.arange, "
                        "nl.mgrid), as i_p < 64")
    return m


def load(src: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """A new SBUF tile holding ``src`` (an HBM tensor or an access of one)."""
    v = _core.as_view(src)
    m = _mask(mask)
    val = v.read(m)
    dt = as_dtype(dtype) if dtype is not None else v.dtype
    if val.dtype != dt:
        val = val.astype(dt)
    valid = None if m is None else np.broadcast_to(m, v.shape)
    return new_tile(val, MemoryRegion.sbuf, "load", valid)


def store(dst: Any, value: Any, mask: Any = None, **_: Any) -> None:
    """Write ``value`` (a tile, or a number) into ``dst``."""
    _core.as_view(dst).assign(value, _mask(mask))


def load_transpose2d(src: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """``load`` of a 2-D access, transposed."""
    v = _core.as_view(src)
    if v.ndim != 2:
        raise fail("load_transpose2d", f"the source must be 2-D, not {v.shape}")
    val = v.read().transpose()
    dt = as_dtype(dtype) if dtype is not None else v.dtype
    if val.dtype != dt:
        val = val.astype(dt)
    return new_tile(val, MemoryRegion.sbuf, "load_transpose2d",
                    None if mask is None else np.broadcast_to(_mask(mask), val.shape))


# -- element-wise -------------------------------------------------------------
F32 = np.dtype(np.float32)


def compute(instruction: str, args: Sequence[Any], fn: Callable[..., Traced],
            dtype: Any = None, mask: Any = None, buffer: MemoryRegion = sbuf,
            out_dtype: np.dtype | None = None) -> NkiTensor:
    """Run ``fn`` over the operands' values on a compute engine: floats in
    float32, integers in the result's type; round once to the result dtype
    (``dtype``, else the operands' promoted dtype)."""
    require_on_chip(instruction, *args)
    if not any(isinstance(a, (NkiTensor, View)) for a in args):
        raise TypeError(f"{instruction}: at least one operand must be a tile")
    out_dt = as_dtype(dtype) if dtype is not None else (
        out_dtype if out_dtype is not None else _core.operands_dtype(*args))
    op_dts = [_core.dtype_of(a) for a in args]
    floating = _core.is_float(out_dt) or any(d is not None and _core.is_float(d)
                                            for d in op_dts) or \
        any(isinstance(a, float) for a in args)
    cdt = F32 if floating else out_dt
    m = _mask(mask)
    vals = []
    for a in args:
        v = value_of(a, like=cdt, mask=m)
        if v.dtype != cdt:
            v = v.astype(cdt)
        vals.append(v)
    r = fn(*vals)
    if r.dtype != out_dt:
        r = r.astype(out_dt)
    valid = None if m is None else np.broadcast_to(m, r.shape)
    return new_tile(r, buffer, instruction, valid)


def _binary(name: str, fn: Callable[[Traced, Traced], Traced], doc: str):
    def op(x: Any, y: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
        return compute(name, (x, y), fn, dtype, mask)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def _unary(name: str, fn: Callable[[Traced], Traced], doc: str):
    def op(x: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
        return compute(name, (x,), fn, dtype, mask)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    op._traced = fn  # type: ignore[attr-defined]  (for activation functions)
    return op


def _emit(op: str) -> Callable[[Traced], Traced]:
    return lambda x: x.program.emit(op, [x], x.shape, x.dtype)


def _cmp(ufunc: np.ufunc) -> Callable[[Traced, Traced], Traced]:
    # 1 where true, 0 elsewhere, in the operands' type (then the result's)
    return lambda a, b: ufunc(a, b).astype(a.dtype)


def _nonzero(x: Traced) -> Traced:
    return np.not_equal(x, 0)


def _logic(ufunc: np.ufunc) -> Callable[[Traced, Traced], Traced]:
    return lambda a, b: ufunc(_nonzero(a), _nonzero(b)).astype(a.dtype)


add = _binary("add", np.add, "x + y, element-wise.")
subtract = _binary("subtract", np.subtract, "x - y, element-wise.")
multiply = _binary("multiply", np.multiply, "x * y, element-wise.")
divide = _binary("divide", np.true_divide, "x / y, element-wise.")
maximum = _binary("maximum", np.maximum, "The larger of x and y, element-wise.")
minimum = _binary("minimum", np.minimum, "The smaller of x and y, element-wise.")
power = _binary("power", np.power, "x ** y, element-wise.")
fmod = _binary("fmod", np.fmod, "Remainder of x / y with the sign of x.")
mod = _binary("mod", np.remainder, "Remainder of x / y with the sign of y.")
abs_max = _binary("abs_max", lambda a, b: np.maximum(np.abs(a), np.abs(b)),
                  "max(|x|, |y|), element-wise.")
abs_min = _binary("abs_min", lambda a, b: np.minimum(np.abs(a), np.abs(b)),
                  "min(|x|, |y|), element-wise.")
equal = _binary("equal", _cmp(np.equal), "1 where x == y, 0 elsewhere.")
not_equal = _binary("not_equal", _cmp(np.not_equal), "1 where x != y, 0 elsewhere.")
less = _binary("less", _cmp(np.less), "1 where x < y, 0 elsewhere.")
less_equal = _binary("less_equal", _cmp(np.less_equal), "1 where x <= y, 0 elsewhere.")
greater = _binary("greater", _cmp(np.greater), "1 where x > y, 0 elsewhere.")
greater_equal = _binary("greater_equal", _cmp(np.greater_equal),
                        "1 where x >= y, 0 elsewhere.")
logical_and = _binary("logical_and", _logic(np.logical_and), "x AND y (nonzero is true).")
logical_or = _binary("logical_or", _logic(np.logical_or), "x OR y (nonzero is true).")
logical_xor = _binary("logical_xor", _logic(np.logical_xor), "x XOR y (nonzero is true).")


def _int_only(name: str, ufunc: np.ufunc) -> Callable[..., NkiTensor]:
    def op(x: Any, y: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
        for a in (x, y):
            d = _core.dtype_of(a)
            if d is not None and d.kind not in "iub":
                raise fail(name, f"operands must be integers, not {d}")
        return compute(name, (x, y), ufunc, dtype, mask)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"numpy.{ufunc.__name__} of integer tiles."
    return op


bitwise_and = _int_only("bitwise_and", np.bitwise_and)
bitwise_or = _int_only("bitwise_or", np.bitwise_or)
bitwise_xor = _int_only("bitwise_xor", np.bitwise_xor)
left_shift = _int_only("left_shift", np.left_shift)
right_shift = _int_only("right_shift", np.right_shift)


def invert(x: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """Bitwise NOT of an integer tile."""
    return compute("invert", (x,), np.invert, dtype, mask)


def logical_not(x: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """1 where x is zero, 0 elsewhere."""
    return compute("logical_not", (x,), lambda a: np.equal(a, 0).astype(a.dtype),
                   dtype, mask)


_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _sigmoid(x: Traced) -> Traced:
    return x.program.emit("sigmoid", [x], x.shape, x.dtype)


def _erf(x: Traced) -> Traced:
    return x.program.emit("erf", [x], x.shape, x.dtype)


def _softplus(x: Traced) -> Traced:
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _trunc(x: Traced) -> Traced:
    return np.sign(x) * np.floor(np.abs(x))


exp = _unary("exp", np.exp, "e ** x.")
log = _unary("log", np.log, "Natural logarithm.")
sqrt = _unary("sqrt", np.sqrt, "Square root.")
rsqrt = _unary("rsqrt", _emit("rsqrt"), "1 / sqrt(x).")
tanh = _unary("tanh", np.tanh, "Hyperbolic tangent.")
sigmoid = _unary("sigmoid", _sigmoid, "1 / (1 + e ** -x).")
relu = _unary("relu", _emit("relu"), "max(x, 0).")
gelu = _unary("gelu", lambda x: 0.5 * x * (1.0 + _erf(x * (1.0 / _SQRT2))),
              "GELU, exact: x * Phi(x).")
gelu_apprx_tanh = _unary("gelu_apprx_tanh", _emit("gelu"),
                         "GELU, tanh approximation.")
gelu_apprx_sigmoid = _unary("gelu_apprx_sigmoid",
                            lambda x: x * _sigmoid(x * 1.702),
                            "GELU, sigmoid approximation: x * sigmoid(1.702 x).")
gelu_dx = _unary("gelu_dx", lambda x: 0.5 * (1.0 + _erf(x * (1.0 / _SQRT2))) +
                 x * np.exp(x * x * -0.5) * _INV_SQRT_2PI,
                 "Derivative of the exact GELU.")


def _gelu_sig_dx(x: Traced) -> Traced:
    s = _sigmoid(x * 1.702)
    return s + x * 1.702 * s * (1.0 - s)


def _silu_dx(x: Traced) -> Traced:
    s = _sigmoid(x)
    return s + x * s * (1.0 - s)


gelu_apprx_sigmoid_dx = _unary("gelu_apprx_sigmoid_dx", _gelu_sig_dx,
                               "Derivative of gelu_apprx_sigmoid.")
silu = _unary("silu", lambda x: x * _sigmoid(x), "x * sigmoid(x).")
silu_dx = _unary("silu_dx", _silu_dx, "Derivative of silu.")
softplus = _unary("softplus", _softplus, "log(1 + e ** x).")
mish = _unary("mish", lambda x: x * np.tanh(_softplus(x)), "x * tanh(softplus(x)).")
erf = _unary("erf", _erf, "The error function.")
erf_dx = _unary("erf_dx", lambda x: np.exp(-(x * x)) * (2.0 / math.sqrt(math.pi)),
                "Derivative of erf: 2 / sqrt(pi) * e ** -x^2.")
reciprocal = _unary("reciprocal", np.reciprocal, "1 / x.")
sin = _unary("sin", np.sin, "Sine.")
cos = _unary("cos", np.cos, "Cosine.")
tan = _unary("tan", lambda x: np.sin(x) / np.cos(x), "Tangent.")
arctan = _unary("arctan", lambda x: np.arctan2(x, np.float32(1.0)),
                "Inverse tangent, in (-pi/2, pi/2): the emulator's atan2(x, 1).")


def _prelu(x: Traced, alpha: Any = 0.0) -> Traced:
    """x where x > 0, else alpha * x (alpha a number or a per-partition
    column)."""
    return np.where(np.greater(x, 0), x, np.multiply(x, alpha))


def prelu(x: Any, alpha: Any = 0.0, dtype: Any = None, mask: Any = None,
          **_: Any) -> NkiTensor:
    """Parametric ReLU: x where x > 0, else ``alpha * x``.  As the ``op``
    of nisa.activate2 its slope is ``relu_param``."""
    if isinstance(alpha, (View, NkiTensor)):
        a = value_of(alpha).astype(np.float32)
        return compute("prelu", (x,), lambda v: _prelu(
            v, a.reshape((a.shape[0],) + (1,) * (v.ndim - 1))), dtype, mask)
    return compute("prelu", (x,), lambda v: _prelu(v, float(alpha)), dtype, mask)


prelu._traced = _prelu  # type: ignore[attr-defined]  (activation function)
ceil = _unary("ceil", np.ceil, "Smallest integer not below x.")
floor = _unary("floor", np.floor, "Largest integer not above x.")
trunc = _unary("trunc", _trunc, "x rounded toward zero.")
negative = _unary("negative", np.negative, "-x.")
sign = _unary("sign", np.sign, "-1, 0 or 1 by the sign of x.")
abs = _unary("abs", np.abs, "|x|.")  # noqa: A001 (nki.language's name)
square = _unary("square", np.square, "x * x.")


def copy(x: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """A new tile with x's values (converted to ``dtype``)."""
    require_on_chip("copy", x)
    v = value_of(x)
    dt = as_dtype(dtype) if dtype is not None else v.dtype
    r = v.astype(dt) if v.dtype != dt else v.program.emit("copy", [v], v.shape, dt)
    m = _mask(mask)
    return new_tile(r, MemoryRegion.sbuf, "copy",
                    None if m is None else np.broadcast_to(m, r.shape))


def where(condition: Any, x: Any, y: Any, dtype: Any = None, mask: Any = None,
          **_: Any) -> NkiTensor:
    """x where ``condition`` is nonzero, else y."""
    cond = value_of(condition) if isinstance(condition, (NkiTensor, View)) \
        else current().program.const(np.asarray(condition))
    c = np.not_equal(cond, 0) if cond.dtype != np.bool_ else cond
    return compute("where", (x, y), lambda a, b: np.where(c, a, b), dtype, mask)


# -- reductions ---------------------------------------------------------------
def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) % ndim for a in axis)
    return (int(axis) % ndim,)


def _reduction(name: str, fn: Callable[..., Traced], doc: str):
    def op(x: Any, axis: Any, dtype: Any = None, keepdims: bool = False,
           mask: Any = None, **_: Any) -> NkiTensor:
        ax = _axes(axis, len(_core.shape_of(x)))
        if 0 in ax and _core.is_on_chip(_core.memory_of(x)) and \
                len(_core.shape_of(x)) > 1:
            raise fail(name, "the partition axis (axis 0) cannot be reduced "
                             "by the vector engine; reduce free axes, or "
                             "transpose or use nisa.tensor_partition_reduce")
        return compute(name, (x,), lambda v: fn(v, ax, bool(keepdims)), dtype,
                       mask, out_dtype=_core.dtype_of(x))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


sum = _reduction("sum", lambda v, ax, k: v.sum(axis=ax, keepdims=k),  # noqa: A001
                 "Sum along ``axis`` (free axes).")
max = _reduction("max", lambda v, ax, k: v.max(axis=ax, keepdims=k),  # noqa: A001
                 "Maximum along ``axis``.")
min = _reduction("min", lambda v, ax, k: v.min(axis=ax, keepdims=k),  # noqa: A001
                 "Minimum along ``axis``.")
mean = _reduction("mean", lambda v, ax, k: v.mean(axis=ax, keepdims=k),
                  "Mean along ``axis``.")
prod = _reduction("prod", lambda v, ax, k: v.prod(axis=ax, keepdims=k),
                  "Product along ``axis``.")


def _var(v: Traced, ax: tuple[int, ...], k: bool) -> Traced:
    m = v.mean(axis=ax, keepdims=True)
    d = v - m
    return (d * d).mean(axis=ax, keepdims=k)


var = _reduction("var", _var, "Variance (population) along ``axis``.")


def all(x: Any, axis: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:  # noqa: A001
    """1 where every element along ``axis`` is nonzero, else 0."""
    ax = _axes(axis, len(_core.shape_of(x)))
    return compute("all", (x,), lambda v: np.not_equal(v, 0).astype(v.dtype).min(axis=ax),
                   dtype, mask, out_dtype=_core.dtype_of(x))


def softmax(x: Any, axis: int = -1, dtype: Any = None, compute_dtype: Any = None,
            mask: Any = None, **_: Any) -> NkiTensor:
    """exp(x - max) / sum along ``axis``."""
    ax = int(axis) % len(_core.shape_of(x))
    return compute("softmax", (x,), lambda v: v.program.emit(
        "softmax", [v], v.shape, v.dtype, axis=ax), dtype, mask,
        out_dtype=_core.dtype_of(x))


def rms_norm(x: Any, w: Any, axis: Any, n: int, epsilon: float = 1e-6,
             dtype: Any = None, compute_dtype: Any = None, mask: Any = None,
             **_: Any) -> NkiTensor:
    """x / sqrt(sum(x^2, axis) / n + epsilon) * w."""
    ax = _axes(axis, len(_core.shape_of(x)))

    def fn(v: Traced, wv: Traced) -> Traced:
        ms = (v * v).sum(axis=ax, keepdims=True) * (1.0 / n) + epsilon
        return v * ms.program.emit("rsqrt", [ms], ms.shape, ms.dtype) * wv
    return compute("rms_norm", (x, w), fn, dtype, mask, out_dtype=_core.dtype_of(x))


# -- shapes -------------------------------------------------------------------
def transpose(x: Any, dtype: Any = None, mask: Any = None, **_: Any) -> NkiTensor:
    """The 2-D tile transposed (partition and free axes swapped)."""
    if len(_core.shape_of(x)) != 2:
        raise fail("transpose", f"a 2-D tile is needed, not {_core.shape_of(x)}")
    return compute("transpose", (x,), lambda v: v.transpose(), dtype, mask,
                   out_dtype=_core.dtype_of(x))


def broadcast_to(x: Any, shape: Any, dtype: Any = None, **_: Any) -> NkiTensor:
    """The tile broadcast to ``shape`` (axes of size 1 repeated)."""
    shape = _shape(shape)
    return compute("broadcast_to", (x,), lambda v: v.program.emit(
        "broadcast_to", [v], shape, v.dtype), dtype, out_dtype=_core.dtype_of(x))


def expand_dims(x: Any, axis: Any) -> Any:
    """A view of x with a new axis of size 1 at ``axis``."""
    if isinstance(axis, (tuple, list)):
        for a in sorted(axis):
            x = expand_dims(x, a)
        return x
    return _core.as_view(x).expand_dim(int(axis))


# -- matmul ---------------------------------------------------------------------
def matmul(x: Any, y: Any, transpose_x: bool = False, mask: Any = None,
           **_: Any) -> NkiTensor:
    """x @ y on the tensor engine, into a new PSUM tile of float32.

    ``x`` is [M, K] (or [K, M] with ``transpose_x=True``), ``y`` [K, N]:
    K and M at most 128, N at most 512.
    """
    from nrtpy.nki import isa
    if not transpose_x:
        xs = _core.shape_of(x)
        if len(xs) != 2:
            raise fail("matmul", f"x must be 2-D, not {xs}")
        xt = compute("matmul", (x,), lambda v: v.transpose(),
                     out_dtype=_core.dtype_of(x))
        return isa.matmul_tile("matmul", xt, y)
    return isa.matmul_tile("matmul", x, y)


# -- other --------------------------------------------------------------------
def device_print(prefix: str, tensor: Any, **_: Any) -> None:
    """Accepted and ignored: the values exist only when the NEFF runs (read
    them from the kernel's outputs instead)."""
    if not isinstance(prefix, str):
        raise TypeError(f"device_print: prefix must be a str, got {type(prefix).__name__}")


def no_reorder() -> Any:
    """Instructions keep their order here anyway: a context that does
    nothing."""
    import contextlib
    return contextlib.nullcontext()


def rand(shape: Any, dtype: Any = float32, buffer: Any = sbuf, name: str = "",
         **_: Any) -> NkiTensor:
    """A tile of values uniform in [0, 1).  The emulator has no random
    engine: the values are drawn when the kernel is traced (seeded by
    ``random_seed``, else 0), so every run of the NEFF gives the same."""
    trace = current()
    shape = _shape(shape)
    values = trace.rng.random(shape).astype(as_dtype(dtype))
    t = ndarray(shape, dtype, buffer, name)
    t.whole().assign(trace.program.const(values))
    return t


def random_seed(seed: Any) -> None:
    """Seed ``rand`` (at trace time: see ``rand``)."""
    if not isinstance(seed, numbers.Integral):
        raise NotImplementedError("nrtpy.nki: random_seed with a tile seed")
    current().rng = np.random.default_rng(int(seed))


def gather_flattened(data: Any, indices: Any, axis: int = 0, dtype: Any = None,
                     mask: Any = None, **_: Any) -> NkiTensor:
    """Per partition, the elements of ``data`` (its free axes flattened) at
    ``indices``."""
    require_on_chip("gather_flattened", data, indices)
    v = value_of(data)
    p = v.shape[0]
    idx = value_of(indices).reshape(p, -1)
    from nrtpy.nki.isa import _rows_flat
    r = _rows_flat(v.reshape(p, -1), idx)
    dt = as_dtype(dtype) if dtype is not None else v.dtype
    return new_tile(r if r.dtype == dt else r.astype(dt), MemoryRegion.sbuf,
                    "gather_flattened")


def dropout(x: Any, rate: Any, dtype: Any = None, **_: Any) -> NkiTensor:
    """Elements of ``x`` replaced by zero with probability ``rate`` (a
    number, or a (partitions, 1) tile), unscaled; as nisa.dropout, which
    ones is decided when the kernel is traced."""
    from nrtpy.nki.isa import _dropout
    return _dropout(None, x, rate, dtype)


bypass = copy  # the operator that passes data through


_notes.instrument(globals(), _names.LANGUAGE + _names.LEGACY_LANGUAGE)
__getattr__ = _names.missing(__name__, "nki.language")
__all__ = [n for n in _names.LANGUAGE + _names.LEGACY_LANGUAGE if n in globals()]
