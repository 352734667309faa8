"""Values known at run time only, and the loops the device runs.

A kernel is traced once, but a loop with bounds in registers
(``nl.dynamic_range``, ``nl.fori_loop``, ``nl.while_loop``) runs on the
device: its body is traced once into the op list of an emulator ``while``,
and its index is a register, a value that exists only when the NEFF runs.
The tracer carries such values as :class:`DynInt` (an affine expression of
int32 scalar buffers, so that ``(i + 1) * 128 - i * 128`` is the int 128,
as a slice's size must be) and :class:`DynArray` (a DynInt plus an index
array: ``i * 128 + nl.arange(128)[:, None]``).  An access indexed by one
keeps the run-time part apart from its static indices (``View.dyn``) and
adds it when the ops run (``_core._read_dynamic``, ``_assign_dynamic``):
an access whose static part is a box, moved along distinct axes, is the
emulator's ``dynamic_slice`` / ``dynamic_update_slice`` of that window
(whole contiguous runs; ``"check"`` bounds fail the execution with
NRT_EXEC_OOB when it leaves the tensor), any other a ``take`` of its
moved indices or a ``scatter`` to them.

Registers are mutable (``register_move``/``register_load`` write them);
an expression reads a copy taken when it is made, so that a later write
does not change it, as Python's evaluation order says.  A loop's index is
frozen (the loop alone advances it), so it is read in place.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np

from nrtpy.neff._trace import Traced
from nrtpy.nki import _core
from nrtpy.nki._core import Dynamic, NkiTensor, View, current, fail

I32 = np.dtype(np.int32)
I64 = np.dtype(np.int64)


def _no_value(*_: Any) -> Any:
    raise TypeError("nrtpy.nki: a register holds a value only when the "
                    "kernel runs, not while it is traced: use it as a loop "
                    "bound, a run-time index or offset, or nl.while_loop, "
                    "not in Python if/while/int()/range()")


class DynInt(Dynamic):
    """An int known at run time only: ``sum(coeff * scalar) + const`` over
    int32 scalar buffers of the program."""

    __array_ufunc__ = None  # NumPy defers to our reflected operators

    def __init__(self, terms: tuple[tuple[Traced, int], ...] = (),
                 const: int = 0) -> None:
        self.terms = tuple((t, c) for t, c in terms if c)
        self.const = int(const)

    def to_dyn(self) -> DynInt:
        return self

    @property
    def is_const(self) -> bool:
        return not self.terms

    def __repr__(self) -> str:
        parts = [f"{c}*{t.name}" for t, c in self.terms] + [str(self.const)]
        return f"DynInt({' + '.join(parts)})"

    def __add__(self, o: Any) -> Any:
        if isinstance(o, np.ndarray):
            return DynArray(self, o)
        if isinstance(o, DynArray):
            return o + self
        d = _as_dyn(o)
        if d is None:
            return NotImplemented
        terms = dict((t.name, [t, c]) for t, c in self.terms)
        for t, c in d.terms:
            if t.name in terms:
                terms[t.name][1] += c
            else:
                terms[t.name] = [t, c]
        return DynInt(tuple((t, c) for t, c in terms.values()),
                      self.const + d.const)

    __radd__ = __add__

    def __neg__(self) -> DynInt:
        return DynInt(tuple((t, -c) for t, c in self.terms), -self.const)

    def __sub__(self, o: Any) -> Any:
        if isinstance(o, (np.ndarray, Dynamic, numbers.Integral)):
            return self + (-o)
        return NotImplemented

    def __rsub__(self, o: Any) -> Any:
        return (-self) + o

    def __mul__(self, o: Any) -> Any:
        if isinstance(o, numbers.Integral) and not isinstance(o, bool):
            return DynInt(tuple((t, c * int(o)) for t, c in self.terms),
                          self.const * int(o))
        d = _as_dyn(o)
        if d is None:
            return NotImplemented
        if d.is_const:
            return self * d.const
        if self.is_const:
            return d * self.const
        # not affine: the product, computed now
        return _scalar(np.multiply(self.value(), d.value()))

    __rmul__ = __mul__

    def __floordiv__(self, o: Any) -> Any:
        d = _as_dyn(o)
        if d is None:
            return NotImplemented
        return _scalar(np.floor_divide(self.value(), d.value()))

    def __mod__(self, o: Any) -> Any:
        d = _as_dyn(o)
        if d is None:
            return NotImplemented
        return _scalar(np.mod(self.value(), d.value()))

    def value(self) -> Traced:
        """The int64 scalar it is, computed by ops in the current op list."""
        p = current().program
        acc: Traced | None = None
        for t, c in self.terms:
            v = t.astype(I64)
            v = v if c == 1 else np.multiply(v, np.int64(c))
            acc = v if acc is None else np.add(acc, v)
        if acc is None:
            return p.full(self.const, (), I64)
        return acc if self.const == 0 else np.add(acc, np.int64(self.const))

    __bool__ = __int__ = __index__ = __float__ = _no_value
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _no_value  # type: ignore[assignment]
    __hash__ = object.__hash__


def _scalar(v: Traced) -> DynInt:
    """A DynInt of one computed scalar (kept as an int32 buffer)."""
    return DynInt(((v.astype(I32), 1),))


def _as_dyn(o: Any) -> DynInt | None:
    if isinstance(o, bool):
        return None
    if isinstance(o, numbers.Integral):
        return DynInt((), int(o))
    if isinstance(o, Dynamic) and not isinstance(o, DynArray):
        return o.to_dyn()
    return None


class DynArray(Dynamic):
    """Index arrays shifted by a run-time int: ``dyn + static``, the form
    ``i * 128 + nl.arange(128)[:, None]`` takes."""

    __array_ufunc__ = None

    def __init__(self, dyn: DynInt, static: np.ndarray) -> None:
        if static.dtype.kind not in "iu":
            raise TypeError(f"index arrays must be integers, not {static.dtype}")
        self.dyn = dyn
        self.static = static.astype(np.int64, copy=False)

    def __repr__(self) -> str:
        return f"DynArray({self.dyn!r} + array{self.static.shape})"

    def __add__(self, o: Any) -> Any:
        if isinstance(o, np.ndarray):
            return DynArray(self.dyn, self.static + o)
        if isinstance(o, DynArray):
            return DynArray(self.dyn + o.dyn, self.static + o.static)
        d = _as_dyn(o)
        if d is None:
            return NotImplemented
        return DynArray(self.dyn + d, self.static)

    __radd__ = __add__

    def __neg__(self) -> DynArray:
        return DynArray(-self.dyn, -self.static)

    def __sub__(self, o: Any) -> Any:
        return self + (-o)

    def __rsub__(self, o: Any) -> Any:
        return (-self) + o

    def __mul__(self, o: Any) -> Any:
        if isinstance(o, numbers.Integral) and not isinstance(o, bool):
            return DynArray(self.dyn * o, self.static * int(o))
        return NotImplemented

    __rmul__ = __mul__

    def _cmp(self, *_: Any) -> Any:
        raise NotImplementedError("nrtpy.nki: a mask made of a run-time "
                                  "index (a comparison of a loop register)")

    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _cmp  # type: ignore[assignment]
    __bool__ = __int__ = __index__ = _no_value
    __hash__ = object.__hash__


class VirtualRegister(Dynamic, _core.NKIObject):
    """A 32-bit register of an engine (``nisa.register_alloc``): an int32
    scalar buffer of the program.  A loop's index is frozen."""

    __array_ufunc__ = None

    def __init__(self, trace: _core.Trace, name: str, frozen: bool = False,
                 written: bool = True) -> None:
        self.trace = trace
        self.name = name
        self.frozen = frozen
        self.written = written
        # The copy expressions read, and the op list it was made in, until
        # the register is written again: ``x[r:r + 4]`` reads one copy
        # twice, so that the slice's size is known.
        self.snapshot: tuple[list[Any], DynInt] | None = None

    def __repr__(self) -> str:
        return f"VirtualRegister({self.name}{', frozen' if self.frozen else ''})"

    def traced(self) -> Traced:
        """Its buffer as the program's value (an unset register reads 0)."""
        if not self.written:
            self.trace.setup_ops().append(
                {"op": "full", "in": [], "out": self.name, "value": 0})
            self.written = True
        return Traced(self.trace.program, self.name, (), I32)

    def to_dyn(self) -> DynInt:
        t = self.traced()
        if self.frozen:
            return DynInt(((t, 1),))
        # a copy: a later write into the register does not change it
        ops = self.trace.program.ops
        if self.snapshot is None or self.snapshot[0] is not ops:
            self.snapshot = (ops, _scalar(np.add(t, np.int32(0))))
        return self.snapshot[1]

    def write(self, value: Traced, instruction: str) -> None:
        """Set the register to ``value`` (a scalar, converted to int32)."""
        if self.frozen:
            raise fail(instruction, "a loop's index register is read-only "
                                    "(the loop alone advances it)")
        p = self.trace.program
        v = value.reshape(()) if value.shape != () else value
        op = "copy" if v.dtype == I32 else "cast"
        p.ops.append({"op": op, "in": [v.name], "out": self.name})
        self.written = True
        self.snapshot = None

    def __add__(self, o: Any) -> Any: return self.to_dyn() + o
    def __radd__(self, o: Any) -> Any: return o + self.to_dyn()
    def __sub__(self, o: Any) -> Any: return self.to_dyn() - o
    def __rsub__(self, o: Any) -> Any: return o - self.to_dyn()
    def __mul__(self, o: Any) -> Any: return self.to_dyn() * o
    def __rmul__(self, o: Any) -> Any: return self.to_dyn() * o
    def __floordiv__(self, o: Any) -> Any: return self.to_dyn() // o
    def __mod__(self, o: Any) -> Any: return self.to_dyn() % o
    def __neg__(self) -> Any: return -self.to_dyn()

    __bool__ = __int__ = __index__ = __float__ = _no_value
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _no_value  # type: ignore[assignment]
    __hash__ = object.__hash__


def value_dyn(x: Any, instruction: str) -> DynInt:
    """A bound, offset or register source as a DynInt: an int, a register
    or an expression of one, or a one-element tile (read now)."""
    d = _as_dyn(x)
    if d is not None:
        return d
    if isinstance(x, (View, NkiTensor)):
        v = _core.as_view(x)
        if v.size != 1:
            raise fail(instruction, f"a run-time scalar must be a tile of one "
                                    f"element, not of shape {v.shape}")
        val = v.read()
        if val.dtype.kind not in "iub":
            # (a register holds 32 bits; a float converts toward zero)
            val = val.astype(I32)
        return _scalar(val.reshape(()))
    raise TypeError(f"{instruction}: expected an int, a register or a "
                    f"one-element tile, got {type(x).__name__}")


# -- loops the device runs -----------------------------------------------------
class Loop:
    """One run-time loop being traced: the op list it sits in (``outer``)
    and that of its body; ops go into the body until it ends."""

    def __init__(self, trace: _core.Trace) -> None:
        self.trace = trace
        self.outer = trace.program.ops
        self.body: list[dict[str, Any]] = []
        self.first: str | None = None

    def enter(self) -> None:
        trace = self.trace
        trace.matmul_group = None
        trace.loops.append(self)
        trace.program.ops = self.body

    def leave(self, cond: list[dict[str, Any]], pred: str) -> None:
        trace = self.trace
        p = trace.program
        if p.ops is not self.body or trace.loops[-1] is not self:
            raise RuntimeError("nrtpy.nki: run-time loops must nest")
        trace.matmul_group = None
        if self.first is not None:
            self.body.append({"op": "full", "in": [], "out": self.first, "value": 0})
            self.outer.append({"op": "full", "in": [], "out": self.first, "value": 1})
        trace.loops.pop()
        p.ops = self.outer
        p.ops.append({"op": "while", "in": [], "cond": cond, "pred": pred,
                      "body": self.body})

    def first_flag(self) -> Traced:
        """A bool scalar, true in the loop's first iteration only."""
        p = self.trace.program
        if self.first is None:
            self.first = p.buffer("temp", (), np.dtype(bool)).name
        return Traced(p, self.first, (), np.dtype(bool))


def first_iteration(trace: _core.Trace) -> Traced:
    """True while every run-time loop being traced is in its first
    iteration (what an instruction in the body has not written yet)."""
    flag: Traced | None = None
    for loop in trace.loops:
        f = loop.first_flag()
        flag = f if flag is None else np.logical_and(flag, f)
    assert flag is not None
    return flag


class RangeLoop:
    """``for i in nl.dynamic_range(start, stop, step)`` with a bound in a
    register: one pass of the Python loop traces the body, with ``i`` a
    frozen register (the loop's counter); the device runs it from
    ``start`` while ``i < stop``, adding ``step`` (stop is read once, on
    entry, as the hardware loop instruction does)."""

    def __init__(self, start: Any, stop: Any, step: int) -> None:
        if not isinstance(step, numbers.Integral) or isinstance(step, bool) \
                or step <= 0:
            raise ValueError(f"dynamic_range: step must be a positive int "
                             f"known when the kernel is traced, not {step!r}")
        self.start = value_dyn(start, "dynamic_range")
        self.stop = value_dyn(stop, "dynamic_range")
        self.step = int(step)
        self.state = 0

    def __iter__(self) -> RangeLoop:
        return self

    def __next__(self) -> VirtualRegister:
        if self.state == 0:
            self.state = 1
            return self._enter()
        if self.state == 1:
            self.state = 2
            self._leave()
        raise StopIteration

    def _enter(self) -> VirtualRegister:
        trace = current()
        p = trace.program
        self.counter = p.buffer("temp", (), I32)
        self.bound = p.buffer("temp", (), I32)
        p.ops.append({"op": "cast", "in": [self.start.value().name],
                      "out": self.counter.name})
        p.ops.append({"op": "cast", "in": [self.stop.value().name],
                      "out": self.bound.name})
        self.stride = p.full(self.step, (), I32)
        self.loop = Loop(trace)
        self.loop.enter()
        return VirtualRegister(trace, self.counter.name, frozen=True)

    def _leave(self) -> None:
        p = self.loop.trace.program
        c = self.counter.name
        p.ops.append({"op": "add", "in": [c, self.stride.name], "out": c})
        go = p.buffer("temp", (), np.dtype(bool))
        self.loop.leave([{"op": "less", "in": [c, self.bound.name],
                          "out": go.name}], go.name)


def run_range(start: Any, stop: Any, step: int, body_fun: Callable[[Any], Any]) -> None:
    for i in RangeLoop(start, stop, step):
        body_fun(i)


def while_loop(init: Any, body_fun: Callable[[VirtualRegister], Any]) -> None:
    """``r = init; while r != 0: r = body_fun(r)`` on the device: the body
    is traced once, with ``r`` a register holding the condition's value."""
    if not callable(body_fun):
        raise TypeError(f"while_loop: body_fun must be callable, not "
                        f"{type(body_fun).__name__}")
    trace = current()
    p = trace.program
    cond = p.buffer("temp", (), I32)
    p.ops.append({"op": "cast", "in": [value_dyn(init, "while_loop").value().name],
                  "out": cond.name})
    loop = Loop(trace)
    loop.enter()
    r = VirtualRegister(trace, p.buffer("temp", (), I32).name)
    r.write(Traced(p, cond.name, (), I32), "while_loop")
    nxt = body_fun(r)
    if not isinstance(nxt, (VirtualRegister, DynInt)) and not (
            isinstance(nxt, numbers.Integral) and not isinstance(nxt, bool)):
        raise TypeError(f"while_loop: body_fun must return the next "
                        f"condition (a register), not {type(nxt).__name__}")
    p.ops.append({"op": "cast", "in": [value_dyn(nxt, "while_loop").value().name],
                  "out": cond.name})
    go = p.buffer("temp", (), np.dtype(bool))
    zero = p.buffer("temp", (), I32)
    loop.outer.append({"op": "full", "in": [], "out": zero.name, "value": 0})
    loop.leave([{"op": "not_equal", "in": [cond.name, zero.name],
                 "out": go.name}], go.name)
