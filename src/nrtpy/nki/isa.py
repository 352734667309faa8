"""``nki.isa`` on the emulated device: one call per engine instruction.

The current namespace (NKI 0.6) writes each result into ``dst=``.  The
implementations (``_name`` functions) take ``dst`` or None and return the
tile written, so that the older namespace (:mod:`nrtpy.nki.legacy`), whose
calls return a new tile, uses the same code.  Engine selection
(``engine=``), priorities, names and performance modes do not change the
result and are accepted and ignored.  Names of the SDK's ``nki.isa`` that
are not implemented raise ``NotImplementedError`` naming them.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable

import numpy as np

from nrtpy import _dtypes
from nrtpy.neff._trace import Traced
from nrtpy.nki import _core, _dynamic, _names, _notes
from nrtpy.nki import language as nl
from nrtpy.nki._core import (MemoryRegion, NkiCompileError, NkiTensor, View,
                             as_view, current, fail, new_tile,
                             require_on_chip, value_of)

NkiValidationError = NkiCompileError


class engine(Enum):
    """The engine an instruction runs on (accepted, not needed here)."""

    unknown = 0
    tensor = 1
    vector = 2
    scalar = 3
    gpsimd = 4
    activation = 3
    dma = 5
    sync = 6


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class reduce_cmd(Enum):
    """What an instruction does with the engine's reduce registers."""

    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class oob_mode(Enum):
    """What an indirect DMA does with an index out of bounds."""

    error = 0
    skip = 1


class dge_mode(Enum):
    """How DMA descriptors are made (accepted, not needed here)."""

    unknown = 0
    none = 1
    swdge = 2
    hwdge = 3


class matmul_perf_mode(Enum):
    """Tensor engine performance modes (results are the same)."""

    none = "none"
    double_row = "double_row"
    double_row_gen3 = "double_row_gen3"


class nc_version(Enum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


class dma_engine(Enum):
    """The DMA engine a transfer uses (accepted, not needed here)."""

    dma = 1
    gpsimd_dma = 2


def get_nc_sub_version() -> int:
    """The silicon revision within the target's NeuronCore version: 0, the
    first (the emulator models no other)."""
    return 0


def get_nc_version() -> nc_version:
    """The NeuronCore version of the kernel's target."""
    t = current().target if _core.tracing() else _core.target()
    return nc_version(t.version)


# -- the ALU operators ---------------------------------------------------------
def _alu(op: Any, instruction: str) -> Callable[[Traced, Traced], Traced]:
    """The program function of a binary operator given as ``nl.add``,
    ``np.add`` and the like."""
    table: dict[Any, Callable[[Traced, Traced], Traced]] = {
        nl.add: np.add, np.add: np.add,
        nl.subtract: np.subtract, np.subtract: np.subtract,
        nl.multiply: np.multiply, np.multiply: np.multiply,
        nl.divide: np.true_divide, np.divide: np.true_divide,
        nl.maximum: np.maximum, np.maximum: np.maximum, nl.max: np.maximum,
        nl.minimum: np.minimum, np.minimum: np.minimum, nl.min: np.minimum,
        nl.power: np.power, np.power: np.power,
        nl.mod: np.remainder, np.mod: np.remainder, nl.fmod: np.fmod,
        nl.abs_max: lambda a, b: np.maximum(np.abs(a), np.abs(b)),
        nl.abs_min: lambda a, b: np.minimum(np.abs(a), np.abs(b)),
        nl.equal: lambda a, b: np.equal(a, b).astype(a.dtype),
        np.equal: lambda a, b: np.equal(a, b).astype(a.dtype),
        nl.not_equal: lambda a, b: np.not_equal(a, b).astype(a.dtype),
        np.not_equal: lambda a, b: np.not_equal(a, b).astype(a.dtype),
        nl.less: lambda a, b: np.less(a, b).astype(a.dtype),
        np.less: lambda a, b: np.less(a, b).astype(a.dtype),
        nl.less_equal: lambda a, b: np.less_equal(a, b).astype(a.dtype),
        np.less_equal: lambda a, b: np.less_equal(a, b).astype(a.dtype),
        nl.greater: lambda a, b: np.greater(a, b).astype(a.dtype),
        np.greater: lambda a, b: np.greater(a, b).astype(a.dtype),
        nl.greater_equal: lambda a, b: np.greater_equal(a, b).astype(a.dtype),
        np.greater_equal: lambda a, b: np.greater_equal(a, b).astype(a.dtype),
        nl.bitwise_and: np.bitwise_and, np.bitwise_and: np.bitwise_and,
        nl.bitwise_or: np.bitwise_or, np.bitwise_or: np.bitwise_or,
        nl.bitwise_xor: np.bitwise_xor, np.bitwise_xor: np.bitwise_xor,
        nl.left_shift: np.left_shift, np.left_shift: np.left_shift,
        nl.right_shift: np.right_shift, np.right_shift: np.right_shift,
        nl.logical_and: lambda a, b: np.logical_and(np.not_equal(a, 0), np.not_equal(b, 0)).astype(a.dtype),
        nl.logical_or: lambda a, b: np.logical_or(np.not_equal(a, 0), np.not_equal(b, 0)).astype(a.dtype),
    }
    fn = table.get(op)
    if fn is None:
        raise NotImplementedError(f"nrtpy.nki: {instruction}: operator "
                                  f"{getattr(op, '__name__', op)!r} is not "
                                  f"implemented")
    return fn


def _is_int_op(op: Any) -> bool:
    return op in (nl.bitwise_and, nl.bitwise_or, nl.bitwise_xor, nl.left_shift,
                  nl.right_shift, np.bitwise_and, np.bitwise_or, np.bitwise_xor,
                  np.left_shift, np.right_shift)


def _activation_fn(op: Any) -> Callable[[Traced], Traced]:
    """The program function of an activation ``op`` (``nl.exp``, ``np.exp``,
    ``nl.copy``, ...)."""
    if op in (nl.copy, None) or getattr(op, "__name__", "") in ("copy", "bypass",
                                                                  "identity"):
        return lambda x: x
    traced = getattr(op, "_traced", None)
    if traced is not None:
        return traced
    np_table: dict[Any, Callable[[Traced], Traced]] = {
        np.exp: np.exp, np.log: np.log, np.tanh: np.tanh, np.sqrt: np.sqrt,
        np.square: np.square, np.abs: np.abs, np.negative: np.negative,
        np.sin: np.sin, np.cos: np.cos, np.reciprocal: np.reciprocal,
        np.sign: np.sign, np.floor: np.floor, np.ceil: np.ceil,
    }
    fn = np_table.get(op)
    if fn is None:
        raise NotImplementedError(f"nrtpy.nki: activation function "
                                  f"{getattr(op, '__name__', op)!r} is not "
                                  f"implemented")
    return fn


# -- results --------------------------------------------------------------------
def _finish(instruction: str, dst: Any, value: Traced,
            buffer: MemoryRegion = MemoryRegion.sbuf,
            dtype: Any = None, mask: Any = None) -> Any:
    """Write ``value`` into ``dst`` (converted to its dtype), or make it a
    new tile (of ``dtype`` when given) when there is no ``dst``."""
    if dst is None:
        if dtype is not None and value.dtype != _core.as_dtype(dtype):
            value = value.astype(_core.as_dtype(dtype))
        m = None if mask is None else np.broadcast_to(np.asarray(mask, bool), value.shape)
        return new_tile(value, buffer, instruction, m)
    as_view(dst).assign(value, None if mask is None else np.asarray(mask, bool))
    return dst


def _read(instruction: str, x: Any, dtype: Any = None) -> Traced:
    v = value_of(x)
    if dtype is not None and v.dtype != dtype:
        v = v.astype(dtype)
    return v


F32 = np.dtype(np.float32)


def _f32(x: Any, like: np.dtype = F32) -> Traced:
    v = value_of(x, like=like)
    return v if v.dtype == like else v.astype(like)


# -- data movement -------------------------------------------------------------
def _dma_copy(dst: Any, src: Any, mask: Any = None, dtype: Any = None,
              oob_mode: Any = None, rmw_add: bool = False) -> Any:
    """A DMA: any memory to any.  An index out of bounds in an indirect
    access fails the execution (``oob_mode.error``, the default) or leaves
    its partition out (``oob_mode.skip``); ``rmw_add`` adds into ``dst``."""
    skip = oob_mode is globals()["oob_mode"].skip
    s_view = src if isinstance(src, View) else None
    d_view = dst if isinstance(dst, View) else None
    if d_view is not None and d_view.indirect is not None:
        d_view.assign(value_of(src), None if mask is None else np.asarray(mask, bool),
                      mode="add" if rmw_add else "assign", oob_error=not skip)
        return dst
    if s_view is not None and s_view.indirect is not None and skip:
        if dst is None:
            raise NotImplementedError("nrtpy.nki: dma_copy with oob_mode.skip "
                                      "needs a dst")
        value = s_view.read_skipping(value_of(dst, like=s_view.dtype))
    else:
        value = value_of(src)
    if rmw_add:
        if dst is None:
            raise ValueError("dma_copy: dst_rmw_op needs a dst")
        value = np.add(value_of(dst), value.astype(as_view(dst).dtype))
    return _finish("dma_copy", dst, value, MemoryRegion.sbuf, dtype, mask)


def dma_copy(dst: Any, src: Any, priority: Any = None, oob_mode: Any = None,
             dge_mode: Any = None, engine: Any = None, name: Any = None,
             **_: Any) -> Any:
    """Copy ``src`` into ``dst`` with a DMA engine (any memory to any).

    An indirect source (``.ap(vector_offset=...)``) gathers rows at run
    time; a row index out of bounds fails the execution with
    ``NRT_EXEC_OOB``.
    """
    return _dma_copy(dst, src, oob_mode=oob_mode)


def dma_compute(dst: Any, srcs: Any, reduce_op: Any, scales: Any = None,
                unique_indices: bool = True, oob_mode: Any = None,
                name: Any = None, **_: Any) -> Any:
    """``dst = srcs[0] + srcs[1] + ...`` in float32 by the DMA engines
    (reduce_op nl.add, every scale 1.0: the instruction's only forms).
    With an indirect access, a read-modify-write of two sources: the
    rows of an HBM ``dst`` added to (scatter), or an SBUF ``dst`` plus
    the rows of an HBM source (gather), as dma_copy's indirect forms."""
    srcs = list(srcs)
    if not 1 <= len(srcs) <= 16:
        raise fail("dma_compute", f"srcs must hold 1 to 16 tensors, not {len(srcs)}")
    if reduce_op is not np.add and getattr(reduce_op, "__name__", "") != "add":
        raise fail("dma_compute", "reduce_op must be nl.add")
    if scales is not None and any(float(x) != 1.0 for x in scales):
        raise fail("dma_compute", "every scale must be 1.0")
    d = dst if isinstance(dst, View) else None
    gathers = [x for x in srcs if isinstance(x, View) and x.indirect is not None]
    if (d is not None and d.indirect is not None) or gathers:
        if len(srcs) != 2:
            raise fail("dma_compute", "a read-modify-write takes 2 sources")
        if not unique_indices:
            raise NotImplementedError("nrtpy.nki: dma_compute with "
                                      "unique_indices=False")
        target = as_view(dst).tensor
        if d is not None and d.indirect is not None:
            rest = [x for x in srcs if as_view(x).tensor is not target]
            if len(rest) != 1:
                raise fail("dma_compute", "a scatter read-modify-write reads "
                                          "dst and one data tensor")
            return _dma_copy(dst, rest[0], oob_mode=oob_mode, rmw_add=True)
        other = [x for x in srcs if x is not gathers[0]]
        if len(gathers) != 1 or as_view(other[0]).tensor is not target:
            raise fail("dma_compute", "a gather read-modify-write reads dst "
                                      "and one indirect source")
        return _dma_copy(dst, gathers[0], oob_mode=oob_mode, rmw_add=True)
    shape = _core.shape_of(dst)
    total: Traced | None = None
    for x in srcs:
        v = _f32(x)
        if v.size != int(np.prod(shape)):
            raise fail("dma_compute", f"a source of {v.size} elements for a "
                                      f"dst of shape {shape}")
        v = v if v.shape == shape else v.reshape(shape)
        total = v if total is None else np.add(total, v)
    assert total is not None
    return _finish("dma_compute", dst, total)


def _tensor_copy(dst: Any, src: Any, dtype: Any = None, mask: Any = None) -> Any:
    require_on_chip("tensor_copy", src)
    return _finish("tensor_copy", dst, value_of(src), MemoryRegion.sbuf, dtype, mask)


def tensor_copy(dst: Any, src: Any, engine: Any = None, name: Any = None, **_: Any) -> Any:
    """Copy an on-chip tile into ``dst`` on a compute engine."""
    return _tensor_copy(dst, src)


def _memset(dst: Any, value: Any, shape: Any = None, dtype: Any = None,
            mask: Any = None) -> Any:
    if dst is not None:
        require_on_chip("memset", dst)
        t = as_view(dst)
        as_view(dst).assign(current().program.full(value, (), t.dtype),
                            None if mask is None else np.asarray(mask, bool))
        return dst
    dt = _core.as_dtype(dtype)
    return nl.full(shape, value, dt)


def memset(dst: Any, value: Any, engine: Any = None, name: Any = None, **_: Any) -> Any:
    """Fill ``dst`` with ``value``."""
    return _memset(dst, value)


# -- dtypes the engines take ---------------------------------------------------
#: What the tensor engine multiplies (NeuronCore-v2 and v3; tfloat32 is
#: float32 here).
MATMUL_DTYPES = (nl.float8_e4m3, nl.float8_e5m2, nl.bfloat16, nl.float16, nl.float32)


def _dtype_name(dt: np.dtype) -> str:
    return _dtypes.name_of(dt) or str(dt)


def check_matmul_dtypes(instruction: str, stationary: Any, moving: Any) -> None:
    """The tensor engine's operand dtypes: one of :data:`MATMUL_DTYPES`
    each, and float32 with float32 only."""
    dts = {"stationary": _core.dtype_of(stationary), "moving": _core.dtype_of(moving)}
    for what, dt in dts.items():
        if dt is not None and dt not in MATMUL_DTYPES:
            raise fail(instruction, f"the tensor engine does not take {what} of "
                                    f"dtype {_dtype_name(dt)} (it takes float8_e4m3, "
                                    f"float8_e5m2, bfloat16, float16, tfloat32 "
                                    f"and float32)")
    wide = [what for what, dt in dts.items() if dt == nl.float32]
    if len(wide) == 1:
        other = "moving" if wide[0] == "stationary" else "stationary"
        raise fail(instruction, f"{wide[0]} is float32, so {other} must be "
                                f"float32 or tfloat32 too, not "
                                f"{_dtype_name(dts[other])}")


def check_bitvec_dtypes(instruction: str, op: Any, **operands: Any) -> None:
    """A bitvec operator (bitwise and/or/xor, shifts) works on bit
    patterns: every tile it reads or writes must be of an integer type."""
    for what, x in operands.items():
        dt = _core.dtype_of(x)
        if dt is not None and dt.kind not in "iub":
            raise fail(instruction, f"the bitvec operator "
                                    f"{getattr(op, '__name__', op)} needs integer "
                                    f"tiles, but {what} is {_dtype_name(dt)}")


# -- tensor engine ---------------------------------------------------------------
def _matmul_checks(instruction: str, ss: tuple[int, ...],
                   ms: tuple[int, ...]) -> None:
    """The tensor engine's limits on operands of shapes ``ss`` and ``ms``."""
    if len(ss) < 2 or len(ms) < 2:
        raise fail(instruction, f"operands must be tiles of 2 or more "
                                f"dimensions, got {ss} and {ms}")
    if ss[0] != ms[0]:
        raise fail(instruction, f"the contraction (partition) axes differ: "
                                f"stationary {ss}, moving {ms}")
    # [K, ..., M] x [K, ..., N]: every axis but the last contracts (the
    # double-row modes' [K, 2, M]).
    if ms[:-1] != ss[:-1]:
        raise fail(instruction, f"stationary {ss} and moving {ms} differ "
                                f"outside their last axis")
    if ss[0] > 128:
        raise fail(instruction, f"the contraction axis K = {ss[0]} is over "
                                f"128 (the partition axis of both operands)")
    if ss[-1] > 128:
        raise fail(instruction, f"the stationary free size {ss[-1]} is over "
                                f"128 (nl.tile_size.gemm_stationary_fmax)")
    if ms[-1] > 512:
        raise fail(instruction, f"the moving free size {ms[-1]} is over 512 "
                                f"(nl.tile_size.gemm_moving_fmax)")


def _matmul_value(s: Traced, m: Traced) -> Traced:
    """``s.T @ m`` in float32 for ``s`` [..., M] and ``m`` [..., N], every
    axis but the last contracting.  Two bfloat16 (or two float16) operands
    go to the emulator's matmul as they are: it decodes them exactly and
    accumulates in float32, as it does after a cast, without the cast."""
    if not (s.dtype == m.dtype and s.dtype.itemsize == 2 and _core.is_float(s.dtype)):
        s, m = _f32(s), _f32(m)
    s = s.reshape(-1, s.shape[-1]) if s.ndim != 2 else s
    m = m.reshape(-1, m.shape[-1]) if m.ndim != 2 else m
    p = s.program
    return p.emit("matmul", [s.transpose(), m], (s.shape[1], m.shape[1]), F32)


def matmul_tile(instruction: str, stationary: Any, moving: Any) -> NkiTensor:
    """``stationary.T @ moving`` as a new PSUM tile of float32, with the
    tensor engine's limits checked."""
    require_on_chip(instruction, stationary, moving)
    check_matmul_dtypes(instruction, stationary, moving)
    _matmul_checks(instruction, _core.shape_of(stationary), _core.shape_of(moving))
    r = _matmul_value(value_of(stationary), value_of(moving))
    return new_tile(r, MemoryRegion.psum, instruction)


class _MatmulGroup:
    """nc_matmuls in a row accumulating into one PSUM access, from
    stationary and moving operands that are boxes of one tensor each, a
    step apart along one of its axes (the k tiles of a kernel's
    contraction loop): traced as a single matmul over their whole depth.

    Each call that joins the group takes back the ops the group emitted
    (nothing else was traced since, so no operand changed) and emits the
    group again: one read of each operand's union box, one matmul, one
    accumulation into ``dst``.  The sum runs over the same products in
    float32, in another order (as the tensor engine's own order within a
    tile is not NumPy's either)."""

    def __init__(self, dst: View, accumulate: bool, stationary: View,
                 moving: View, boxes: tuple, start: int, nbuffers: int) -> None:
        self.dst = dst
        self.accumulate = accumulate  # the first product adds onto dst
        self.stationary = [stationary]
        self.moving = [moving]
        self.boxes = [boxes]
        self.start = start  # the program's ops and buffers before the group
        self.nbuffers = nbuffers
        self.end = -1  # the ops after it (-1: not emitted yet)
        self.ops = dst.tensor.trace.program.ops  # the op list it is in
        self.written = dst.tensor.written  # (a write into dst may zero it first)

    def joins(self, trace: _core.Trace, dst: View, stationary: View,
              moving: View) -> bool:
        """Whether this call's product continues the group."""
        if trace.program.ops is not self.ops or len(self.ops) != self.end:
            return False
        d = self.dst
        if dst.tensor is not d.tensor or dst.shape != d.shape or \
                dst.dtype != d.dtype:
            return False
        if (dst.index is None) != (d.index is None) or (
                dst.index is not None and not np.array_equal(dst.index, d.index)):
            return False
        s0, m0 = self.stationary[0], self.moving[0]
        return (stationary.tensor is s0.tensor and moving.tensor is m0.tensor
                and stationary.shape == s0.shape and moving.shape == m0.shape
                and stationary.dtype == s0.dtype and moving.dtype == m0.dtype)

    def emit(self) -> None:
        """The group's ops: the union boxes, the matmul, the accumulation."""
        trace = self.dst.tensor.trace
        s = _union_read(self.stationary, [b[0] for b in self.boxes])
        m = _union_read(self.moving, [b[1] for b in self.boxes])
        tile = new_tile(_matmul_value(s, m), MemoryRegion.psum, "nc_matmul")
        v = self.dst
        value = nl.add(v, tile, dtype=v.dtype) if self.accumulate else tile
        v.assign(value)
        self.end = len(trace.program.ops)

    def retract(self) -> None:
        """Take back the ops and buffers the group emitted (with the
        constants among them, which the caches then forget)."""
        trace = self.dst.tensor.trace
        p = trace.program
        del p.ops[self.start:]
        trace.rewound = min(trace.rewound, self.start)
        self.dst.tensor.written = self.written
        gone = list(p.buffers)[self.nbuffers:]
        for name in gone:
            del p.buffers[name]
        if any(name in p.consts for name in gone):
            for name in gone:
                p.consts.pop(name, None)
            trace.index_consts = {k: t for k, t in trace.index_consts.items()
                                  if t.name in p.buffers}
            p._const_ids = {k: v for k, v in p._const_ids.items()
                            if v[1].name in p.buffers}


def _box_of(x: Any) -> tuple | None:
    """The box of its tensor that the operand ``x`` reads (as
    ``_core._as_box`` gives it), or None when it is none."""
    v = x if isinstance(x, View) else x.whole() if isinstance(x, NkiTensor) else None
    if v is None or v.indirect is not None or v.dyn is not None or v.oob is not None or \
            v.dtype != v.tensor.dtype or not v.tensor.written:
        return None
    t = v.tensor
    if v.index is None:
        if v.shape != t.shape:
            return None
        n = len(t.shape)
        return [0] * n, [1] * n, list(t.shape), list(range(n)), []
    box = v.box if v.box is not None else _core._as_box(v.index, t.shape)
    return None if box is None or box[4] else box


def _union_read(views: list[View], boxes: list[tuple]) -> Traced:
    """The operands of a matmul group read at once, as [K, g, ..., F]:
    the boxes, which differ only by their start along one axis of the
    tensor that the views do not span, a fixed step apart."""
    v0, b0 = views[0], boxes[0]
    start, step, count, dims, _ = b0
    if len(views) == 1:
        return _core._read_box(v0.tensor.traced(), start, step, count, dims,
                               [], v0.shape)
    axis = next(k for k in range(len(start)) if boxes[1][0][k] != start[k])
    delta = boxes[1][0][axis] - start[axis]
    step, count = list(step), list(count)
    step[axis], count[axis] = delta, len(views)
    shape = v0.shape[:1] + (len(views),) + v0.shape[1:]
    return _core._read_box(v0.tensor.traced(), start, step, count,
                           dims[:1] + [axis] + dims[1:], [], shape)


def _extends(boxes: list[tuple], new: tuple) -> bool:
    """Whether the box ``new`` continues the run ``boxes`` (see
    _union_read): the same but for its start along one axis that the view
    does not span, one more step along it."""
    b0 = boxes[0]
    if new[1:] != b0[1:]:
        return False
    diff = [k for k in range(len(b0[0])) if new[0][k] != b0[0][k]]
    if len(diff) != 1:
        return False
    axis = diff[0]
    if b0[2][axis] != 1 or axis in b0[3]:
        return False
    if len(boxes) == 1:
        return True
    delta = boxes[1][0][axis] - b0[0][axis]
    return new[0][axis] == b0[0][axis] + delta * len(boxes)


def _nc_matmul(dst: Any, stationary: Any, moving: Any,
               accumulate: Any = None, mask: Any = None) -> Any:
    if dst is None:
        return matmul_tile("nc_matmul", stationary, moving)
    require_on_chip("nc_matmul", stationary, moving)
    check_matmul_dtypes("nc_matmul", stationary, moving)
    _matmul_checks("nc_matmul", _core.shape_of(stationary), _core.shape_of(moving))
    v = as_view(dst)
    if v.dtype != nl.float32:
        raise fail("nc_matmul", f"dst must be a float32 tile on NeuronCore-v2 "
                                f"and v3 (the tensor engine accumulates in "
                                f"float32), not {_dtype_name(v.dtype)}")
    t = v.tensor
    written = getattr(t, "matmul_written", None)
    if written is None:
        written = np.zeros(t.shape, dtype=bool)
        t.matmul_written = written  # type: ignore[attr-defined]
    idx = None if v.index is None else v.flat().reshape(-1)
    if accumulate is None:
        prior = written.reshape(v.shape) if idx is None else \
            written.reshape(-1)[idx].reshape(v.shape)
    else:
        prior = np.full(v.shape, bool(accumulate))
    trace = t.trace
    if accumulate is None and trace.loops and not prior.all():
        # In a run-time loop's body, traced once: elements no matmul wrote
        # before the loop are written by this one in the first iteration,
        # and added onto in the next ones.
        prior_rt = np.logical_or(prior, np.logical_not(_dynamic.first_iteration(trace)))
        tile = matmul_tile("nc_matmul", stationary, moving)
        old = value_of(v, like=v.dtype)
        v.assign(np.where(prior_rt, np.add(old, value_of(tile, like=v.dtype)),
                          value_of(tile, like=v.dtype)),
                 None if mask is None else np.asarray(mask, bool))
        if idx is None:
            written[...] = True
        else:
            written.reshape(-1)[idx] = True
        return dst
    group: _MatmulGroup | None = trace.matmul_group
    trace.matmul_group = None
    boxes = None
    if mask is None and v.indirect is None and v.dyn is None and not t.readonly and \
            (prior.all() and t.written or not prior.any()):
        sb, mb = _box_of(stationary), _box_of(moving)
        if sb is not None and mb is not None:
            boxes = (sb, mb)
    if boxes is not None:
        s_view, m_view = as_view(stationary), as_view(moving)
        if group is not None and prior.all() and \
                group.joins(trace, v, s_view, m_view) and \
                _extends([b[0] for b in group.boxes], boxes[0]) and \
                _extends([b[1] for b in group.boxes], boxes[1]):
            group.retract()
            group.stationary.append(s_view)
            group.moving.append(m_view)
            group.boxes.append(boxes)
        else:
            p = trace.program
            group = _MatmulGroup(v, bool(prior.all()), s_view, m_view, boxes,
                                 len(p.ops), len(p.buffers))
        group.emit()
        trace.matmul_group = group
    else:
        tile = matmul_tile("nc_matmul", stationary, moving)
        if prior.all():
            value = nl.add(v, tile, dtype=v.dtype)
        elif prior.any():
            value = nl.where(prior, nl.add(v, tile, dtype=v.dtype), tile, dtype=v.dtype)
        else:
            value = tile
        v.assign(value, None if mask is None else np.asarray(mask, bool))
    if idx is None:
        written[...] = True
    else:
        written.reshape(-1)[idx] = True
    return dst


def nc_matmul(dst: Any, stationary: Any, moving: Any,
              is_stationary_onezero: bool = False, is_moving_onezero: bool = False,
              is_transpose: bool = False, accumulate: Any = None,
              tile_position: Any = (), tile_size: Any = (), perf_mode: Any = None,
              name: Any = None, **_: Any) -> Any:
    """``dst = stationary.T @ moving`` on the tensor engine (float32 in
    PSUM); ``accumulate`` None adds onto what an earlier matmul wrote to the
    same PSUM elements."""
    if is_transpose:
        return _nc_transpose(dst, stationary)
    return _nc_matmul(dst, stationary, moving, accumulate)


def _nc_transpose(dst: Any, data: Any, mask: Any = None, engine_: Any = None) -> Any:
    require_on_chip("nc_transpose", data)
    shp = _core.shape_of(data)
    if len(shp) != 2:
        raise fail("nc_transpose", f"a 2-D tile is needed, not {shp}")
    on_vector = engine_ is engine.vector
    if shp[1] > 128:
        raise fail("nc_transpose", f"the free size {shp[1]} becomes the "
                                   f"partition axis: at most 128")
    v = value_of(data)
    buffer = MemoryRegion.sbuf if on_vector else MemoryRegion.psum
    return _finish("nc_transpose", dst, v.transpose(), buffer, None, mask)


def nc_transpose(dst: Any, data: Any, engine: Any = None, name: Any = None,
                 **_: Any) -> Any:
    """``dst = data.T`` (tensor engine into PSUM, or vector engine)."""
    return _nc_transpose(dst, data, engine_=engine)


# -- vector and scalar engines ------------------------------------------------------
def _tensor_tensor(dst: Any, data1: Any, data2: Any, op: Any,
                   dtype: Any = None, mask: Any = None) -> Any:
    require_on_chip("tensor_tensor", data1, data2)
    fn = _alu(op, "tensor_tensor")
    if _is_int_op(op):
        check_bitvec_dtypes("tensor_tensor", op, data1=data1, data2=data2, dst=dst)
    out_dt = _core.operands_dtype(data1, data2)
    cdt = out_dt if _is_int_op(op) else F32
    r = fn(_f32(data1, cdt), _f32(data2, cdt))
    if dst is None and dtype is None and r.dtype != out_dt:
        r = r.astype(out_dt)
    return _finish("tensor_tensor", dst, r, MemoryRegion.sbuf, dtype, mask)


def tensor_tensor(dst: Any, data1: Any, data2: Any, op: Any, engine: Any = None,
                  name: Any = None, **_: Any) -> Any:
    """``dst = data1 <op> data2`` element-wise."""
    return _tensor_tensor(dst, data1, data2, op)


def _tensor_scalar(dst: Any, data: Any, op0: Any, operand0: Any,
                   reverse0: bool = False, op1: Any = None, operand1: Any = None,
                   reverse1: bool = False, dtype: Any = None, mask: Any = None) -> Any:
    require_on_chip("tensor_scalar", data, operand0, operand1)
    # (a bitvec operator anywhere in the chain: the chain works on the
    # integers themselves)
    int_ops = _is_int_op(op0) or (op1 is not None and _is_int_op(op1))
    for op in (op0, op1):
        if op is not None and _is_int_op(op):
            check_bitvec_dtypes("tensor_scalar", op, data=data, operand0=operand0,
                                operand1=operand1, dst=dst)
    in_dt = _core.dtype_of(data)
    cdt = in_dt if int_ops else F32
    v = _f32(data, cdt)

    def step(acc: Traced, op: Any, operand: Any, reverse: bool) -> Traced:
        fn = _alu(op, "tensor_scalar")
        o = _f32(operand, cdt)
        return fn(o, acc) if reverse else fn(acc, o)

    r = step(v, op0, operand0, reverse0)
    if op1 is not None:
        r = step(r, op1, operand1, reverse1)
    if dst is None and dtype is None and r.dtype != in_dt:
        r = r.astype(in_dt)
    return _finish("tensor_scalar", dst, r, MemoryRegion.sbuf, dtype, mask)


def tensor_scalar(dst: Any, data: Any, op0: Any, operand0: Any,
                  reverse0: bool = False, op1: Any = None, operand1: Any = None,
                  reverse1: bool = False, engine: Any = None, name: Any = None,
                  **_: Any) -> Any:
    """``dst = (data <op0> operand0) <op1> operand1`` with scalar or
    per-partition ([P, 1]) operands."""
    return _tensor_scalar(dst, data, op0, operand0, reverse0, op1, operand1, reverse1)


_REDUCE = {
    nl.add: "sum", np.add: "sum", nl.maximum: "max", np.maximum: "max",
    nl.minimum: "min", np.minimum: "min", nl.multiply: "prod", np.multiply: "prod",
    nl.max: "max", nl.min: "min", nl.sum: "sum",
}


def _reduce_value(instruction: str, op: Any, v: Traced, axes: tuple[int, ...],
                  keepdims: bool) -> Traced:
    kind = _REDUCE.get(op)
    if kind is None:
        raise NotImplementedError(f"nrtpy.nki: {instruction}: reduce operator "
                                  f"{getattr(op, '__name__', op)!r}")
    return getattr(v, kind)(axis=axes, keepdims=keepdims)


def _tensor_reduce(dst: Any, op: Any, data: Any, axis: Any, negate: bool = False,
                   keepdims: bool = False, dtype: Any = None, mask: Any = None) -> Any:
    require_on_chip("tensor_reduce", data)
    shp = _core.shape_of(data)
    axes = tuple(int(a) % len(shp) for a in (axis if isinstance(axis, (tuple, list))
                                              else (axis,)))
    if 0 in axes:
        raise fail("tensor_reduce", "the partition axis (axis 0) cannot be "
                                    "reduced; use nc_transpose first or "
                                    "tensor_partition_reduce")
    v = _f32(data)
    r = _reduce_value("tensor_reduce", op, v, axes, keepdims)
    if negate:
        r = -r
    in_dt = _core.dtype_of(data)
    if dst is None and dtype is None and r.dtype != in_dt:
        r = r.astype(in_dt)
    return _finish("tensor_reduce", dst, r, MemoryRegion.sbuf, dtype, mask)


def tensor_reduce(dst: Any, op: Any, data: Any, axis: Any, negate: bool = False,
                  keepdims: bool = False, name: Any = None, **_: Any) -> Any:
    """``dst = op-reduce of data`` along free ``axis``."""
    return _tensor_reduce(dst, op, data, axis, negate, keepdims)


def _tensor_partition_reduce(dst: Any, op: Any, data: Any, dtype: Any = None,
                             mask: Any = None) -> Any:
    require_on_chip("tensor_partition_reduce", data)
    v = _f32(data)
    r = _reduce_value("tensor_partition_reduce", op, v, (0,), True)
    in_dt = _core.dtype_of(data)
    if dst is None and dtype is None and r.dtype != in_dt:
        r = r.astype(in_dt)
    return _finish("tensor_partition_reduce", dst, r, MemoryRegion.sbuf, dtype, mask)


def tensor_partition_reduce(dst: Any, op: Any, data: Any, name: Any = None, **_: Any) -> Any:
    """Reduce across partitions: ``dst`` has one partition."""
    return _tensor_partition_reduce(dst, op, data)


def _activation(dst: Any, op: Any, data: Any, bias: Any = None, scale: Any = 1.0,
                reduce_op: Any = None, reduce_res: Any = None,
                reduce_cmd_: Any = None, dtype: Any = None, mask: Any = None) -> Any:
    require_on_chip("activation", data, bias, scale)
    fn = _activation_fn(op)
    v = _f32(data)
    if not (isinstance(scale, (int, float)) and scale == 1.0):
        v = v * _f32(scale)
    if bias is not None:
        v = v + _f32(bias)
    r = fn(v)
    if reduce_res is not None:
        red = _reduce_value("activation", reduce_op or nl.add, r,
                            tuple(range(1, r.ndim)), True)
        as_view(reduce_res).assign(red)
    in_dt = _core.dtype_of(data)
    if dst is None and dtype is None and r.dtype != in_dt:
        r = r.astype(in_dt)
    return _finish("activation", dst, r, MemoryRegion.sbuf, dtype, mask)


def activation(dst: Any, op: Any, data: Any, bias: Any = None, scale: Any = 1.0,
               reduce_op: Any = None, reduce_res: Any = None, reduce_cmd: Any = None,
               name: Any = None, **_: Any) -> Any:
    """``dst = op(data * scale + bias)`` on the scalar engine; with
    ``reduce_res``, also the sum (``reduce_op``) along the free axes."""
    if reduce_cmd not in (None, globals()["reduce_cmd"].idle,
                          globals()["reduce_cmd"].reset_reduce):
        raise NotImplementedError("nrtpy.nki: activation reduce_cmd other than "
                                  "idle and reset_reduce")
    return _activation(dst, op, data, bias, scale, reduce_op, reduce_res, reduce_cmd)


def activation_reduce(dst: Any, op: Any, data: Any, reduce_op: Any, reduce_res: Any,
                      bias: Any = None, scale: Any = 1.0, name: Any = None,
                      **_: Any) -> Any:
    """``activation`` with the reduction along the free axes into ``reduce_res``."""
    return _activation(dst, op, data, bias, scale, reduce_op, reduce_res)


def _reciprocal(dst: Any, data: Any, dtype: Any = None, mask: Any = None) -> Any:
    require_on_chip("reciprocal", data)
    r = np.reciprocal(_f32(data))
    in_dt = _core.dtype_of(data)
    if dst is None and dtype is None and r.dtype != in_dt:
        r = r.astype(in_dt)
    return _finish("reciprocal", dst, r, MemoryRegion.sbuf, dtype, mask)


def reciprocal(dst: Any, data: Any, name: Any = None, **_: Any) -> Any:
    """``dst = 1 / data``."""
    return _reciprocal(dst, data)


def _iota_values(shape: tuple[int, ...], pattern: Any, offset: int,
                 channel_multiplier: int) -> np.ndarray:
    steps = [int(p[0]) for p in pattern]
    counts = [int(p[1]) for p in pattern]
    free = np.full(counts, 0, dtype=np.int64) if counts else np.zeros((), np.int64)
    for d, (s, n) in enumerate(zip(steps, counts)):
        shp = [1] * len(counts)
        shp[d] = n
        free = free + (np.arange(n, dtype=np.int64) * s).reshape(shp)
    per = int(np.prod(shape[1:], dtype=np.int64))
    if free.size != per:
        raise fail("iota", f"the pattern gives {free.size} values per "
                           f"partition, dst holds {per}")
    ch = np.arange(shape[0], dtype=np.int64)[:, None] * channel_multiplier
    return (offset + ch + free.reshape(1, -1)).reshape(shape)


def iota(dst: Any, pattern: Any, offset: int = 0, channel_multiplier: int = 0,
         name: Any = None, **_: Any) -> Any:
    """``dst[c, i...] = offset + c * channel_multiplier + the pattern's
    index``, computed at trace time."""
    shape = _core.shape_of(dst)
    vals = _iota_values(shape, pattern, int(offset), int(channel_multiplier))
    as_view(dst).assign(current().program.const(vals.astype(np.int32)))
    return dst


def _tensor_copy_predicated(dst: Any, src: Any, predicate: Any,
                            reverse_pred: bool = False) -> Any:
    require_on_chip("tensor_copy_predicated", src, predicate)
    d = value_of(dst)
    s = value_of(src, like=d.dtype)
    if s.dtype != d.dtype:
        s = s.astype(d.dtype)
    p = value_of(predicate)
    cond = np.not_equal(p, 0)
    r = np.where(cond, d, s) if reverse_pred else np.where(cond, s, d)
    as_view(dst).assign(r)
    return dst


def tensor_copy_predicated(dst: Any, src: Any, predicate: Any,
                           reverse_pred: bool = False, name: Any = None,
                           **_: Any) -> Any:
    """Copy ``src`` into ``dst`` where ``predicate`` is nonzero (zero with
    ``reverse_pred``)."""
    return _tensor_copy_predicated(dst, src, predicate, reverse_pred)


# -- scans ------------------------------------------------------------------
def _doubling_scan(x: Traced, combine: Callable[[Traced, Traced], Traced]) -> Traced:
    """Inclusive scan along the last axis with an associative ``combine``
    (later, earlier): log2(n) steps of shifted combines."""
    n = x.shape[-1]
    d = 1
    while d < n:
        head = x[..., :d]
        tail = combine(x[..., d:], x[..., :n - d])
        x = np.concatenate([head, tail], axis=-1)
        d *= 2
    return x


_IDENTITY_FREE = {np.add, np.multiply, np.maximum, np.minimum}


def _tensor_scalar_cumulative(dst: Any, src: Any, op0: Any, op1: Any, imm0: Any,
                              imm1: Any = None, reduce_cmd_: Any = None,
                              reverse0: bool = False, dtype: Any = None) -> Any:
    require_on_chip("tensor_scalar_cumulative", src, imm0, imm1)
    fn0, fn1 = _alu(op0, "tensor_scalar_cumulative"), _alu(op1, "tensor_scalar_cumulative")
    if fn1 not in _IDENTITY_FREE:
        raise NotImplementedError("nrtpy.nki: tensor_scalar_cumulative with op1 "
                                  "other than add, multiply, max, min")
    v = _f32(src)
    o = _f32(imm0)
    v = fn0(o, v) if reverse0 else fn0(v, o)
    out = _doubling_scan(v, lambda later, earlier: fn1(later, earlier))
    trace = current()
    cmd = reduce_cmd_ if reduce_cmd_ is not None else reduce_cmd.reset_reduce
    reg = None
    if cmd is reduce_cmd.load_reduce:
        reg = _f32(imm1)
    elif cmd is reduce_cmd.reduce:
        reg = trace.reduce_regs
    elif cmd is not reduce_cmd.reset_reduce:
        raise NotImplementedError(f"nrtpy.nki: tensor_scalar_cumulative with "
                                  f"reduce_cmd {cmd}")
    if reg is not None:
        out = fn1(out, reg)
    trace.reduce_regs = out[..., -1:]
    in_dt = _core.dtype_of(src)
    if dst is None and dtype is None and out.dtype != in_dt:
        out = out.astype(in_dt)
    return _finish("tensor_scalar_cumulative", dst, out, MemoryRegion.sbuf, dtype)


def tensor_scalar_cumulative(dst: Any, src: Any, op0: Any, op1: Any, imm0: Any,
                             imm1: Any = None, reduce_cmd: Any = None,
                             name: Any = None, **_: Any) -> Any:
    """``reg = op1(op0(src[i], imm0), reg); dst[i] = reg`` along the free
    axis; ``reg`` starts at op1's identity (``reset_reduce``), at ``imm1``
    (``load_reduce``) or where the last such instruction left it
    (``reduce``)."""
    return _tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1, reduce_cmd)


def _tensor_tensor_scan(dst: Any, data0: Any, data1: Any, initial: Any, op0: Any,
                        op1: Any, dtype: Any = None) -> Any:
    require_on_chip("tensor_tensor_scan", data0, data1, initial)
    if _alu(op0, "tensor_tensor_scan") is not np.multiply or \
            _alu(op1, "tensor_tensor_scan") is not np.add:
        raise NotImplementedError("nrtpy.nki: tensor_tensor_scan other than "
                                  "op0=multiply, op1=add")
    a, b = _f32(data0), _f32(data1)
    n = a.shape[-1]
    # out[i] = a[i] * out[i-1] + b[i]: compose the affine maps (A, B)
    d = 1
    while d < n:
        a_new = np.concatenate([a[..., :d], a[..., d:] * a[..., :n - d]], axis=-1)
        b = np.concatenate([b[..., :d], a[..., d:] * b[..., :n - d] + b[..., d:]], axis=-1)
        a = a_new
        d *= 2
    init = _f32(initial)
    if init.ndim == 1:
        init = init.reshape(init.shape[0], 1)
    out = a * init + b
    in_dt = _core.dtype_of(data0)
    if dst is None and dtype is None and out.dtype != in_dt:
        out = out.astype(in_dt)
    return _finish("tensor_tensor_scan", dst, out, MemoryRegion.sbuf, dtype)


def tensor_tensor_scan(dst: Any, data0: Any, data1: Any, initial: Any, op0: Any,
                       op1: Any, reverse0: bool = False, reverse1: bool = False,
                       name: Any = None, **_: Any) -> Any:
    """``dst[i] = (data0[i] * dst[i-1]) + data1[i]`` along the free axis,
    from ``initial`` (op0 multiply and op1 add only)."""
    if reverse0 or reverse1:
        raise NotImplementedError("nrtpy.nki: tensor_tensor_scan reverse0/reverse1")
    return _tensor_tensor_scan(dst, data0, data1, initial, op0, op1)


# -- statistics, top-8 ---------------------------------------------------------------
def _bn_stats(dst: Any, data: Any, dtype: Any = None) -> Any:
    require_on_chip("bn_stats", data)
    v = _f32(data)
    p = v.shape[0]
    v = v.reshape(p, -1)
    if v.shape[1] > 512:
        raise fail("bn_stats", f"{v.shape[1]} elements per partition; at most "
                               f"512 (nl.tile_size.bn_stats_fmax)")
    parts = []
    for half in (v[:, 0::2], v[:, 1::2]):
        n = half.shape[1]
        mean = half.mean(axis=1, keepdims=True)
        dev = half - mean
        m2 = (dev * dev).sum(axis=1, keepdims=True)
        parts += [current().program.full(float(n), (p, 1), F32), mean, m2]
    out = np.concatenate(parts, axis=1)
    return _finish("bn_stats", dst, out, MemoryRegion.sbuf,
                   dtype if dtype is not None else _core.dtype_of(data))


def bn_stats(dst: Any, data: Any, name: Any = None, **_: Any) -> Any:
    """(count, mean, variance * count) of the even and of the odd elements
    of each partition: 6 values."""
    return _bn_stats(dst, data)


def _bn_aggr(dst: Any, data: Any, dtype: Any = None) -> Any:
    require_on_chip("bn_aggr", data)
    v = _f32(data)
    p = v.shape[0]
    v = v.reshape(p, -1)
    if v.shape[1] % 3:
        raise fail("bn_aggr", "the input must hold (count, mean, variance * "
                              "count) triples")
    t = v.reshape(p, v.shape[1] // 3, 3)
    c, m, m2 = t[:, :, 0], t[:, :, 1], t[:, :, 2]
    total = c.sum(axis=1, keepdims=True)
    mean = (c * m).sum(axis=1, keepdims=True) / total
    dev = m - mean
    var = (m2 + c * dev * dev).sum(axis=1, keepdims=True) / total
    out = np.concatenate([mean, var], axis=1)
    return _finish("bn_aggr", dst, out, MemoryRegion.sbuf,
                   dtype if dtype is not None else _core.dtype_of(data))


def bn_aggr(dst: Any, data: Any, name: Any = None, **_: Any) -> Any:
    """Mean and variance per partition from ``bn_stats`` outputs."""
    return _bn_aggr(dst, data)


def _rows_flat(v: Traced, cols: Traced) -> Traced:
    """``v[p, cols[p, k]]`` for a 2-D ``v``: a gather on the flattened tile."""
    p, f = v.shape
    rows = current().program.const((np.arange(p, dtype=np.int64) * f).reshape(p, 1))
    flat = (cols.astype(np.int64) + rows).reshape(-1)
    return np.take(v.reshape(-1), flat).reshape(cols.shape)


def _top8(instruction: str, data: Any, mask: Any = None) -> tuple[Traced, Traced]:
    """The 8 largest values of each partition, descending, and where each
    first occurs."""
    require_on_chip(instruction, data)
    v = value_of(data, mask=None if mask is None else np.asarray(mask, bool))
    p = v.shape[0]
    v = v.reshape(p, -1)
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, bool), _core.shape_of(data)).reshape(p, -1)
        v = np.where(current().program.const(m), v, -np.inf if _core.is_float(v.dtype)
                     else np.iinfo(v.dtype).min)
    if v.shape[1] < 8:
        raise fail(instruction, f"{v.shape[1]} elements per partition; at least 8")
    order = v.program.emit("argsort", [v], v.shape, np.dtype(np.int32), axis=1,
                           descending=True)
    cols = order[:, :8]
    return _rows_flat(v, cols), cols


def max8(dst: Any, src: Any, name: Any = None, **_: Any) -> Any:
    """The 8 largest values of each partition, in descending order."""
    vals, _cols = _top8("max8", src)
    return _finish("max8", dst, vals)


def _find_index8(data: Any, vals: Any, mask: Any = None) -> Traced:
    require_on_chip("nc_find_index8", data, vals)
    d = value_of(data, mask=None if mask is None else np.asarray(mask, bool))
    p = d.shape[0]
    d = d.reshape(p, -1)
    w = value_of(vals).reshape(p, -1)
    hits = np.equal(d.reshape(p, 1, d.shape[1]), w.reshape(p, w.shape[1], 1))
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, bool), _core.shape_of(data)).reshape(p, 1, -1)
        hits = np.logical_and(hits, current().program.const(m))
    return np.argmax(hits, axis=2).astype(np.uint32)


def nc_find_index8(dst: Any, data: Any, vals: Any, name: Any = None, **_: Any) -> Any:
    """Per partition, the index of the first element equal to each of the
    8 values of ``vals``."""
    return _finish("nc_find_index8", dst, _find_index8(data, vals))


def _match_replace8(dst: Any, data: Any, vals: Any, imm: Any, dst_idx: Any = None,
                    mask: Any = None, dtype: Any = None) -> Any:
    idx = _find_index8(data, vals, mask)
    d = value_of(data, mask=None if mask is None else np.asarray(mask, bool))
    shape = d.shape
    p = shape[0]
    flat = d.reshape(p, -1)
    f = flat.shape[1]
    cols = current().program.const(np.arange(f, dtype=np.int64).reshape(1, 1, f))
    hit = np.equal(idx.astype(np.int64).reshape(p, idx.shape[1], 1), cols)
    hit = np.not_equal(hit.astype(np.int32).max(axis=1), 0)
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, bool), _core.shape_of(data)).reshape(p, f)
        hit = np.logical_and(hit, current().program.const(m))
    out = np.where(hit, current().program.full(imm, (), flat.dtype), flat).reshape(shape)
    if dst_idx is not None:
        as_view(dst_idx).assign(idx)
    return _finish("nc_match_replace8", dst, out, MemoryRegion.sbuf, dtype, mask)


def nc_match_replace8(dst: Any, data: Any, vals: Any, imm: float, dst_idx: Any = None,
                      name: Any = None, **_: Any) -> Any:
    """``data`` with the first occurrence of each of the 8 ``vals`` of a
    partition replaced by ``imm`` (their indices into ``dst_idx``)."""
    return _match_replace8(dst, data, vals, imm, dst_idx)


def _dma_transpose(dst: Any, src: Any, axes: Any = None, dtype: Any = None) -> Any:
    v = value_of(src)
    if axes is None:
        if v.ndim != 2:
            raise fail("dma_transpose", f"axes are needed for a {v.ndim}-D access")
        axes = (1, 0)
    return _finish("dma_transpose", dst, v.transpose(tuple(axes)), MemoryRegion.sbuf, dtype)


def dma_transpose(dst: Any, src: Any, axes: Any = None, priority: Any = None,
                  dge_mode: Any = None, oob_mode: Any = None, name: Any = None,
                  **_: Any) -> Any:
    """``dst = src`` with its axes permuted (``axes``, default 2-D swap)."""
    return _dma_transpose(dst, src, axes)


# -- selects with the reduce registers, shuffles ----------------------------------
def _max_into_registers(instruction: str, result: Traced, cmd: Any,
                        reduce_op: Any, reduce_res: Any) -> None:
    """The vector engine's max-accumulation: ``reset_reduce`` sets the
    registers to the partition maxima of ``result``, ``reduce`` folds them
    in, ``idle`` leaves them; ``reduce_res`` receives the registers."""
    if reduce_op not in (None, nl.maximum, np.maximum, nl.max, np.max):
        raise NotImplementedError(f"nrtpy.nki: {instruction} with reduce_op "
                                  f"other than maximum")
    trace = current()
    row_max = result.reshape(result.shape[0], -1).max(axis=1, keepdims=True)
    if cmd is reduce_cmd.reset_reduce:
        trace.reduce_regs = row_max
    elif cmd is reduce_cmd.reduce:
        prior = trace.reduce_regs
        trace.reduce_regs = row_max if prior is None else np.maximum(prior, row_max)
    if reduce_res is not None:
        regs = trace.reduce_regs if trace.reduce_regs is not None else row_max
        as_view(reduce_res).assign(regs)


def _select_reduce(dst: Any, predicate: Any, on_true: Any, on_false: Any,
                   reduce_res: Any = None, reduce_cmd_: Any = None,
                   reduce_op: Any = None, reverse_pred: bool = False,
                   dtype: Any = None) -> Any:
    require_on_chip("select_reduce", predicate, on_true, on_false)
    t = _f32(on_true)
    pred = np.not_equal(value_of(predicate), 0)
    if reverse_pred:
        pred = np.logical_not(pred)
    out = np.where(pred, t, _f32(on_false))
    _max_into_registers("select_reduce", out, reduce_cmd_ or reduce_cmd.idle,
                        reduce_op, reduce_res)
    return _finish("select_reduce", dst, out, MemoryRegion.sbuf,
                   dtype if dtype is not None else _core.dtype_of(on_true))


def select_reduce(dst: Any, predicate: Any, on_true: Any, on_false: Any,
                  reduce_res: Any = None, reduce_cmd: Any = None, reduce_op: Any = None,
                  reverse_pred: bool = False, name: Any = None, **_: Any) -> Any:
    """``dst = where(predicate, on_true, on_false)``, with the partition
    maxima into the reduce registers (and ``reduce_res``)."""
    return _select_reduce(dst, predicate, on_true, on_false, reduce_res, reduce_cmd,
                          reduce_op, reverse_pred)


_FP32_MIN = float(np.finfo(np.float32).min)


def _range_select(dst: Any, on_true_tile: Any, comp_op0: Any, comp_op1: Any,
                  bound0: Any, bound1: Any, reduce_cmd_: Any = None,
                  reduce_res: Any = None, reduce_op: Any = None, range_start: int = 0,
                  on_false_value: Any = _FP32_MIN, dtype: Any = None) -> Any:
    require_on_chip("range_select", on_true_tile, bound0, bound1)
    t = _f32(on_true_tile)
    p = t.shape[0]
    t2 = t.reshape(p, -1)
    index = current().program.const(
        (int(range_start) + np.arange(t2.shape[1], dtype=np.float32)).reshape(1, -1))
    c0 = np.not_equal(_alu(comp_op0, "range_select")(index, _f32(bound0).reshape(p, 1)), 0)
    c1 = np.not_equal(_alu(comp_op1, "range_select")(index, _f32(bound1).reshape(p, 1)), 0)
    out = np.where(np.logical_and(c0, c1), t2,
                   current().program.full(on_false_value, (), F32)).reshape(t.shape)
    _max_into_registers("range_select", out, reduce_cmd_ or reduce_cmd.reset_reduce,
                        reduce_op, reduce_res)
    return _finish("range_select", dst, out, MemoryRegion.sbuf,
                   dtype if dtype is not None else _core.dtype_of(on_true_tile))


def range_select(dst: Any, on_true_tile: Any, comp_op0: Any, comp_op1: Any,
                 bound0: Any, bound1: Any, reduce_cmd: Any = None, reduce_res: Any = None,
                 reduce_op: Any = None, range_start: int = 0,
                 on_false_value: Any = _FP32_MIN, name: Any = None, **_: Any) -> Any:
    """Elements whose free index + ``range_start`` passes both comparisons
    with the per-partition bounds, ``on_false_value`` elsewhere; the
    partition maxima into the reduce registers (and ``reduce_res``)."""
    return _range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1,
                         reduce_cmd, reduce_res, reduce_op, range_start, on_false_value)


def nc_stream_shuffle(dst: Any, src: Any, shuffle_mask: Any, name: Any = None,
                      **_: Any) -> Any:
    """Partition ``i`` of each quadrant of 32 of ``dst`` takes partition
    ``shuffle_mask[i]`` of the same quadrant of ``src`` (255: unchanged)."""
    require_on_chip("nc_stream_shuffle", src, dst)
    mask = [int(m) for m in shuffle_mask]
    if len(mask) != 32:
        raise fail("nc_stream_shuffle", f"shuffle_mask has {len(mask)} entries, not 32")
    s = value_of(src)
    d_shape = _core.shape_of(dst)
    ps, pd = s.shape[0], d_shape[0]
    per = int(np.prod(d_shape[1:], dtype=np.int64))
    if int(np.prod(s.shape[1:], dtype=np.int64)) != per:
        raise fail("nc_stream_shuffle", "src and dst hold different numbers of "
                                        "elements per partition")
    take_from, keep = [], []
    for p in range(pd):
        m = mask[p % 32]
        keep.append(m == 255)
        q = (p // 32) * 32 + (0 if m == 255 else m)
        if m != 255 and q >= ps:
            raise fail("nc_stream_shuffle", f"dst partition {p} takes src partition "
                                            f"{q}; src has {ps}")
        take_from.append(min(q, ps - 1))
    rows = current().program.const(np.asarray(take_from, dtype=np.int32))
    moved = np.take(s.reshape(ps, per), rows, axis=0)
    if any(keep):
        old = value_of(dst).reshape(pd, per)
        k = current().program.const(np.asarray(keep).reshape(pd, 1))
        moved = np.where(k, old, moved)
    as_view(dst).assign(moved.reshape(d_shape))
    return dst


def _dropout(dst: Any, data: Any, prob: Any, dtype: Any = None) -> Any:
    require_on_chip("dropout", data, prob)
    v = value_of(data)
    trace = current()
    u = trace.program.const(trace.rng.random(v.shape).astype(np.float32))
    pr = _f32(prob)
    if pr.ndim:
        pr = pr.reshape((pr.shape[0],) + (1,) * (v.ndim - 1))
    out = np.where(np.less(u, pr), trace.program.full(0, (), v.dtype), v)
    return _finish("dropout", dst, out, MemoryRegion.sbuf, dtype)


def dropout(dst: Any, data: Any, prob: Any, name: Any = None, **_: Any) -> Any:
    """Elements replaced by zero with probability ``prob``.  The emulator has
    no random engine: which ones is decided when the kernel is traced."""
    return _dropout(dst, data, prob)


def _sequence_bounds(dst: Any, segment_ids: Any, dtype: Any = None) -> Any:
    require_on_chip("sequence_bounds", segment_ids)
    seq = value_of(segment_ids)
    if seq.ndim != 2 or seq.shape[0] != 1:
        raise fail("sequence_bounds", f"segment_ids must be [1, n], not {seq.shape}")
    n = seq.shape[1]
    prog = current().program
    j = prog.const(np.arange(n, dtype=np.float32).reshape(1, n))
    first = np.not_equal(seq[:, 1:], seq[:, :-1])
    starts = np.concatenate([prog.full(True, (1, 1), np.dtype(bool)), first], axis=1)
    last = np.concatenate([first, prog.full(True, (1, 1), np.dtype(bool))], axis=1)
    begin = _doubling_scan(np.where(starts, j, 0.0), np.maximum)
    end_rev = _doubling_scan(np.where(last, j + 1.0, float(n))[:, ::-1], np.minimum)
    end = end_rev[:, ::-1]
    pad = np.equal(seq, 0)
    begin = np.where(pad, float(n), begin)
    end = np.where(pad, -1.0, end)
    out = np.concatenate([begin.reshape(1, 1, n), end.reshape(1, 1, n)], axis=1)
    return _finish("sequence_bounds", dst, out.astype(seq.dtype), MemoryRegion.sbuf, dtype)


def sequence_bounds(dst: Any, segment_ids: Any, name: Any = None, **_: Any) -> Any:
    """Per element of ``segment_ids`` ([1, n]), the start and the end
    (exclusive) of its run of equal ids; ids of 0 are padding (n, -1)."""
    return _sequence_bounds(dst, segment_ids)


def _local_gather(dst: Any, src_buffer: Any, index: Any, num_elem_per_idx: int = 1,
                  num_valid_indices: Any = None) -> Any:
    require_on_chip("local_gather", src_buffer, index)
    src = value_of(src_buffer)
    idx = value_of(index)
    p = src.shape[0]
    if idx.shape[0] != p or p % 16:
        raise fail("local_gather", f"src_buffer and index need the same partitions, "
                                   f"a multiple of 16 (got {p} and {idx.shape[0]})")
    if num_elem_per_idx not in (1, 2, 4, 8, 16, 32):
        raise fail("local_gather", f"num_elem_per_idx must be 1, 2, 4, 8, 16 or 32, "
                                   f"not {num_elem_per_idx}")
    flat = src.reshape(p, -1)
    idx = idx.reshape(p, -1).astype(np.int32)
    per_core = 16 * idx.shape[1]
    nv = per_core if num_valid_indices is None else int(num_valid_indices)
    if not 0 < nv <= per_core:
        raise fail("local_gather", f"num_valid_indices {nv}: from 1 to {per_core}")
    step = current().program.const(np.arange(num_elem_per_idx, dtype=np.int32).reshape(1, -1))
    blocks = []
    for c in range(p // 16):
        # the core's indices, partition axis first, each the start of a run
        mine = idx[c * 16:(c + 1) * 16].transpose().reshape(-1)[:nv]
        offsets = (mine.reshape(nv, 1) + step).reshape(-1)
        blocks.append(np.take(flat[c * 16:(c + 1) * 16], offsets, axis=1))
    out = np.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]
    if dst is not None:
        out = out.reshape(_core.shape_of(dst))
    return _finish("local_gather", dst, out)


def local_gather(dst: Any, src_buffer: Any, index: Any, num_elem_per_idx: int = 1,
                 num_valid_indices: Any = None, name: Any = None, **_: Any) -> Any:
    """Each group of 16 partitions gathers, from its own partitions of
    ``src_buffer``, runs of ``num_elem_per_idx`` elements starting at its
    indices (taken partition axis first)."""
    return _local_gather(dst, src_buffer, index, num_elem_per_idx, num_valid_indices)


# -- more vector, scalar and gpsimd instructions -------------------------------------
def _per_partition(x: Any, ndim: int) -> Traced:
    """A scalar or [P, 1] operand as float32, shaped to broadcast against a
    tile of ``ndim`` dimensions."""
    v = _f32(x)
    if v.ndim == 2 and ndim > 2:
        v = v.reshape((v.shape[0],) + (1,) * (ndim - 1))
    return v


def _arithmetic_only(instruction: str, *ops: Any) -> None:
    for op in ops:
        if op is not None and _is_int_op(op):
            raise fail(instruction, f"bitvec operator {getattr(op, '__name__', op)} "
                                    f"is not supported: the operators must be "
                                    f"arithmetic")


def _is_bypass(op: Any) -> bool:
    return op is None or getattr(op, "__name__", "") in ("copy", "bypass")


def scalar_tensor_tensor(dst: Any, data: Any, op0: Any, operand0: Any, op1: Any,
                         operand1: Any, reverse0: bool = False, reverse1: bool = False,
                         name: Any = None, **_: Any) -> Any:
    """``dst = (data <op0> operand0) <op1> operand1``: ``operand0`` a scalar
    or [P, 1] tile, ``operand1`` a tile of ``data``'s shape; float32 math."""
    require_on_chip("scalar_tensor_tensor", data, operand0, operand1)
    _arithmetic_only("scalar_tensor_tensor", op0, op1)
    fn0, fn1 = _alu(op0, "scalar_tensor_tensor"), _alu(op1, "scalar_tensor_tensor")
    v = _f32(data)
    o0 = _per_partition(operand0, v.ndim)
    r = fn0(o0, v) if reverse0 else fn0(v, o0)
    o1 = _f32(operand1)
    if o1.shape != r.shape:
        if o1.size != r.size:
            raise fail("scalar_tensor_tensor", f"operand1 {o1.shape} does not hold "
                                               f"the elements of data {r.shape}")
        o1 = o1.reshape(r.shape)
    r = fn1(o1, r) if reverse1 else fn1(r, o1)
    return _finish("scalar_tensor_tensor", dst, r)


def _into_registers(instruction: str, reduce_op: Any, red: Traced, cmd: Any,
                    init: Any) -> Traced | None:
    """Fold ``red`` (one value per partition) into the vector engine's
    reduce registers as ``cmd`` says; returns the registers."""
    trace = current()
    fold = _alu(reduce_op, instruction)
    if cmd is reduce_cmd.reset_reduce:
        trace.reduce_regs = red
    elif cmd is reduce_cmd.reduce:
        prior = trace.reduce_regs
        trace.reduce_regs = red if prior is None else fold(prior, red)
    elif cmd is reduce_cmd.load_reduce:
        if init is None:
            raise fail(instruction, "reduce_cmd.load_reduce needs reduce_init")
        trace.reduce_regs = fold(_per_partition(init, 2), red)
    elif cmd is reduce_cmd.reset:
        trace.reduce_regs = None
    elif cmd is not reduce_cmd.idle:
        raise ValueError(f"{instruction}: unknown reduce_cmd {cmd!r}")
    return trace.reduce_regs


def _registers_out(instruction: str, reduce_res: Any, regs: Traced | None,
                   negate: bool = False) -> None:
    if reduce_res is None:
        return
    if regs is None:
        raise fail(instruction, "reduce_res asked for with the reduce registers "
                                "never set (use reduce_cmd.reset_reduce)")
    as_view(reduce_res).assign(-regs if negate else regs)


_REDUCE_FOLD = {"sum": nl.add, "prod": nl.multiply, "max": nl.maximum, "min": nl.minimum}


def tensor_scalar_reduce(dst: Any, data: Any, op0: Any, operand0: Any, reduce_op: Any,
                         reduce_res: Any = None, reverse0: bool = False,
                         reduce_cmd: Any = None, reduce_init: Any = None,
                         reduce_res_negate: bool = False, name: Any = None,
                         **_: Any) -> Any:
    """``dst = data <op0> operand0`` (float32 math; a unary ``op0`` such as
    ``nl.abs`` takes no operand), reduced with ``reduce_op`` (add, multiply,
    max, min) over the free axes into the vector engine's registers
    (``reduce_cmd``: ``reset_reduce`` by default, ``reduce``,
    ``load_reduce`` from ``reduce_init``) and out to ``reduce_res``
    (negated with ``reduce_res_negate``)."""
    require_on_chip("tensor_scalar_reduce", data, operand0)
    _arithmetic_only("tensor_scalar_reduce", op0)
    cmd = reduce_cmd if reduce_cmd is not None else globals()["reduce_cmd"].reset_reduce
    v = _f32(data)
    unary = getattr(op0, "_traced", None)
    if unary is not None and (operand0 is None or (isinstance(operand0, (int, float))
                                                   and operand0 == 0)):
        r = unary(v)
    else:
        fn = _alu(op0, "tensor_scalar_reduce")
        o = _per_partition(operand0, v.ndim)
        r = fn(o, v) if reverse0 else fn(v, o)
    kind = _REDUCE.get(reduce_op)
    if kind is None:
        raise NotImplementedError(f"nrtpy.nki: tensor_scalar_reduce: reduce operator "
                                  f"{getattr(reduce_op, '__name__', reduce_op)!r}")
    red = _reduce_value("tensor_scalar_reduce", reduce_op,
                        r.reshape(r.shape[0], -1), (1,), True)
    regs = _into_registers("tensor_scalar_reduce", _REDUCE_FOLD[kind], red, cmd,
                           reduce_init)
    _registers_out("tensor_scalar_reduce", reduce_res, regs, bool(reduce_res_negate))
    return _finish("tensor_scalar_reduce", dst, r)


def exponential(dst: Any, src: Any, max_value: Any = 0.0, reduce_res: Any = None,
                reduce_cmd: Any = None, reduce_init: Any = 0.0, name: Any = None,
                **_: Any) -> Any:
    """``dst = exp(src - max_value)`` (a scalar or [P, 1] ``max_value``) on
    the vector engine; with ``reduce_cmd`` ``reset_reduce``, ``reduce`` or
    ``load_reduce`` (from ``reduce_init``) the sum of each partition's
    results goes into the reduce registers and out to ``reduce_res``.
    (NeuronCore-v4 on hardware; the emulator runs it for any target.)"""
    require_on_chip("exponential", src, max_value)
    cmd = reduce_cmd if reduce_cmd is not None else globals()["reduce_cmd"].idle
    v = _f32(src)
    r = np.exp(v - _per_partition(max_value, v.ndim))
    regs = current().reduce_regs
    if cmd is not globals()["reduce_cmd"].idle:
        red = r.reshape(r.shape[0], -1).sum(axis=1, keepdims=True)
        regs = _into_registers("exponential", nl.add, red, cmd, reduce_init)
    _registers_out("exponential", reduce_res, regs)
    return _finish("exponential", dst, r)


def activate2(dst: Any, op: Any, data: Any, imm0: Any, imm1: Any, op0: Any, op1: Any,
              relu_param: Any = 0.0, reverse0: bool = False, reverse1: bool = False,
              reduce_op: Any = None, reduce_res: Any = None, reduce_cmd: Any = None,
              name: Any = None, **_: Any) -> Any:
    """``dst = op((data <op0> imm0) <op1> imm1)`` on the scalar engine
    (float32 math; ``nl.bypass`` skips a stage); with ``reduce_res`` (``reduce_cmd`` idle or
    ``reset_reduce``) also the ``reduce_op`` of each partition's results.
    (NeuronCore-v4 on hardware; the emulator runs it for any target.)"""
    require_on_chip("activate2", data, imm0, imm1, relu_param)
    if _is_bypass(op0) and not _is_bypass(op1):
        raise fail("activate2", "op1 needs op0 (op0 is bypass)")
    if reduce_cmd not in (None, globals()["reduce_cmd"].idle,
                          globals()["reduce_cmd"].reset_reduce):
        raise NotImplementedError("nrtpy.nki: activate2 reduce_cmd other than idle "
                                  "and reset_reduce")
    v = _f32(data)
    for o, imm, rev in ((op0, imm0, reverse0), (op1, imm1, reverse1)):
        if _is_bypass(o):
            continue
        _arithmetic_only("activate2", o)
        fn = _alu(o, "activate2")
        x = _per_partition(imm, v.ndim)
        v = fn(x, v) if rev else fn(v, x)
    if op is nl.prelu:
        r = nl._prelu(v, _per_partition(relu_param, v.ndim))
    elif not (isinstance(relu_param, (int, float)) and relu_param == 0):
        raise NotImplementedError("nrtpy.nki: activate2 relu_param with an op "
                                  "other than nl.prelu")
    else:
        r = _activation_fn(op)(v)
    if reduce_res is not None:
        red = _reduce_value("activate2", reduce_op or nl.add,
                            r.reshape(r.shape[0], -1), (1,), True)
        as_view(reduce_res).assign(red)
    return _finish("activate2", dst, r)


_COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
            "greater_equal": np.greater_equal, "less": np.less,
            "less_equal": np.less_equal}


def affine_select(dst: Any, pattern: Any, channel_multiplier: int, on_true_tile: Any,
                  on_false_value: Any, cmp_op: Any = None, offset: int = 0,
                  name: Any = None, **_: Any) -> Any:
    """``dst = on_true_tile`` where ``cmp_op(offset + c * channel_multiplier +
    the pattern's index, 0)`` holds, else ``on_false_value`` (the predicate is
    known when the kernel is traced, as ``iota``'s values are)."""
    require_on_chip("affine_select", on_true_tile, dst)
    cmp = _COMPARE.get(getattr(cmp_op, "__name__", "equal" if cmp_op is None else ""))
    if cmp is None:
        raise ValueError(f"affine_select: cmp_op must be a comparison (nl.equal, "
                         f"nl.greater_equal, ...), got {cmp_op!r}")
    shape = _core.shape_of(dst)
    pred = cmp(_iota_values(shape, pattern, int(offset), int(channel_multiplier)), 0)
    t = _f32(on_true_tile)
    if t.shape != shape:
        t = t.reshape(shape)
    trace = current()
    out = np.where(trace.program.const(np.ascontiguousarray(pred)), t,
                   trace.program.full(float(on_false_value), (), F32))
    return _finish("affine_select", dst, out)


def nonzero_with_count(dst: Any, src: Any, index_offset: int = 0, padding_val: int = -1,
                       name: Any = None, **_: Any) -> Any:
    """For partitions 0, 16, ..., 112 (one per GpSimd core): the indices
    (plus ``index_offset``) of the nonzero elements of ``src``, then
    ``padding_val``, then their count, into ``dst`` (one element longer);
    other partitions of ``dst`` are left as they are."""
    require_on_chip("nonzero_with_count", src, dst)
    s_shape, d_shape = _core.shape_of(src), _core.shape_of(dst)
    sdt, ddt = _core.dtype_of(src), _core.dtype_of(dst)
    if sdt not in (nl.float32, nl.int32):
        raise fail("nonzero_with_count", f"src must be float32 or int32, not "
                                         f"{_dtype_name(sdt)}")
    if ddt != nl.int32:
        raise fail("nonzero_with_count", f"dst must be int32, not {_dtype_name(ddt)}")
    t = int(np.prod(s_shape[1:], dtype=np.int64))
    if s_shape[0] != d_shape[0] or int(np.prod(d_shape[1:], dtype=np.int64)) != t + 1:
        raise fail("nonzero_with_count", f"dst {d_shape} must have src's partitions "
                                         f"and one more element per partition than "
                                         f"src {s_shape}")
    trace = current()
    rows = np.arange(0, s_shape[0], 16)
    v = np.take(value_of(src).reshape(s_shape[0], t), trace.program.const(rows), axis=0)
    zero = np.equal(v, trace.program.full(0, (), v.dtype)).astype(np.int32)
    perm = trace.program.emit("argsort", [zero], zero.shape, np.dtype(np.int32), axis=1)
    flat = trace.program.const((np.arange(rows.size, dtype=np.int32)[:, None] * t)
                               .astype(np.int32))
    keys = np.take(zero.reshape(-1), perm + flat)
    found = np.where(np.equal(keys, trace.program.full(0, (), np.int32)),
                     perm + trace.program.full(int(index_offset), (), np.int32),
                     trace.program.full(int(padding_val), (), np.int32))
    count = np.subtract(trace.program.full(t, (), np.int32),
                        zero.sum(axis=1, keepdims=True).astype(np.int32))
    out = np.concatenate([found, count], axis=1)
    idx = rows[:, None] * (t + 1) + np.arange(t + 1)[None, :]
    view = as_view(dst).reshape((d_shape[0] * (t + 1),))[idx.reshape(-1)]
    view.assign(out.reshape(-1))
    return dst


def topk(val_dst: Any, idx_dst: Any, src: Any, n: int, name: Any = None,
         **_: Any) -> Any:
    """The ``K`` (``val_dst``'s free size) largest of the ``n`` bfloat16
    elements of each 16-partition snake of ``src`` (element ``e`` of the
    snake of partitions 16g..16g+15 at partition 16g + e % 16, column
    e // 16), in ascending order, and their indices (uint32, the first of
    equal values first) into every partition of the group."""
    require_on_chip("topk", src, val_dst, idx_dst)
    s_shape = _core.shape_of(src)
    v_shape, i_shape = _core.shape_of(val_dst), _core.shape_of(idx_dst)
    if _core.dtype_of(src) != nl.bfloat16 or _core.dtype_of(val_dst) != nl.bfloat16:
        raise fail("topk", f"src and val_dst must be bfloat16, not "
                           f"{_dtype_name(_core.dtype_of(src))} and "
                           f"{_dtype_name(_core.dtype_of(val_dst))}")
    if _core.dtype_of(idx_dst) != nl.uint32:
        raise fail("topk", f"idx_dst must be uint32, not "
                           f"{_dtype_name(_core.dtype_of(idx_dst))}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"topk: n must be an int, got {type(n).__name__}")
    p = s_shape[0]
    k = int(np.prod(v_shape[1:], dtype=np.int64))
    x = int(np.prod(s_shape[1:], dtype=np.int64))
    if not 8 <= n < 65536:
        raise fail("topk", f"n = {n} is outside [8, 65536)")
    if not 1 <= k <= n or k >= 32768:
        raise fail("topk", f"K = {k} (val_dst's free size) must be from 1 to n = {n}")
    if p % 16 or v_shape[0] != p or tuple(i_shape) != tuple(v_shape):
        raise fail("topk", f"src {s_shape}, val_dst {v_shape} and idx_dst {i_shape}: "
                           f"the partitions must match and be a multiple of 16, "
                           f"the outputs of one shape")
    if x < -(-n // 16):
        raise fail("topk", f"src has {x} columns; n = {n} needs {-(-n // 16)}")
    trace = current()
    groups = p // 16
    e = np.arange(n)
    snake = (np.arange(groups)[:, None] * 16 + e[None, :] % 16) * x + e[None, :] // 16
    vals = np.take(value_of(src).reshape(-1), trace.program.const(snake.astype(np.int32)))
    perm = trace.program.emit("argsort", [vals], vals.shape, np.dtype(np.int32),
                              axis=1, descending=True)
    top = perm[:, :k][:, ::-1]
    flat = top + trace.program.const((np.arange(groups, dtype=np.int32) * n)[:, None])
    best = np.take(vals.reshape(-1), flat)
    rows = trace.program.const((np.arange(p) // 16).astype(np.int32))
    as_view(val_dst).assign(np.take(best, rows, axis=0).reshape(v_shape))
    as_view(idx_dst).assign(np.take(top.astype(np.uint32), rows, axis=0).reshape(i_shape))
    return val_dst


def nc_n_gather(dst: Any, data: Any, indices: Any, name: Any = None,
                **_: Any) -> Any:
    """Per partition, the elements of ``data`` (its free axes flattened) at
    ``indices`` (uint32, in ``dst``'s free shape).  An index outside the
    partition's elements fails the execution with NRT_EXEC_OOB."""
    for what, x in (("data", data), ("indices", indices), ("dst", dst)):
        if _core.memory_of(x) is not MemoryRegion.sbuf:
            raise fail("nc_n_gather", f"{what} must be in SBUF (GpSimd "
                                      f"cannot access PSUM or HBM)")
    v = value_of(data)
    idx = value_of(indices)
    if idx.dtype != np.uint32:
        raise fail("nc_n_gather", f"indices must be uint32, not {_dtype_name(idx.dtype)}")
    if _core.dtype_of(dst) != v.dtype:
        raise fail("nc_n_gather", "dst must have data's dtype")
    p = v.shape[0]
    if idx.shape[0] != p or _core.shape_of(dst)[0] != p:
        raise fail("nc_n_gather", "data, indices and dst must have the same "
                                  "partitions")
    f = v.size // p
    cols = idx.reshape(p, -1).astype(np.int64)
    prog = current().program
    rows = prog.const((np.arange(p, dtype=np.int64) * f).reshape(p, 1))
    flat = np.where(np.less(cols, np.int64(f)), np.add(cols, rows), np.int64(p * f))
    r = np.take(v.reshape(-1), flat.reshape(-1))
    return _finish("nc_n_gather", dst, r.reshape(_core.shape_of(dst)))


def rng(dst: Any, engine: Any = None, name: Any = None, **_: Any) -> Any:
    """32 random bits per element, truncated to ``dst``'s integer dtype.
    The emulator has no random engine: the bits are drawn when the kernel
    is traced (``nl.random_seed``), so every run gives the same."""
    v = as_view(dst)
    if v.dtype.kind not in "iu":
        raise fail("rng", f"dst must be an integer dtype, not {_dtype_name(v.dtype)}")
    require_on_chip("rng", dst)
    trace = current()
    # (the low bits: NumPy's integer conversion wraps)
    bits = trace.rng.integers(0, 2**32, v.shape, dtype=np.uint64).astype(v.dtype)
    v.assign(trace.program.const(np.ascontiguousarray(bits)))
    return dst


def rand2(dst: Any, min: Any, max: Any, name: Any = None, **_: Any) -> Any:  # noqa: A002
    """Uniform values in [min, max] (numbers or per-partition columns),
    converted to ``dst``'s dtype.  As ``rng``: drawn when the kernel is
    traced, from the trace's generator."""
    require_on_chip("rand2", dst)
    v = as_view(dst)
    trace = current()
    u = trace.program.const(trace.rng.random(v.shape).astype(np.float32))
    lo = _per_partition(min, v.ndim)
    hi = _per_partition(max, v.ndim)
    return _finish("rand2", dst, np.add(lo, np.multiply(u, np.subtract(hi, lo))))


# -- registers --------------------------------------------------------------------
VirtualRegister = _dynamic.VirtualRegister


def _register(x: Any, instruction: str) -> VirtualRegister:
    if not isinstance(x, VirtualRegister):
        raise TypeError(f"{instruction}: expected a register "
                        f"(nisa.register_alloc), not {type(x).__name__}")
    return x


def register_alloc(x: Any = None) -> VirtualRegister:
    """A new 32-bit register: an int32 scalar of the program, set to ``x``
    (an int) or, with None, unset (it reads 0 until written)."""
    trace = current()
    p = trace.program
    reg = VirtualRegister(trace, p.buffer("temp", (), _dynamic.I32).name,
                          written=False)
    if x is not None:
        register_move(reg, x)
    return reg


def register_move(dst: Any, src: Any) -> None:
    """``dst = src``: an int known when the kernel is traced, or another
    register."""
    reg = _register(dst, "register_move")
    if isinstance(src, VirtualRegister):
        value = src.traced()
    elif isinstance(src, int) and not isinstance(src, bool):
        if not -2**31 <= src < 2**32:
            raise fail("register_move", f"{src} does not fit a 32-bit register")
        value = current().program.full(int(np.uint32(src & 0xFFFFFFFF).view(np.int32)),
                                       (), _dynamic.I32)
    else:
        raise TypeError(f"register_move: src must be an int or a register, "
                        f"not {type(src).__name__}")
    reg.write(value, "register_move")


def register_load(dst: Any, src: Any) -> None:
    """``dst = src``: the value of a one-element tensor (HBM or SBUF),
    converted to int32 (a float toward zero)."""
    reg = _register(dst, "register_load")
    v = as_view(src)
    if v.size != 1:
        raise fail("register_load", f"src must hold one element, not "
                                    f"{v.shape}")
    reg.write(v.read().reshape(()), "register_load")


def register_store(dst: Any, src: Any) -> None:
    """``dst = src``: the register's value into a one-element tensor, in
    its dtype."""
    reg = _register(src, "register_store")
    v = as_view(dst)
    if v.size != 1:
        raise fail("register_store", f"dst must hold one element, not "
                                     f"{v.shape}")
    v.assign(reg.traced().reshape(v.shape).astype(v.dtype))


_notes.instrument(globals(), _names.ISA)  # each call's ops: one instruction
__getattr__ = _names.missing(__name__, "nki.isa")
__all__ = [n for n in _names.ISA if n in globals()]
