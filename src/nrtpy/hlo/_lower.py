"""The lowering framework: HLO instructions -> emulator program ops.

A lowering is a function registered for one or more opcodes::

    from nrtpy.hlo._lower import Lowering, lowers

    @lowers("negate")
    def _negate(ctx: Lowering, ins: Instruction) -> Value:
        x = ctx.operand(ins, 0)                  # the operand's buffer
        return ctx.emit("neg", [x], ins.shape.dims, ins.shape.dtype)

It receives the :class:`Lowering` context and the instruction, and returns
the instruction's value: a buffer (``Buf``, the tracer's ``Traced``: a
``name``, ``shape`` and ``dtype``), or, for tuple-shaped instructions, a
Python tuple of values.  Buffers are single-assignment by convention (a
lowering never writes a buffer it did not create, except through
``emit_into`` on buffers it owns, e.g. a while loop's state), so a value
may be shared: ``copy`` and ``reshape`` to the same shape just return their
operand's buffer.

What the context offers (each documented below):

- operands: ``operand(ins, k)`` (an array buffer), ``value(ins, k)`` (a
  buffer or tuple), ``operands(ins)``, ``producer(ins, k)`` (the operand's
  HLO instruction) and ``constant_of(ins, k)`` (its value when it is a
  constant, through broadcasts, reshapes and copies).
- buffers: ``temp(shape, dtype)``, ``const(array)``, ``full(value, shape,
  dtype)``.
- ops: ``emit(op, inputs, shape, dtype, compute=None, **attrs)`` appends an
  op writing a new temporary and returns it; ``emit_into(out, op, inputs,
  compute=None, **attrs)`` writes an existing buffer; ``with ctx.op_list()
  as ops:`` collects the ops emitted inside into a new list (the nested op
  lists of ``while``/``conditional``, hlo-contract section C) instead of
  the current one.
- helpers that skip no-ops: ``reshape``, ``transpose``, ``cast``,
  ``broadcast_to``, ``copy``; ``elementwise(op, inputs, shape, dtype)``
  for ops that broadcast their operands.
- lazy broadcasts: ``broadcast`` and ``iota`` give ``Broadcast`` values
  that elementwise ops read without writing the repeated array out.
  ``operand()`` and ``value()`` hand every other lowering materialized
  buffers (``lazy=True`` asks for the lazy ones); ``materialize(v)``
  writes one out.
- called computations: ``inline(computation, args)`` lowers a computation
  with the given argument values (inlining: ``call``, loop bodies,
  branches) and returns its root's value; ``computation(ins, k)`` is the
  k-th called computation of ``ins``.
- ``emit_raw(record)`` appends an op record without ``out`` (``while``,
  ``conditional``).  State that such an op writes must live in buffers
  the lowering created (``ctx.copy(v)`` of the initial value: inputs and
  constants are never written, and a value may be shared by several
  instructions), and a body's results are copied into the state through
  temporaries when one result reads another's state buffer.
- errors: ``raise ctx.unsupported(ins, "what")`` (NotImplementedError
  naming the opcode, the instruction and its computation) and ``raise
  ctx.malformed(ins, "what")`` (ValueError, the same names).

Everything is lowered before anything is written, so a lowering may raise
at any point.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence, Union

import numpy as np

from nrtpy import _dtypes
from nrtpy.hlo._module import Computation, Instruction, Module
from nrtpy.neff._trace import MAX_DIMS, Program, Traced

#: A lowered array: a program buffer (name, shape, dtype).
Buf = Traced
#: A lowered value: a buffer, or a tuple of values for tuple shapes.
Value = Union[Traced, tuple]

LoweringFn = Callable[["Lowering", Instruction], Value]

#: opcode -> lowering function; filled by @lowers in the _lower_*.py modules.
LOWERINGS: dict[str, LoweringFn] = {}

#: How deep called computations (call, loop bodies, branches) may nest.
MAX_INLINE_DEPTH = 64


class Broadcast(Traced):
    """A value broadcast lazily: ``source`` (a buffer of the same rank,
    with 1s where this value repeats) stands for an array of ``shape``.

    Elementwise lowerings read the source directly (the emulator's
    elementwise ops broadcast their operands, so the repeated array is
    never written); any other use materializes it once, with one
    ``broadcast_to`` (``Lowering.materialize``).  ``operand()`` hides it
    from lowerings that do not ask for it.
    """

    def __init__(self, source: Traced, shape: tuple[int, ...]) -> None:
        super().__init__(source.program, "", shape, source.dtype)
        self.source = source
        self.full: Traced | None = None
        self.full_list: list | None = None  # the op list that wrote it


def lowers(*opcodes: str) -> Callable[[LoweringFn], LoweringFn]:
    """Register the decorated function as the lowering of ``opcodes``."""
    def register(fn: LoweringFn) -> LoweringFn:
        for opcode in opcodes:
            if opcode in LOWERINGS:
                raise RuntimeError(f"two lowerings for HLO opcode {opcode!r}: "
                                   f"{LOWERINGS[opcode].__module__}."
                                   f"{LOWERINGS[opcode].__name__} and "
                                   f"{fn.__module__}.{fn.__name__}")
            LOWERINGS[opcode] = fn
        return fn
    return register


class Lowering:
    """The state of one compilation: the module, the program being built
    (buffers, ops, constants) and the values of the instructions lowered so
    far, per inlined computation."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.program = Program()
        # One dict per computation being lowered (inlining nests them):
        # instruction id -> value.
        self._scopes: list[dict[int, Value]] = []
        self._args: list[Sequence[Value]] = []
        self._comps: list[Computation] = []
        # The op lists being written: the program's, then nested ones.
        self._lists: list[list[dict[str, Any]]] = [self.program.ops]
        self._const_cache: dict[tuple, Buf] = {}
        # Per computation id: its common subexpressions (a computation is
        # inlined at every call, its merges are the same each time).
        self._same: dict[int, dict[int, int]] = {}
        self.instruction: Instruction | None = None  # the one being lowered

    # -- errors ------------------------------------------------------------
    @staticmethod
    def unsupported(ins: Instruction, what: str = "") -> NotImplementedError:
        detail = f": {what}" if what else ""
        return NotImplementedError(
            f"HLO opcode {ins.opcode!r} is not supported{detail} (instruction "
            f"{ins.name!r} in computation {ins.computation!r})")

    @staticmethod
    def malformed(ins: Instruction, what: str) -> ValueError:
        return ValueError(f"malformed HLO: {ins.where()}: {what}")

    # -- operands ----------------------------------------------------------
    def value(self, ins: Instruction, k: int, lazy: bool = False) -> Value:
        """The value of operand ``k`` of ``ins`` (a buffer or a tuple).
        With ``lazy`` it may hold ``Broadcast``s (to pass on unchanged)."""
        if k >= len(ins.operand_ids):
            raise self.malformed(ins, f"has {len(ins.operand_ids)} operands, "
                                      f"operand {k} is needed")
        v = self._scopes[-1][ins.operand_ids[k]]
        return v if lazy else self.materialize(v)

    def operand(self, ins: Instruction, k: int, lazy: bool = False) -> Buf:
        """The buffer of array operand ``k`` of ``ins``.  With ``lazy`` it
        may be a ``Broadcast`` (for elementwise lowerings, which pass it to
        ``emit(..., broadcasting=True)``)."""
        v = self.value(ins, k, lazy=True)
        if isinstance(v, tuple):
            raise self.malformed(ins, f"operand {k} is a tuple, an array is "
                                      f"needed")
        return v if lazy else self.materialize(v)

    def materialize(self, v: Value) -> Value:
        """``v`` with every lazy ``Broadcast`` in it written out."""
        if isinstance(v, tuple):
            return tuple(self.materialize(e) for e in v)
        if isinstance(v, Broadcast):
            # Written out once per op list: a copy written in a nested list
            # (a loop body, a branch) may never run, so only one written in
            # the current list or a list around it is reused.
            if v.full is None or not any(v.full_list is ops for ops in self._lists):
                v.full = self.emit("broadcast_to", [v.source], v.shape, v.dtype)
                v.full_list = self.program.ops
            return v.full
        return v

    def operands(self, ins: Instruction) -> list[Buf]:
        return [self.operand(ins, k) for k in range(len(ins.operand_ids))]

    def producer(self, ins: Instruction, k: int) -> Instruction:
        """The HLO instruction that computes operand ``k`` of ``ins`` (an
        instruction of the computation being lowered)."""
        return self._comps[-1].by_id[ins.operand_ids[k]]

    def constant_of(self, ins: Instruction, k: int) -> np.ndarray | None:
        """The value of operand ``k`` (an array of its shape) when it is a
        constant, seen through copy, reshape, convert and broadcast; else
        None."""
        chain = []
        p = self.producer(ins, k)
        while p.opcode in ("broadcast", "reshape", "copy", "convert") and \
                p.operand_ids:
            chain.append(p)
            p = self.producer(p, 0)
        if p.opcode != "constant" or p.literal is None or p.shape.is_tuple:
            return None
        v = np.asarray(p.literal.value)
        try:
            for q in reversed(chain):
                if q.opcode == "reshape":
                    v = v.reshape(q.shape.dims)
                elif q.opcode == "convert":
                    v = v.astype(q.shape.dtype)
                elif q.opcode == "broadcast":
                    dims = list(q.dimensions)
                    expanded = [1] * len(q.shape.dims)
                    for i, d in enumerate(dims):
                        expanded[d] = v.shape[i]
                    v = v.transpose(np.argsort(dims)).reshape(expanded)
                    v = np.broadcast_to(v, q.shape.dims)
        except (ValueError, IndexError):
            return None
        return v

    def computation(self, ins: Instruction, k: int = 0) -> Computation:
        """The ``k``-th called computation of ``ins`` (to_apply, body, ...)."""
        if k >= len(ins.called_computation_ids):
            raise self.malformed(ins, f"calls {len(ins.called_computation_ids)} "
                                      f"computations, computation {k} is needed")
        return self.module.computations[ins.called_computation_ids[k]]

    # -- buffers -----------------------------------------------------------
    def _check_dims(self, shape: Sequence[int]) -> None:
        if len(shape) > MAX_DIMS:
            ins = self.instruction
            what = f"arrays of {len(shape)} dimensions (the emulator has at most {MAX_DIMS})"
            if ins is not None:
                raise self.unsupported(ins, what)
            raise NotImplementedError(what)

    def temp(self, shape: Sequence[int], dtype: Any) -> Buf:
        """A new temporary buffer."""
        self._check_dims(shape)
        return self.program.buffer("temp", tuple(int(d) for d in shape), np.dtype(dtype))

    def const(self, array: np.ndarray) -> Buf:
        """A constant buffer holding ``array`` (small arrays are shared)."""
        array = np.asarray(array)
        self._check_dims(array.shape)
        key = None
        if array.nbytes <= 256:
            key = (array.dtype.str, array.dtype.name, array.shape, array.tobytes())
            hit = self._const_cache.get(key)
            if hit is not None:
                return hit
        buf = self.program.const(np.array(array, copy=True))
        if key is not None:
            self._const_cache[key] = buf
        return buf

    def full(self, value: Any, shape: Sequence[int], dtype: Any) -> Buf:
        """A new buffer filled with ``value`` (a scalar constant, broadcast)."""
        c = self.const(np.array(value, dtype=np.dtype(dtype)))
        return self.broadcast_to(c, shape)

    def splat(self, value: Any, shape: Sequence[int], dtype: Any) -> Buf:
        """``value`` as a lazy ``Broadcast`` of ``shape`` (for elementwise
        consumers)."""
        c = self.const(np.array(value, dtype=np.dtype(dtype)))
        return self.broadcast_to(c, shape, lazy=True)

    # -- ops ---------------------------------------------------------------
    def emit(self, op: str, inputs: Sequence[Buf], shape: Sequence[int],
             dtype: Any, compute: Any = None, broadcasting: bool = False,
             **attrs: Any) -> Buf:
        """Append ``op`` reading ``inputs`` into a new temporary of ``shape``
        and ``dtype``; ``compute`` is the op's compute dtype (omitted when it
        is the out dtype).  ``broadcasting``: the op broadcasts its operands
        (elementwise ops), so lazy ``Broadcast`` inputs are read through
        their sources.  Returns the temporary."""
        out = self.temp(shape, dtype)
        self.emit_into(out, op, inputs, compute=compute,
                       broadcasting=broadcasting, **attrs)
        return out

    def emit_into(self, out: Buf, op: str, inputs: Sequence[Buf],
                  compute: Any = None, broadcasting: bool = False,
                  **attrs: Any) -> None:
        """Append ``op`` reading ``inputs`` and writing the existing buffer
        ``out``."""
        names = []
        for t in inputs:
            if isinstance(t, Broadcast):
                t = t.source if broadcasting else self.materialize(t)
            names.append(t.name)
        rec: dict[str, Any] = {"op": op, "in": names, "out": out.name}
        if compute is not None and np.dtype(compute) != out.dtype:
            rec["dtype"] = _dtypes.name_of(np.dtype(compute))
        rec.update(attrs)
        self.program.ops.append(rec)

    def emit_raw(self, rec: dict[str, Any]) -> None:
        """Append an op record as is (ops without ``out``: while,
        conditional)."""
        self.program.ops.append(rec)

    @contextlib.contextmanager
    def op_list(self) -> Iterator[list[dict[str, Any]]]:
        """Collect the ops emitted inside the ``with`` block into the list
        it yields (a nested op list), not into the current one."""
        saved = self.program.ops
        nested: list[dict[str, Any]] = []
        self.program.ops = nested
        self._lists.append(nested)
        try:
            yield nested
        finally:
            self._lists.pop()
            self.program.ops = saved

    # -- helpers (no op when there is nothing to do) ---------------------------
    def reshape(self, x: Buf, shape: Sequence[int]) -> Buf:
        shape = tuple(int(d) for d in shape)
        if tuple(x.shape) == shape:
            return x
        return self.emit("reshape", [x], shape, x.dtype)

    def transpose(self, x: Buf, perm: Sequence[int]) -> Buf:
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return x
        return self.emit("transpose", [x], tuple(x.shape[p] for p in perm),
                         x.dtype, perm=perm)

    def cast(self, x: Buf, dtype: Any) -> Buf:
        dtype = np.dtype(dtype)
        if x.dtype == dtype:
            return x
        return self.elementwise("cast", [x], x.shape, dtype)

    def elementwise(self, op: str, inputs: Sequence[Buf], shape: Sequence[int],
                    dtype: Any, compute: Any = None, **attrs: Any) -> Buf:
        """An elementwise op (its operands broadcast to ``shape``).  Lazy
        ``Broadcast`` inputs are read through their sources; when every
        input is smaller than ``shape``, the op computes at the inputs'
        common shape and its result is a lazy ``Broadcast`` too."""
        shape = tuple(int(d) for d in shape)
        srcs = [t.source if isinstance(t, Broadcast) else t for t in inputs]
        small = tuple(np.broadcast_shapes(*(tuple(t.shape) for t in srcs))) \
            if srcs else shape
        if len(small) == len(shape) and small != shape:
            r = self.emit(op, srcs, small, dtype, compute=compute, **attrs)
            return Broadcast(r, shape)
        return self.emit(op, srcs, shape, dtype, compute=compute, **attrs)

    def broadcast_to(self, x: Buf, shape: Sequence[int], lazy: bool = False) -> Buf:
        """``x`` broadcast (NumPy's rules) to ``shape``; with ``lazy`` a
        ``Broadcast`` that elementwise consumers read without writing it
        out (the source is reshaped to the result's rank)."""
        shape = tuple(int(d) for d in shape)
        if tuple(x.shape) == shape:
            return x
        if lazy:
            if isinstance(x, Broadcast):
                x = x.source
            x = self.reshape(x, (1,) * (len(shape) - len(x.shape)) + tuple(x.shape))
            return Broadcast(x, shape)
        return self.emit("broadcast_to", [self.materialize(x)], shape, x.dtype)

    def copy(self, x: Buf) -> Buf:
        """A new buffer with the contents of ``x`` (for state that is
        written later)."""
        return self.emit("copy", [x], x.shape, x.dtype)

    # -- computations ------------------------------------------------------
    def argument(self, number: int) -> Value:
        """Argument ``number`` of the computation being lowered."""
        return self._args[-1][number]

    def inline(self, comp: Computation, args: Sequence[Value]) -> Value:
        """Lower ``comp`` with ``args`` as its parameters' values; its root's
        value."""
        if len(self._scopes) >= MAX_INLINE_DEPTH:
            raise NotImplementedError(f"computation {comp.name!r}: called "
                                      f"computations nest more than "
                                      f"{MAX_INLINE_DEPTH} deep")
        nparams = sum(1 for i in comp.instructions if i.opcode == "parameter")
        if nparams != len(args):
            caller = self.instruction
            what = (f"computation {comp.name!r} has {nparams} parameters but "
                    f"is called with {len(args)} arguments")
            raise self.malformed(caller, what) if caller else ValueError(what)
        self._scopes.append({})
        self._args.append(list(args))
        self._comps.append(comp)
        saved = self.instruction
        same = self._same.get(comp.id)
        if same is None:
            same = self._same[comp.id] = _common_subexpressions(comp)
        try:
            for ins in _live(comp):
                self.instruction = ins
                first = same.get(ins.id)
                if first is not None:
                    self._scopes[-1][ins.id] = self._scopes[-1][first]
                    continue
                self._scopes[-1][ins.id] = self.lower(ins)
            return self._scopes[-1][comp.root_id]
        finally:
            self.instruction = saved
            self._scopes.pop()
            self._args.pop()
            self._comps.pop()

    def lower(self, ins: Instruction) -> Value:
        fn = LOWERINGS.get(ins.opcode)
        if fn is None:
            raise self.unsupported(ins)
        try:
            value = fn(self, ins)
        except (IndexError, KeyError, TypeError, AttributeError,
                ZeroDivisionError, OverflowError, RecursionError) as exc:
            # A lowering reads the module's fields as the producers write
            # them; a module that breaks what they promise (a wrong operand
            # count, an attribute out of range) surfaces here as a lookup
            # that fails.  That is a malformed module, said as such, never
            # an internal exception escaping to the caller.
            raise self.malformed(ins, f"cannot be lowered: "
                                      f"{type(exc).__name__}: {exc}") from exc
        check_value(self, ins, value, ins.shape)
        return value



def check_value(ctx: Lowering, ins: Instruction, value: Value, shape) -> None:
    """A lowering's result has the instruction's shape (a bug otherwise,
    or a module whose shapes do not add up)."""
    if shape.is_tuple:
        if not isinstance(value, tuple) or len(value) != len(shape.tuple_shapes):
            raise ctx.malformed(ins, f"the result is not the tuple {shape}")
        for v, s in zip(value, shape.tuple_shapes):
            check_value(ctx, ins, v, s)
        return
    if isinstance(value, tuple):
        raise ctx.malformed(ins, f"the result is a tuple, {shape} is declared")
    if tuple(value.shape) != tuple(shape.dims) or value.dtype != shape.dtype:
        raise ctx.malformed(ins, f"the result is "
                                 f"{value.dtype.name}{list(value.shape)}, the "
                                 f"instruction declares {shape}")


# Opcodes that are not pure functions of their operands and attributes
# (state, communication, calls whose bodies may hold either): never merged.
_IMPURE = frozenset((
    "parameter", "rng", "rng-bit-generator", "rng-get-and-update-state",
    "custom-call", "infeed", "outfeed", "send", "send-done", "recv",
    "recv-done", "after-all", "all-reduce", "all-gather", "reduce-scatter",
    "all-to-all", "collective-permute", "while", "conditional", "call",
    "partition-id", "replica-id", "optimization-barrier"))
# HloInstructionProto fields that do not change what an instruction
# computes: name, metadata, id, operand ids (compared after merging).
_NOT_MEANING = frozenset((1, 7, 35, 36))


def _common_subexpressions(comp: Computation) -> dict[int, int]:
    """Instruction id -> the id of an earlier instruction of ``comp`` that
    computes the same value (the same opcode and attributes over the same
    operands, after merging those): XLA's CSE, which producers rely on (a
    JAX function that writes ``x - m`` twice lowers it twice)."""
    first: dict[tuple, int] = {}
    same: dict[int, int] = {}
    for ins in comp.instructions:
        if ins.opcode in _IMPURE:
            continue
        raw = ins.raw
        attrs = []
        for number in sorted(raw.fields):
            if number in _NOT_MEANING:
                continue
            for wire, value, _ in raw.fields[number]:
                if isinstance(value, tuple):
                    value = bytes(raw.buf[value[0]:value[1]])
                attrs.append((number, wire, value))
        key = (tuple(same.get(o, o) for o in ins.operand_ids), tuple(attrs))
        if key in first:
            same[ins.id] = first[key]
        else:
            first[key] = ins.id
    return same


def _live(comp: Computation) -> list[Instruction]:
    """The instructions the root depends on, in order (plus parameters)."""
    live = {comp.root_id}
    for ins in reversed(comp.instructions):
        if ins.id in live:
            live.update(ins.operand_ids)
    return [i for i in comp.instructions if i.id in live or i.opcode == "parameter"]
