"""The tracer under nrtpy.nki: tensors, views, the trace being recorded.

An NKI kernel runs once per argument signature with :class:`NkiTensor`
objects in place of its arrays.  Every tensor (an HBM argument or output, an
SBUF or PSUM tile) is one buffer of an emulator program
(docs/neff-emulator-format.md) recorded with ``nrtpy.neff``'s ``Program``;
every instruction appends ops to it.  Indexing never computes: a view holds
the flat element indices it selects, worked out with NumPy at trace time
(loops with int bounds unroll, so every index is a constant; a loop the
device runs adds its register's value to them when the ops run, as
``View.dyn`` says: nki/_dynamic.py; a box moved by them is a
``dynamic_slice`` / ``dynamic_update_slice`` with bounds ``"check"``, any
other access a ``take`` / ``scatter``).  Reading a view becomes a
``slice`` (with ``reshape``/``transpose``/``broadcast_to``) when its indices
form a box of the tensor, a ``take`` otherwise; writing one becomes an
``update_slice`` of the tensor's buffer (in place) when they form a box
with its axes in order, a ``scatter`` of constant indices otherwise, or
the op's own ``out`` when the view is the whole tensor.

The compiler's checks (partition axis, capacity per partition, matmul
limits, engines reading HBM) are made here, when the instruction is traced,
and raise :class:`NkiCompileError` naming the instruction, the kernel's
source line and the rule.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
from enum import Enum
from typing import Any, Iterable, Sequence

import numpy as np

from nrtpy import _dtypes
from nrtpy.neff._trace import Program, Traced

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_NEFF_DIR = os.path.join(os.path.dirname(_PACKAGE_DIR), "neff")

PMAX = 128  # partitions of SBUF and PSUM


class NkiCompileError(ValueError):
    """A kernel breaks a rule the Neuron compiler checks (partition axis,
    capacity, matmul limits, an engine reading HBM).

    Raised while tracing, before anything is written, with the instruction,
    the kernel's source file and line, and the rule in the message and as
    attributes.
    """

    def __init__(self, instruction: str, rule: str, filename: str | None,
                 lineno: int | None) -> None:
        self.instruction = instruction
        self.rule = rule
        self.filename = filename
        self.lineno = lineno
        where = f"{filename}:{lineno}: " if filename else ""
        super().__init__(f"{where}{instruction}: {rule}")


def _user_frame() -> tuple[str | None, int | None]:
    """The innermost frame outside nrtpy.nki and nrtpy.neff: the kernel's
    line that issued the instruction."""
    f = sys._getframe(1)
    while f is not None:
        name = os.path.dirname(os.path.abspath(f.f_code.co_filename))
        if not (name.startswith(_PACKAGE_DIR) or name == _NEFF_DIR):
            return f.f_code.co_filename, f.f_lineno
        f = f.f_back
    return None, None


def fail(instruction: str, rule: str) -> NkiCompileError:
    """A compile error for ``instruction`` at the kernel's current line."""
    filename, lineno = _user_frame()
    return NkiCompileError(instruction, rule, filename, lineno)


# -- targets ------------------------------------------------------------------
class Target:
    """What the compiler checks against: a NeuronCore version's SBUF and
    PSUM bytes per partition."""

    def __init__(self, name: str, version: int, sbuf_bytes: int,
                 psum_bytes: int) -> None:
        self.name = name
        self.version = version
        self.sbuf_bytes = sbuf_bytes
        self.psum_bytes = psum_bytes

    def __repr__(self) -> str:
        return f"Target({self.name!r}, NeuronCore-v{self.version})"


_V2 = ("trn1", 2, 192 * 1024, 16 * 1024)
_V3 = ("trn2", 3, 224 * 1024, 16 * 1024)
TARGETS = {"trn1": _V2, "inf2": _V2, "gen2": _V2, "trn2": _V3, "gen3": _V3}


def target(name: str | None = None) -> Target:
    """The target named (``trn1``, ``inf2``, ``trn2``, ``gen2``, ``gen3``),
    else ``NEURON_PLATFORM_TARGET_OVERRIDE``, else the emulator's instance
    profile (``NRTPY_EMU_INSTANCE``, trn1 by default)."""
    if name is None:
        name = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE") or None
    if name is None:
        instance = os.environ.get("NRTPY_EMU_INSTANCE", "trn1.2xlarge")
        name = instance.split(".")[0]
    if not isinstance(name, str):
        raise TypeError(f"platform target must be a str, got {type(name).__name__}")
    key = name.lower()
    if key in ("trn3", "gen4"):
        raise NotImplementedError(f"nrtpy.nki: platform target {name!r} "
                                  f"(NeuronCore-v4) is not implemented")
    if key not in TARGETS:
        raise ValueError(f"unknown platform target {name!r} (known: "
                         f"{', '.join(sorted(TARGETS))})")
    return Target(*TARGETS[key])


# -- memories -----------------------------------------------------------------
class MemoryRegion(Enum):
    """Where a tensor lives."""

    sbuf = "sbuf"
    psum = "psum"
    private_hbm = "private_hbm"
    shared_hbm = "shared_hbm"

    def __repr__(self) -> str:
        return f"nl.{self.value}"


def is_hbm(buffer: Any) -> bool:
    return buffer in (MemoryRegion.private_hbm, MemoryRegion.shared_hbm)


def is_on_chip(buffer: Any) -> bool:
    return buffer in (MemoryRegion.sbuf, MemoryRegion.psum)


# -- the trace ----------------------------------------------------------------
class Trace:
    """One kernel being traced: the program, the target, the SPMD position,
    and the shared HBM tensors that every instance of the grid shares."""

    def __init__(self, tgt: Target, grid: tuple[int, ...]) -> None:
        self.program = Program()
        self.target = tgt
        self.grid = grid
        self.pid: tuple[int, ...] = (0,) * len(grid)
        self.shared: list[NkiTensor] = []
        self.shared_next = 0
        self.index_consts: dict[tuple, Traced] = {}
        self.scalars: dict[tuple, Traced] = {}
        # Buffers that hold a tensor (never handed to a new one).
        self.owned: set[str] = set()
        # The program's indirect gathers: op index -> (elements per row,
        # elements of the tensor), to say an out-of-bounds row as the
        # element index the SDK's simulator reports.
        self.gathers: dict[int, tuple[int, int]] = {}
        # The vector engine's reduce registers (one value per partition)
        # as the last accumulating instruction left them.
        self.reduce_regs: Traced | None = None
        # The nc_matmuls just traced into one PSUM access, traced as one
        # matmul (isa._MatmulGroup), while the next may continue them.
        self.matmul_group: Any = None
        # The first op the instruction being traced emitted, when it took
        # back ops before its own (a matmul group emitted again): its
        # description covers them (nki/_notes.py).
        self.rewound = 0
        # nl.rand's generator: values fixed when the kernel is traced.
        self.rng = np.random.default_rng(0)
        # The run-time loops whose bodies are being traced, outermost
        # first (nki/_dynamic.py).
        self.loops: list[Any] = []

    def setup_ops(self) -> list[dict[str, Any]]:
        """The op list for what must happen once, before any run-time loop
        being traced (zero-filling a tile first read there, copying an
        input first written there): in a loop's body it would happen again
        at every iteration, undoing the previous ones."""
        return self.loops[0].outer if self.loops else self.program.ops

    def scalar(self, value: Any, dtype: np.dtype) -> Traced:
        """A scalar of ``dtype`` holding ``value`` (a Python number), one
        buffer for equal ones in one op list.  It is never written: its
        name is owned, so a tile made of it gets a copy."""
        p = self.program
        key = (type(value).__name__, repr(value), np.dtype(dtype).str, id(p.ops))
        t = self.scalars.get(key)
        if t is None or t.name not in p.buffers:
            t = p.full(value, (), dtype)
            self.owned.add(t.name)
            self.scalars[key] = t
        return t

    def index_const(self, idx: np.ndarray) -> Traced:
        """A constant holding ``idx`` (flat indices), shared by equal ones."""
        key = (idx.shape, idx.dtype.str, hash(idx.tobytes()))
        t = self.index_consts.get(key)
        if t is None:
            t = self.program.const(np.ascontiguousarray(idx))
            self.index_consts[key] = t
        return t


_stack: list[Trace] = []


def current() -> Trace:
    """The trace being recorded; outside a kernel, an error that says so."""
    if not _stack:
        raise RuntimeError("nrtpy.nki: NKI language and ISA calls work only "
                           "inside a kernel called through nki.jit (or "
                           "nki.simulate / simulate_kernel)")
    return _stack[-1]


def tracing() -> bool:
    return bool(_stack)


# -- dtypes -------------------------------------------------------------------
def as_dtype(dtype: Any, what: str = "dtype") -> np.dtype:
    """A NumPy dtype the emulator stores, from a dtype, a type or a name."""
    if isinstance(dtype, str) and dtype in _dtypes.NAMES:
        return _dtypes.to_numpy(dtype)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{what}: {dtype!r} is not a dtype") from None
    if _dtypes.name_of(dt) is None:
        raise TypeError(f"{what}: dtype {dt} is not supported on the emulator")
    return dt


# Floats, 16- and 8-bit included: the dtype table's kind column.
is_float = _dtypes.is_float


def promote(*dts: np.dtype) -> np.dtype:
    """NKI's promotion of two tile dtypes: a float wins over an integer;
    two floats give the wider (fp32 for two different 16- or 8-bit ones);
    integers promote as NumPy's."""
    floats = [d for d in dts if is_float(d)]
    if floats:
        if len(set(floats)) == 1:
            return floats[0]
        return max(floats, key=lambda d: d.itemsize) \
            if any(d.itemsize == 4 for d in floats) else np.dtype(np.float32)
    return np.result_type(*dts)


# -- tensors ------------------------------------------------------------------
class NKIObject:
    """The base class of NKI's objects: tensors and registers."""


class NkiTensor(NKIObject):
    """A tensor of the kernel: an HBM array or an SBUF/PSUM tile.

    It names one buffer of the program; writes change that buffer in place,
    so every view and alias sees them, as on the device.  Arithmetic
    operators are the ``nki.language`` functions (``a + b`` is
    ``nl.add(a, b)``).
    """

    __array_ufunc__ = None  # NumPy defers to our reflected operators

    def __init__(self, trace: Trace, name: str, shape: tuple[int, ...],
                 dtype: np.dtype, buffer: MemoryRegion, *, written: bool,
                 readonly: bool = False, label: str = "") -> None:
        self.trace = trace
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.buffer = buffer
        self.written = written
        self.readonly = readonly
        self.label = label
        trace.owned.add(name)
        # Elements a masked instruction did not compute (None: all were).
        self.valid: np.ndarray | None = None

    # array-like attributes
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __repr__(self) -> str:
        return (f"NkiTensor({self.label or self.name}, shape={self.shape}, "
                f"dtype={_dtypes.name_of(self.dtype)}, buffer={self.buffer.value})")

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        # An HBM tensor is a handle (an argument, an output): true, as any
        # object.  A tile is a value the kernel computes: unknown here.
        if is_hbm(self.buffer):
            return True
        raise TypeError("nrtpy.nki: the value of a tile is not known while "
                        "the kernel is traced (use nl.where or masks, not "
                        "Python if)")

    def __iter__(self):
        raise TypeError("nrtpy.nki: a tensor cannot be iterated while the "
                        "kernel is traced; index it")

    def traced(self) -> Traced:
        """The buffer as the program's value, zero-filled first if nothing
        wrote it yet (the emulator reads no unwritten buffer)."""
        if not self.written:
            self.trace.setup_ops().append(
                {"op": "full", "in": [], "out": self.name, "value": 0})
            self.written = True
        return Traced(self.trace.program, self.name, self.shape, self.dtype)

    def whole(self) -> View:
        return View(self, None, self.shape)

    def __getitem__(self, key: Any) -> View:
        return self.whole()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.whole()[key].assign(value)

    # views (NKI 0.6 NkiTensor methods)
    def ap(self, pattern: Sequence[Sequence[int]], offset: int | None = None,
           scalar_offset: Any = None, vector_offset: Any = None,
           indirect_dim: int = 0, dtype: Any = None) -> View:
        return self.whole().ap(pattern, offset, scalar_offset, vector_offset,
                               indirect_dim, dtype)

    def reshape(self, shape: Sequence[int]) -> View:
        return self.whole().reshape(shape)

    def view(self, dtype: Any) -> View:
        return self.whole().view(dtype)

    def permute(self, dims: Sequence[int]) -> View:
        return self.whole().permute(dims)

    def broadcast(self, dim: int, size: int) -> View:
        return self.whole().broadcast(dim, size)

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> View:
        return self.whole().slice(dim, start, end, step)

    def select(self, dim: int, index: Any) -> View:
        return self.whole().select(dim, index)

    def expand_dim(self, dim: int) -> View:
        return self.whole().expand_dim(dim)

    def squeeze_dim(self, dim: int) -> View:
        return self.whole().squeeze_dim(dim)

    def vector_select(self, dim: int, vector_offset: Any) -> View:
        return self.whole().vector_select(dim, vector_offset)

    def is_contiguous(self) -> bool:
        return True

    def is_indirect(self) -> bool:
        return False

    @property
    def offset(self) -> int:
        return 0

    @property
    def strides(self) -> tuple[int, ...]:
        return _c_strides(self.shape)

    def get_pattern(self) -> list[list[int]]:
        return [[s, n] for s, n in zip(self.strides, self.shape)]

    # operators: nki.language functions
    def _op(self, name: str, *args: Any) -> Any:
        from nrtpy.nki import language
        return getattr(language, name)(*args)

    def __add__(self, o: Any) -> Any: return self._op("add", self, o)
    def __radd__(self, o: Any) -> Any: return self._op("add", o, self)
    def __sub__(self, o: Any) -> Any: return self._op("subtract", self, o)
    def __rsub__(self, o: Any) -> Any: return self._op("subtract", o, self)
    def __mul__(self, o: Any) -> Any: return self._op("multiply", self, o)
    def __rmul__(self, o: Any) -> Any: return self._op("multiply", o, self)
    def __truediv__(self, o: Any) -> Any: return self._op("divide", self, o)
    def __rtruediv__(self, o: Any) -> Any: return self._op("divide", o, self)
    def __pow__(self, o: Any) -> Any: return self._op("power", self, o)
    def __rpow__(self, o: Any) -> Any: return self._op("power", o, self)
    def __mod__(self, o: Any) -> Any: return self._op("mod", self, o)
    def __neg__(self) -> Any: return self._op("negative", self)
    def __abs__(self) -> Any: return self._op("abs", self)
    def __invert__(self) -> Any: return self._op("invert", self)
    def __and__(self, o: Any) -> Any: return self._op("bitwise_and", self, o)
    def __or__(self, o: Any) -> Any: return self._op("bitwise_or", self, o)
    def __xor__(self, o: Any) -> Any: return self._op("bitwise_xor", self, o)
    def __lt__(self, o: Any) -> Any: return self._op("less", self, o)
    def __le__(self, o: Any) -> Any: return self._op("less_equal", self, o)
    def __gt__(self, o: Any) -> Any: return self._op("greater", self, o)
    def __ge__(self, o: Any) -> Any: return self._op("greater_equal", self, o)
    def __eq__(self, o: Any) -> Any: return self._op("equal", self, o)  # type: ignore[override]
    def __ne__(self, o: Any) -> Any: return self._op("not_equal", self, o)  # type: ignore[override]
    __hash__ = object.__hash__

    def _inplace(self, name: str, o: Any) -> NkiTensor:
        self.whole().assign(self._op(name, self, o))
        return self

    def __iadd__(self, o: Any) -> NkiTensor: return self._inplace("add", o)
    def __isub__(self, o: Any) -> NkiTensor: return self._inplace("subtract", o)
    def __imul__(self, o: Any) -> NkiTensor: return self._inplace("multiply", o)
    def __itruediv__(self, o: Any) -> NkiTensor: return self._inplace("divide", o)

    def astype(self, dtype: Any) -> NkiTensor:
        return self.whole().astype(dtype)


def _c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= int(d)
    return tuple(reversed(strides))


class Dynamic:
    """A value known only when the kernel runs (a register, an expression
    of one, index arrays shifted by one: nki/_dynamic.py)."""

    def to_dyn(self) -> Any:
        raise NotImplementedError


class Indirect:
    """A view's run-time part: the row of its partition ``w`` is
    ``offsets[w]`` (an SBUF tile), not ``w``: the access is ``base`` row
    ``offsets[w]``, element ``static[w, ...]`` of that row."""

    def __init__(self, offsets: View, row: int, static: np.ndarray) -> None:
        self.offsets = offsets
        self.row = row  # elements per row of the base tensor
        self.static = static


class View:
    """Elements of a tensor, selected at trace time.

    ``index`` holds the flat index into the tensor of each element of the
    view (shape ``shape``), or None for the whole tensor in its own order.
    Reading a view is the ops that gather those elements; assigning to it
    scatters into the tensor.
    """

    __array_ufunc__ = None

    def __init__(self, tensor: NkiTensor, index: np.ndarray | None,
                 shape: tuple[int, ...], dtype: np.dtype | None = None,
                 indirect: Indirect | None = None) -> None:
        self.tensor = tensor
        self.index = index
        self.shape = tuple(int(d) for d in shape)
        self.dtype = tensor.dtype if dtype is None else np.dtype(dtype)
        self.indirect = indirect
        # Elements whose index arrays point outside the tensor (read clipped,
        # never written): only a mask that leaves them out makes them legal.
        self.oob: np.ndarray | None = None
        # The box of the tensor that ``index`` selects, as _as_box gives it,
        # when the key that made the view said so (None: not known).
        self.box: tuple | None = None
        # Run-time offsets (nki/_dynamic.py), a list of (DynInt r, axis,
        # unit): the access is ``index`` moved by ``r * unit`` elements,
        # ``unit`` the stride of tensor axis ``axis``, within which it must
        # stay (axis -1: on the flat storage, as .ap(scalar_offset=) says,
        # where only the tensor's ends bound it).
        self.dyn: list[tuple[Any, int, int]] | None = None

    def check_oob(self, instruction: str, mask: np.ndarray | None) -> None:
        """Fail unless ``mask`` leaves out every element out of bounds."""
        if self.oob is None:
            return
        bad = self.oob if mask is None else (self.oob & np.broadcast_to(mask, self.shape))
        if bad.any():
            where = tuple(int(i[0]) for i in np.nonzero(bad))
            raise fail(instruction, f"the access reaches outside the tensor of "
                                    f"shape {self.tensor.shape} (at element "
                                    f"{where} of the access) where no mask "
                                    f"leaves it out")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def buffer(self) -> MemoryRegion:
        return self.tensor.buffer

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __repr__(self) -> str:
        return f"View of {self.tensor!r}, shape={self.shape}"

    def __bool__(self) -> bool:
        return self.tensor.__bool__()

    def flat(self) -> np.ndarray:
        """The flat indices of the view (computed for the whole tensor)."""
        if self.indirect is not None or self.dyn is not None:
            raise fail("indexing", "an indirect (run-time offset) view cannot "
                                   "be indexed further")
        if self.index is None:
            return np.arange(self.tensor.size, dtype=np.int64).reshape(self.shape)
        return self.index

    def is_indirect(self) -> bool:
        """Whether the access has a run-time part (rows an index tile
        names, or a register's offset)."""
        return self.indirect is not None or self.dyn is not None

    # -- indexing -------------------------------------------------------------
    def __getitem__(self, key: Any) -> View:
        if not isinstance(key, tuple):
            key = (key,)
        if key and isinstance(key[0], (View, NkiTensor)):
            return self._indirect(key)
        if any(isinstance(k, (View, NkiTensor)) for k in key):
            raise fail("indexing", "a run-time index (a tile) is supported on "
                                   "the first axis only")
        if any(isinstance(k, Dynamic) or (isinstance(k, slice) and (
                isinstance(k.start, Dynamic) or isinstance(k.stop, Dynamic)))
               for k in key):
            return self._dynamic(key)
        key = tuple(_index_part(k) for k in key)
        if self.dtype != self.tensor.dtype:
            raise fail("indexing", "a view of another dtype cannot be indexed")
        if all(k is Ellipsis or (isinstance(k, slice) and k == slice(None))
               for k in key) and sum(k is Ellipsis for k in key) <= 1:
            if len([k for k in key if k is not Ellipsis]) <= self.ndim:
                return self
        if self.index is None and self.dtype == self.tensor.dtype:
            box = _slice_box(self.shape, key)
            if box is not None:
                view = View(self.tensor, _box_index(self.shape, box), tuple(
                    c for c, d in zip(box[2], box[5]) if d))
                view.box = box[:5]
                return view
        try:
            direct = _select(self.shape, key) if self.index is None else None
            if direct is not None:
                sel, oob = direct
            else:
                key, oob = _clip_arrays(key, self.shape)
                sel = np.asarray(self.flat()[key])
        except IndexError as e:
            raise fail("indexing", f"index out of bounds of the tensor of shape "
                                   f"{self.shape}: {e}") from None
        if sel.size == 0:
            raise fail("indexing", f"the access selects no element of the "
                                   f"tensor of shape {self.shape}")
        view = View(self.tensor, sel, sel.shape)
        if oob is not None:
            view.oob = np.broadcast_to(oob, sel.shape)
        return view

    def __setitem__(self, key: Any, value: Any) -> None:
        self[key].assign(value)

    def _indirect(self, key: tuple) -> View:
        """``tensor[idx_tile, i_f]``: the rows that a tile of indices names at
        run time (DMA with a dynamic offset on the first axis)."""
        if self.index is not None or self.indirect is not None or \
                self.dtype != self.tensor.dtype:
            raise fail("indexing", "a run-time index applies to a whole "
                                   "tensor, not to a view of one")
        offsets = as_view(key[0])
        t = self.tensor
        row = int(np.prod(t.shape[1:], dtype=np.int64))
        rest = tuple(_index_part(k) for k in key[1:])
        within = np.arange(row, dtype=np.int64).reshape(t.shape[1:])[rest] \
            if rest else np.arange(row, dtype=np.int64).reshape(t.shape[1:])
        within = np.asarray(within)
        # the index tile's own axes broadcast with the static ones, NumPy's way
        if rest and any(isinstance(k, np.ndarray) for k in rest):
            shape = np.broadcast_shapes(offsets.shape, within.shape)
        else:
            shape = offsets.shape[:1] + within.shape
            within = within.reshape((1,) + within.shape)
        if offsets.size != shape[0]:
            raise fail("indexing", f"the index tile {offsets.shape} must hold "
                                   f"one index per partition of the access "
                                   f"{tuple(shape)}")
        static = np.broadcast_to(within, shape)
        return View(t, None, tuple(shape), indirect=Indirect(offsets, row, static))

    def _dynamic(self, key: tuple) -> View:
        """A key with a run-time part (a register, ``i * 128 +
        nl.arange(128)[:, None]``, ``nl.ds(i * 128, 128)``) on one axis:
        the static view the key gives with that part 0, moved along the
        axis when the ops run."""
        from nrtpy.nki._dynamic import DynArray, DynInt
        if self.index is not None or self.indirect is not None or \
                self.dtype != self.tensor.dtype:
            raise NotImplementedError("nrtpy.nki: a run-time index applies "
                                      "to a whole tensor, not to a view of one")
        if any(k is Ellipsis for k in key):
            i = next(j for j, k in enumerate(key) if k is Ellipsis)
            key = key[:i] + (slice(None),) * (self.ndim - len(key) + 1) + key[i + 1:]
        static, dyn = list(key), []
        for a, k in enumerate(key):
            if isinstance(k, slice) and (isinstance(k.start, Dynamic) or
                                         isinstance(k.stop, Dynamic)):
                if k.stop is None or k.start is None:
                    raise fail("indexing", "a slice with a run-time start needs "
                                           "a stop (nl.ds(start, size))")
                size = k.stop - k.start
                size = size.to_dyn() if isinstance(size, Dynamic) else size
                if isinstance(size, Dynamic):
                    if not size.is_const:
                        raise fail("indexing", "a slice's size must be known "
                                               "when the kernel is traced")
                    size = size.const
                r = k.start.to_dyn() if isinstance(k.start, Dynamic) else \
                    DynInt((), int(k.start))
                part, static[a] = r, slice(0, int(size), k.step)
            elif isinstance(k, DynArray):
                part, static[a] = k.dyn, k.static
            elif isinstance(k, Dynamic):
                part, static[a] = k.to_dyn(), 0
            else:
                continue
            dyn.append((part, a, _c_strides(self.tensor.shape)[a]))
        view = self[tuple(static)]
        out = View(self.tensor, view.flat(), view.shape)
        out.box, out.oob = view.box, view.oob
        out.dyn = dyn
        return out

    def ap(self, pattern: Sequence[Sequence[int]], offset: int | None = None,
           scalar_offset: Any = None, vector_offset: Any = None,
           indirect_dim: int = 0, dtype: Any = None) -> View:
        """The access pattern ``pattern`` ([[step, count], ...] outermost
        first) from element ``offset`` of the tensor's storage."""
        t = self.tensor
        dt = t.dtype if dtype is None else as_dtype(dtype)
        if dt.itemsize != t.dtype.itemsize:
            raise NotImplementedError("nrtpy.nki: .ap(dtype=) of another "
                                      "element size is not implemented")
        try:
            steps = [int(p[0]) for p in pattern]
            counts = [int(p[1]) for p in pattern]
        except (TypeError, IndexError, ValueError):
            raise TypeError(f".ap: pattern must be a list of [step, count] "
                            f"pairs, got {pattern!r}") from None
        off = 0 if offset is None else int(offset)
        idx = np.full(counts, off, dtype=np.int64) if counts else np.array(off)
        for d, (s, n) in enumerate(zip(steps, counts)):
            shape = [1] * len(counts)
            shape[d] = n
            idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(shape)
        if scalar_offset is not None and vector_offset is not None:
            raise ValueError(".ap: give scalar_offset or vector_offset, not both")
        if scalar_offset is not None:
            from nrtpy.nki._dynamic import value_dyn
            if not 0 <= indirect_dim < t.ndim:
                raise ValueError(f".ap: indirect_dim {indirect_dim} is not an "
                                 f"axis of the tensor of shape {t.shape}")
            r = value_dyn(scalar_offset, "ap")
            if idx.size and (idx.min() < 0 or idx.max() >= t.size):
                raise fail("ap", f"access pattern {[list(p) for p in pattern]} "
                                 f"at offset {off} reaches outside the tensor "
                                 f"of {t.size} elements (shape {t.shape})")
            view = View(t, idx, tuple(counts), dt)
            unit = _c_strides(t.shape)[indirect_dim]
            # (on axis 0 the flat storage's ends are the axis's)
            view.dyn = [(r, 0 if indirect_dim == 0 else -1, unit)]
            return view
        if vector_offset is not None:
            if indirect_dim != 0:
                raise NotImplementedError("nrtpy.nki: vector_offset with "
                                          "indirect_dim other than 0")
            row = int(np.prod(t.shape[1:], dtype=np.int64))
            # The step of the indirect dimension is the base tensor's row
            # (the pattern's own is ignored); the rest is static.
            static = idx - (np.arange(counts[0], dtype=np.int64) *
                            steps[0]).reshape([-1] + [1] * (len(counts) - 1))
            offsets = as_view(vector_offset)
            if offsets.shape[0] != counts[0]:
                raise fail("ap", f"vector_offset has {offsets.shape[0]} "
                                 f"partitions, the pattern {counts[0]}")
            return View(t, None, tuple(counts), dt,
                        indirect=Indirect(offsets, row, static))
        if idx.size and (idx.min() < 0 or idx.max() >= t.size):
            raise fail("ap", f"access pattern {[list(p) for p in pattern]} at "
                             f"offset {off} reaches outside the tensor of "
                             f"{t.size} elements (shape {t.shape})")
        return View(t, idx, tuple(counts), dt)

    def reshape(self, shape: Sequence[int]) -> View:
        shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list))
                                       else (shape,)))
        idx = self.flat().reshape(shape)
        return View(self.tensor, idx, idx.shape)

    def permute(self, dims: Sequence[int]) -> View:
        idx = np.transpose(self.flat(), tuple(dims))
        return View(self.tensor, idx, idx.shape)

    def broadcast(self, dim: int, size: int) -> View:
        flat = self.flat()
        shape = list(flat.shape)
        shape[dim] = size
        idx = np.broadcast_to(flat, shape)
        return View(self.tensor, idx, idx.shape)

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> View:
        key: list[Any] = [slice(None)] * self.ndim
        key[dim] = slice(start, end, step)
        return self[tuple(key)]

    def select(self, dim: int, index: Any) -> View:
        if isinstance(index, Dynamic):
            key = [slice(None)] * self.ndim
            key[dim] = index
            return self[tuple(key)]
        if not isinstance(index, numbers.Integral):
            raise NotImplementedError("nrtpy.nki: select with a run-time "
                                      "index is not implemented")
        key: list[Any] = [slice(None)] * self.ndim
        key[dim] = int(index)
        return self[tuple(key)]

    def vector_select(self, dim: int, vector_offset: Any) -> View:
        if dim != 0:
            raise ValueError("vector_select: dim must be 0")
        row = int(np.prod(self.tensor.shape[1:], dtype=np.int64))
        offsets = as_view(vector_offset)
        n = offsets.shape[0]
        static = np.broadcast_to(np.arange(row, dtype=np.int64), (n, row))
        return View(self.tensor, None, (n,) + self.tensor.shape[1:],
                    indirect=Indirect(offsets, row,
                                      static.reshape((n,) + self.tensor.shape[1:])))

    def expand_dim(self, dim: int) -> View:
        idx = np.expand_dims(self.flat(), dim)
        return View(self.tensor, idx, idx.shape)

    def squeeze_dim(self, dim: int) -> View:
        idx = np.squeeze(self.flat(), dim)
        return View(self.tensor, idx, idx.shape)

    def view(self, dtype: Any) -> View:
        dt = as_dtype(dtype)
        if dt.itemsize != self.tensor.dtype.itemsize:
            raise NotImplementedError("nrtpy.nki: .view() to a dtype of "
                                      "another size is not implemented")
        view = View(self.tensor, self.index, self.shape, dt, self.indirect)
        view.dyn = self.dyn
        return view

    def astype(self, dtype: Any) -> NkiTensor:
        from nrtpy.nki import language
        return language.copy(self, dtype=dtype)

    # -- reading and writing ----------------------------------------------------
    def read(self, mask: np.ndarray | None = None) -> Traced:
        """The view's elements as a program value (those out of bounds, which
        ``mask`` must leave out, read as the nearest ones in bounds)."""
        self.check_oob("read", mask)
        t = self.tensor
        p = t.trace.program
        if self.indirect is not None:
            return self._read_indirect()
        base = t.traced()
        if self.dtype != t.dtype:
            base = p.emit("bitcast", [base], t.shape, self.dtype)
        if self.dyn is not None:
            return _read_dynamic(self, base)
        if self.index is None:
            return base if self.shape == t.shape else base.reshape(self.shape)
        if self.box is not None:
            return _read_box(base, *self.box, self.shape)
        if self.size == t.size and _is_identity(self.index):
            # the whole tensor in its own order (a reshape of it)
            return base.reshape(self.shape)
        box = _as_box(self.index, t.shape)
        if box is not None:
            return _read_box(base, *box, self.shape)
        flat = base.reshape(t.size) if t.ndim != 1 else base
        idx = self.index.astype(_index_dtype(t.size))
        return p.emit("take", [flat, t.trace.index_const(idx)], self.shape,
                      self.dtype, axis=0)

    def _read_indirect(self, skip: bool = False) -> Traced:
        """Gather the rows the index tile names (``skip``: rows out of bounds
        read as row 0, for the caller to leave out; else they fail the
        execution with NRT_EXEC_OOB)."""
        ind = self.indirect
        assert ind is not None
        t = self.tensor
        p = t.trace.program
        base = t.traced()
        rows = t.size // ind.row if ind.row else 0
        table = base.reshape(rows, ind.row)
        offs = self.row_indices()
        if skip:
            offs = np.where(self.rows_valid(), offs, 0)
        if not t.trace.loops:  # (the index of an op of the program's list)
            t.trace.gathers[len(p.ops)] = (ind.row, t.size)
        gathered = p.emit("take", [table, offs], (offs.shape[0], ind.row),
                          t.dtype, axis=0)
        n = self.shape[0]
        static = ind.static.reshape(n, -1)
        if static.size and (static.min() < 0 or static.max() >= ind.row):
            raise NotImplementedError("nrtpy.nki: an indirect access whose "
                                      "static part leaves its row")
        idx = (np.arange(n, dtype=np.int64)[:, None] * ind.row + static)
        view = View(_wrap(t.trace, gathered, t.buffer), idx.reshape(self.shape),
                    self.shape)
        return view.read()

    def row_indices(self) -> Traced:
        """The index tile of an indirect view, one int per partition."""
        ind = self.indirect
        assert ind is not None
        offs = ind.offsets.read()
        if offs.dtype.kind not in "iu":
            raise fail("dma_copy", f"the index tile must hold integers, not "
                                   f"{offs.dtype}")
        return offs.reshape(offs.shape[0], -1)[:, 0] if offs.ndim > 1 else offs

    def rows_valid(self) -> Traced:
        """Per partition of an indirect view: whether its row is in bounds."""
        ind = self.indirect
        assert ind is not None
        rows = self.tensor.size // ind.row
        offs = self.row_indices()
        return np.logical_and(np.greater_equal(offs, 0), np.less(offs, rows))

    def read_skipping(self, old: Traced) -> Traced:
        """An indirect read under ``oob_mode.skip``: partitions whose row is
        out of bounds keep ``old`` (the destination's values)."""
        value = self._read_indirect(skip=True)
        valid = self.rows_valid().reshape((self.shape[0],) + (1,) * (self.ndim - 1))
        return np.where(valid, value, old)

    def assign(self, value: Any, mask: np.ndarray | None = None,
               mode: str = "assign", oob_error: bool = False) -> None:
        """Write ``value`` (a tile, view, scalar or array constant) into the
        view, where ``mask`` (and the value's own validity) allow."""
        t = self.tensor
        if self.dtype != t.dtype:
            raise NotImplementedError("nrtpy.nki: writes through a view of "
                                      "another dtype are not implemented")
        p = t.trace.program
        if isinstance(value, NkiTensor) and value.valid is not None:
            valid = np.broadcast_to(value.valid, value.shape)
            mask = valid if mask is None else (mask & valid)
        src = value_of(value, like=t.dtype)
        if src.shape != self.shape:
            try:
                shape = np.broadcast_shapes(src.shape, self.shape)
            except ValueError:
                shape = None
            if shape != self.shape:
                if src.size == self.size:
                    src = src.reshape(self.shape)
                else:
                    raise fail("store", f"a value of shape {src.shape} cannot "
                                        f"be written to an access of shape "
                                        f"{self.shape}")
            else:
                src = p.emit("broadcast_to", [src], self.shape, src.dtype)
        if src.dtype != t.dtype:
            src = p.emit("cast", [src], src.shape, t.dtype)
        if self.indirect is not None:
            _assign_indirect(self, src, mask, mode, oob_error)
            return
        if self.dyn is not None:
            _assign_dynamic(self, src, mask, mode)
            return
        if mode != "assign":
            raise NotImplementedError(f"nrtpy.nki: a write of mode {mode!r} "
                                      f"without a run-time index")
        if t.readonly:
            # An input written by the kernel: its own copy from here on.
            old = t.traced()
            fresh = p.buffer("temp", t.shape, t.dtype)
            t.trace.setup_ops().append({"op": "copy", "in": [old.name],
                                        "out": fresh.name})
            t.name, t.readonly = fresh.name, False
            t.trace.owned.add(fresh.name)
        idx = self.index
        if mask is not None:
            mask = np.broadcast_to(np.asarray(mask, dtype=bool), self.shape)
        self.check_oob("store", mask)
        if mask is not None and mask.all():
            mask = None
        if mask is None and (idx is None or (self.size == t.size and
                                             _is_identity(idx))):
            out = t.name
            rec = {"op": "copy", "in": [src.name], "out": out}
            if src.shape != t.shape:
                rec = {"op": "reshape", "in": [src.name], "out": out}
            p.ops.append(rec)
            t.written = True
            return
        box = self.box if self.box is not None else \
            None if mask is not None or self.oob is not None else _as_box(idx, t.shape)
        if mask is None and box is not None and not box[4]:
            order = [d for d in box[3] if d is not None]
            if order == sorted(order):
                # a box of the tensor, its axes in order: written in place
                start, step, count = box[0], box[1], tuple(box[2])
                upd = src if tuple(src.shape) == count else src.reshape(count)
                base = t.traced()
                p.ops.append({"op": "update_slice", "in": [base.name, upd.name],
                              "out": t.name, "start": start, "step": step})
                return
        flat_idx = self.flat().reshape(-1)
        # (a scatter takes its updates in any shape of as many elements)
        upd = src
        if mask is not None:
            upd = src.reshape(self.size) if src.ndim != 1 else src
            keep = np.flatnonzero(mask.reshape(-1))
            if keep.size == 0:
                return
            flat_idx = flat_idx[keep]
            upd = p.emit("take", [upd, t.trace.index_const(
                keep.astype(_index_dtype(self.size)))], (keep.size,), t.dtype,
                axis=0)
        base = t.traced()
        p.ops.append({"op": "scatter", "in": [base.name, t.trace.index_const(
            flat_idx.astype(_index_dtype(t.size))).name, upd.name],
            "out": t.name, "mode": "assign"})

    def _op(self, name: str, *args: Any) -> Any:
        from nrtpy.nki import language
        return getattr(language, name)(*args)

    def _inplace(self, name: str, o: Any) -> Any:
        # x[i] += y: Python reads x[i], adds, then assigns x[i] = the sum.
        return self._op(name, self, o)

    def __iadd__(self, o: Any) -> Any: return self._inplace("add", o)
    def __isub__(self, o: Any) -> Any: return self._inplace("subtract", o)
    def __imul__(self, o: Any) -> Any: return self._inplace("multiply", o)
    def __itruediv__(self, o: Any) -> Any: return self._inplace("divide", o)


# A view's operators are its tensor's (the nki.language functions).
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
              "__rmul__", "__truediv__", "__rtruediv__", "__pow__", "__rpow__",
              "__mod__", "__neg__", "__abs__", "__invert__", "__and__",
              "__or__", "__xor__", "__lt__", "__le__", "__gt__", "__ge__",
              "__eq__", "__ne__"):
    setattr(View, _name, getattr(NkiTensor, _name))
View.__hash__ = object.__hash__  # type: ignore[method-assign]
del _name


def _assign_indirect(view: View, src: Traced, mask: np.ndarray | None,
                     mode: str, oob_error: bool) -> None:
    """Scatter ``src`` into the rows an index tile names at run time
    (``mode`` "add": add into them).  The emulator's scatter skips indices
    out of bounds (``oob_mode.skip``); with ``oob_error`` the rows are
    first gathered, which fails the execution with NRT_EXEC_OOB when one is
    out of bounds."""
    if mask is not None:
        raise NotImplementedError("nrtpy.nki: a masked write through a "
                                  "run-time index")
    ind = view.indirect
    assert ind is not None
    t = view.tensor
    p = t.trace.program
    n = view.shape[0]
    offs = view.row_indices()
    if oob_error:
        table = t.traced().reshape(t.size // ind.row, ind.row)
        if not t.trace.loops:  # (the index of an op of the program's list)
            t.trace.gathers[len(p.ops)] = (ind.row, t.size)
        p.emit("take", [table, offs], (n, ind.row), t.dtype, axis=0)
    dt = _index_dtype(t.size)
    rows = offs.astype(dt).reshape(n, 1)
    static = p.const(np.ascontiguousarray(ind.static.reshape(n, -1)).astype(dt))
    flat = (rows * ind.row + static).reshape(-1)
    if t.readonly:
        raise NotImplementedError("nrtpy.nki: a write into an argument "
                                  "through a run-time index")
    base = t.traced()
    p.ops.append({"op": "scatter", "in": [base.name, flat.name,
                                          src.reshape(view.size).name],
                  "out": t.name, "mode": mode})


def _dynamic_offset(view: View) -> tuple[Traced, Traced, np.dtype]:
    """A view's run-time offsets, summed: (the offset, int64, in steps
    along the axis of its one part when it has one, else in elements of
    the flat storage; whether the access then leaves an axis or the
    storage; the index dtype).  Callers replace the offset of an access
    out of bounds by one that every index of it exceeds, so that the
    gather reading it fails the execution with NRT_EXEC_OOB (the
    emulator's take also takes negative indices, NumPy's way, which must
    fail here)."""
    t = view.tensor
    idx = view.index if view.index is not None else \
        np.arange(t.size, dtype=np.int64).reshape(view.shape)
    total: Traced | None = None
    bad: Traced | None = None
    parts = view.dyn or []
    for r, axis, unit in parts:
        off = r.value()
        if axis >= 0:
            along = (idx // _c_strides(t.shape)[axis]) % t.shape[axis]
            n = t.shape[axis]
        else:
            along, n = idx, t.size
            off = np.multiply(off, np.int64(unit))
        lo, hi = int(along.min()), int(along.max())
        out = np.logical_or(np.less(off, np.int64(-lo)),
                            np.greater(off, np.int64(n - 1 - hi)))
        bad = out if bad is None else np.logical_or(bad, out)
        if len(parts) > 1 and axis >= 0:
            off = np.multiply(off, np.int64(unit))
        total = off if total is None else np.add(total, off)
    assert total is not None and bad is not None
    return total, bad, _index_dtype(t.size + 1)


def _dynamic_window(view: View) -> tuple | None:
    """For a view with run-time offsets on distinct tensor axes whose static
    part is a box: (the box, as _as_box gives it; the first index and the
    extent of the window that box spans, per tensor axis).  The window
    moved by the offsets is what the emulator's dynamic_slice and
    dynamic_update_slice read and write, and it stays in the tensor
    exactly when every element of the access does.  None otherwise."""
    t = view.tensor
    axes = [axis for _, axis, _ in view.dyn or []]
    if not axes or min(axes) < 0 or len(set(axes)) != len(axes):
        return None
    idx = view.index if view.index is not None else \
        np.arange(t.size, dtype=np.int64).reshape(view.shape)
    box = view.box if view.box is not None else _as_box(idx, t.shape)
    if box is None:
        return None
    start, step, count = box[0], box[1], box[2]
    lo = [s + st * (c - 1) if st < 0 else s for s, st, c in zip(start, step, count)]
    span = [abs(st) * (c - 1) + 1 for st, c in zip(step, count)]
    return box, lo, span


def _window_starts(view: View, lo: list[int]) -> Traced:
    """The first element of a view's window when the ops run: ``lo`` moved
    by each run-time offset along its axis (an int64 vector)."""
    t = view.tensor
    starts = t.trace.index_const(np.array(lo, dtype=np.int64))
    for r, axis, _ in view.dyn or []:
        unit = np.zeros(t.ndim, dtype=np.int64)
        unit[axis] = 1
        starts = np.add(starts, np.multiply(r.value(), t.trace.index_const(unit)))
    return starts


def _read_dynamic(view: View, base: Traced) -> Traced:
    """Read a view with run-time offsets.  One along a tensor axis, the
    rest a box: a slice of the other axes, then a gather of the
    hyperplanes along that axis (an index per element of the axis only);
    otherwise a gather of every element from the flat storage."""
    t = view.tensor
    p = t.trace.program
    window = _dynamic_window(view)
    if window is not None:
        # the window at the moved start (NRT_EXEC_OOB when it leaves the
        # tensor), then the box's steps, order and broadcast within it
        (start, step, count, dims, broadcast), lo, span = window
        win = p.emit("dynamic_slice", [base, _window_starts(view, lo)],
                     tuple(span), base.dtype, bounds="check")
        return _read_box(win, [s - l for s, l in zip(start, lo)], step, count,
                         dims, broadcast, view.shape)
    off, bad, dt = _dynamic_offset(view)
    parts = view.dyn or []
    _, axis, unit = parts[0]
    idx = view.index if view.index is not None else \
        np.arange(t.size, dtype=np.int64).reshape(view.shape)
    box = None
    if len(parts) == 1 and axis >= 0:
        box = view.box if view.box is not None else _as_box(idx, t.shape)
    if box is not None:
        start, step, count, dims, broadcast = box
        full_start, full_step, full_count = list(start), list(step), list(count)
        full_start[axis], full_step[axis], full_count[axis] = 0, 1, t.shape[axis]
        out = base
        if tuple(full_count) != base.shape or any(s != 1 for s in full_step):
            out = p.emit("slice", [base], tuple(full_count), base.dtype,
                         start=full_start, step=full_step)
        along = start[axis] + np.arange(count[axis], dtype=np.int64) * step[axis]
        off = np.where(bad, np.int64(t.shape[axis]), off).astype(dt)
        rows = np.add(t.trace.index_const(along.astype(dt)), off)
        out = p.emit("take", [out, rows], tuple(count), base.dtype, axis=axis)
        n = len(count)
        return _read_box(out, [0] * n, [1] * n, count, dims, broadcast,
                         view.shape)
    flat = base.reshape(t.size) if t.ndim != 1 else base
    if len(parts) == 1 and axis >= 0:
        off = np.multiply(off, np.int64(unit))
    off = np.where(bad, np.int64(t.size), off).astype(dt)
    where = np.add(t.trace.index_const(idx.astype(dt)), off)
    return p.emit("take", [flat, where], view.shape, base.dtype, axis=0)


def _assign_dynamic(view: View, src: Traced, mask: np.ndarray | None,
                    mode: str) -> None:
    """Write through a view with a run-time offset: a scatter at the
    moved indices.  The emulator's scatter skips indices out of bounds, so
    a one-element gather first fails the execution with NRT_EXEC_OOB when
    the access leaves the tensor."""
    if mask is not None and not np.all(mask):
        raise NotImplementedError("nrtpy.nki: a masked write through a "
                                  "run-time offset")
    t = view.tensor
    p = t.trace.program
    if t.readonly:
        old = t.traced()
        fresh = p.buffer("temp", t.shape, t.dtype)
        t.trace.setup_ops().append({"op": "copy", "in": [old.name],
                                    "out": fresh.name})
        t.name, t.readonly = fresh.name, False
        t.trace.owned.add(fresh.name)
    window = _dynamic_window(view) if mode == "assign" else None
    if window is not None:
        (start, step, count, dims, broadcast), lo, span = window
        order = [d for d in dims if d is not None]
        if not broadcast and all(st == 1 for st in step) and order == sorted(order):
            # a window of whole runs: written in place at the moved start,
            # or NRT_EXEC_OOB (before anything is written) when it leaves
            # the tensor
            starts = _window_starts(view, lo)
            upd = src if tuple(src.shape) == tuple(count) else src.reshape(tuple(count))
            base = t.traced()
            p.ops.append({"op": "dynamic_update_slice",
                          "in": [base.name, upd.name, starts.name], "out": t.name,
                          "bounds": "check"})
            return
    off, bad, dt = _dynamic_offset(view)
    parts = view.dyn or []
    _, axis, unit = parts[0]
    base = t.traced()
    flat = base.reshape(t.size) if t.ndim != 1 else base
    probe = np.where(bad, np.int64(t.size), np.int64(0)).astype(dt).reshape(1)
    p.emit("take", [flat, probe], (1,), t.dtype, axis=0)
    if len(parts) == 1 and axis >= 0:
        off = np.multiply(off, np.int64(unit))
    off = off.astype(dt)
    idx = view.index if view.index is not None else \
        np.arange(t.size, dtype=np.int64).reshape(view.shape)
    where = np.add(t.trace.index_const(idx.reshape(-1).astype(dt)), off)
    p.ops.append({"op": "scatter", "in": [base.name, where.name,
                                          src.reshape(view.size).name],
                  "out": t.name, "mode": mode})


def _slice_box(shape: tuple[int, ...], key: tuple) -> tuple | None:
    """For a key of ints and slices only (no more than the tensor's axes),
    the box it selects of a tensor of ``shape``: _as_box's (start, step,
    count per tensor axis, the tensor axis of each view axis, broadcast
    axes) and whether each tensor axis is kept (a slice) or dropped (an
    int).  None for any other key, or one that selects
    nothing or is out of bounds (the general path says why)."""
    if len(key) > len(shape):
        return None
    start, step, count, dims, kept = [], [], [], [], []
    for a, n in enumerate(shape):
        k = key[a] if a < len(key) else slice(None)
        if type(k) is slice:
            r = range(*k.indices(n))
            if not r:
                return None
            start.append(r.start)
            step.append(r.step)
            count.append(len(r))
            dims.append(a if len(r) > 1 else None)
            kept.append(True)
        elif type(k) is int and -n <= k < n:
            start.append(k % n)
            step.append(1)
            count.append(1)
            kept.append(False)
        else:
            return None
    return start, step, count, dims, [], kept


def _box_index(shape: tuple[int, ...], box: tuple) -> np.ndarray:
    """The flat indices of a box from _slice_box, in the view's shape."""
    start, step, count, _, _, kept = box
    flat = np.asarray(sum(s * st for s, st in zip(start, _c_strides(shape))),
                      dtype=np.int64)
    for st, s, c, k in zip(_c_strides(shape), step, count, kept):
        if k:
            flat = np.add.outer(flat, np.arange(c, dtype=np.int64) * (s * st))
    return flat


def _select(shape: tuple[int, ...], key: tuple) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The flat indices that ``key`` selects from a C-order tensor of
    ``shape``, and where index arrays point outside it (None: nowhere),
    computed from the key alone (not from every index of the tensor, which
    for a large HBM tensor costs far more than the view).  Handles basic
    keys (ints, slices) and NKI's index expressions (integer arrays and
    ints, then slices); None for any other form (NumPy's rules then)."""
    if any(k is None for k in key):
        return None
    if any(k is Ellipsis for k in key):
        if sum(k is Ellipsis for k in key) > 1:
            return None
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        return None
    key = key + (slice(None),) * (len(shape) - len(key))
    strides = _c_strides(shape)
    has_array = any(isinstance(k, np.ndarray) for k in key)
    if not has_array:
        # basic indexing: ints drop their axes wherever they are
        order = sorted(range(len(key)), key=lambda i: isinstance(key[i], slice))
        key = tuple(key[i] for i in order)
        shape = tuple(shape[i] for i in order)
        strides = tuple(strides[i] for i in order)
    lead = 0  # the arrays and ints before the first slice
    while lead < len(key) and not isinstance(key[lead], slice):
        lead += 1
    if any(not isinstance(k, slice) for k in key[lead:]):
        return None
    oob: np.ndarray | None = None
    parts: list[np.ndarray] = []  # one per result axis group
    flat_lead: Any = np.int64(0)
    for k, n, st in zip(key[:lead], shape, strides):
        if isinstance(k, np.ndarray):
            k = k.astype(np.int64, copy=False)
            bad = (k < 0) | (k >= n)
            if bad.any():
                oob = bad if oob is None else (oob | bad)
                k = np.clip(k, 0, n - 1)
            flat_lead = flat_lead + k * st
        else:
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis with size {n}")
            flat_lead = flat_lead + (k % n) * st
    lead_shape = np.shape(flat_lead) if has_array else ()
    for k, n, st in zip(key[lead:], shape[lead:], strides[lead:]):
        r = range(*k.indices(n))
        parts.append(np.arange(len(r), dtype=np.int64) * (r.step * st) + (r.start if len(r) else 0) * st)
    ndim = len(lead_shape) + len(parts)
    flat = np.asarray(flat_lead, dtype=np.int64).reshape(lead_shape + (1,) * len(parts))
    for j, part in enumerate(parts):
        shp = [1] * ndim
        shp[len(lead_shape) + j] = part.size
        flat = flat + part.reshape(shp)
    full = lead_shape + tuple(part.size for part in parts)
    flat = np.broadcast_to(flat, full)
    if oob is not None:
        oob = np.broadcast_to(np.broadcast_to(oob, lead_shape).reshape(
            lead_shape + (1,) * len(parts)), full)
    return flat, oob


def _clip_arrays(key: tuple, shape: tuple[int, ...]) -> tuple[tuple, np.ndarray | None]:
    """Index arrays with entries outside their axis, clipped into it, and
    where they were outside (broadcast as the arrays are), or None when all
    are inside.  Only for keys of ints and arrays (NKI's index
    expressions); anything else is left to NumPy's bounds check."""
    if not any(isinstance(k, np.ndarray) for k in key) or \
            any(not isinstance(k, (np.ndarray, int)) for k in key) or len(key) > len(shape):
        return key, None
    oob: np.ndarray | None = None
    out = []
    for k, dim in zip(key, shape):
        if isinstance(k, np.ndarray):
            bad = (k < 0) | (k >= dim)
            if bad.any():
                oob = bad if oob is None else (oob | bad)
                k = np.clip(k, 0, dim - 1)
        out.append(k)
    return tuple(out), oob


def _index_part(k: Any) -> Any:
    """One component of an index: ints, slices and ``...`` as NumPy's;
    index expressions (``nl.arange``, ``nl.mgrid``: integer arrays) as
    integer arrays."""
    if isinstance(k, (slice, type(Ellipsis))) or k is None:
        return k
    if isinstance(k, (bool, np.bool_)):
        raise TypeError("a bool is not an index")
    if isinstance(k, numbers.Integral):
        return int(k)
    if isinstance(k, np.ndarray):
        if k.dtype.kind not in "iu":
            raise TypeError(f"index arrays must be integers, not {k.dtype}")
        return k
    if isinstance(k, (list, tuple)):
        return np.asarray(k, dtype=np.int64)
    if hasattr(k, "__index_array__"):
        return k.__index_array__()
    raise TypeError(f"unsupported index {k!r:.80}")


def _index_dtype(n: int) -> np.dtype:
    return np.dtype(np.int32) if n < 2**31 else np.dtype(np.int64)


def _is_identity(idx: np.ndarray) -> bool:
    flat = idx.reshape(-1)
    return bool(flat[0] == 0 and (flat.size == 1 or
                                  np.all(np.diff(flat) == 1)))


def _as_box(idx: np.ndarray, shape: tuple[int, ...]):
    """When ``idx`` (flat indices into a tensor of ``shape``) selects a box
    of it, the slice that reads it: (start, step, count per tensor dim, the
    tensor dim of each view axis or None for a size-1 or broadcast axis,
    the broadcast axes).  None otherwise."""
    if idx.ndim == 0:
        idx = idx.reshape(1)
    base = int(idx.flat[0])
    strides: list[int] = []
    for a in range(idx.ndim):
        if idx.shape[a] > 1:
            sel = [0] * idx.ndim
            sel[a] = 1
            strides.append(int(idx[tuple(sel)]) - base)
        else:
            strides.append(0)
    # affine?
    expect = np.full(idx.shape, base, dtype=np.int64)
    for a, s in enumerate(strides):
        if s:
            shp = [1] * idx.ndim
            shp[a] = idx.shape[a]
            expect = expect + (np.arange(idx.shape[a], dtype=np.int64) * s).reshape(shp)
    if not np.array_equal(expect, idx):
        return None
    tstrides = _c_strides(shape)
    start = list(np.unravel_index(base, shape)) if shape else []
    start = [int(s) for s in start]
    step = [1] * len(shape)
    count = [1] * len(shape)
    dims: list[int | None] = []
    used: set[int] = set()
    for a, s in enumerate(strides):
        n = idx.shape[a]
        if n == 1 or s == 0:
            dims.append(None)
            continue
        found = None
        for k in range(len(shape)):
            if k in used or s % tstrides[k]:
                continue
            st = s // tstrides[k]
            # (a stride that is a multiple of a larger dim's stride belongs there)
            if st and abs(st) * (n - 1) + 0 < shape[k] * 1 and \
                    0 <= start[k] + st * (n - 1) < shape[k]:
                found = (k, st)
                break
        if found is None:
            return None
        k, st = found
        used.add(k)
        step[k] = st
        count[k] = n
        dims.append(k)
    broadcast = [a for a, s in enumerate(strides) if s == 0 and idx.shape[a] > 1]
    return start, step, count, dims, broadcast


def _read_box(base: Traced, start: list[int], step: list[int],
              count: list[int], dims: list[int | None], broadcast: list[int],
              shape: tuple[int, ...]) -> Traced:
    p = base.program
    out = base
    if any(c != d or st != 1 for c, d, st in zip(count, base.shape, step)):
        out = p.emit("slice", [base], tuple(count), base.dtype, start=start,
                     step=step)
    # the mapped tensor dims, in the order of the view's axes
    order = [k for k in dims if k is not None]
    ranks = sorted(order)
    perm = [ranks.index(k) for k in order]
    if perm != sorted(perm):
        kept = tuple(count[k] for k in ranks)
        if tuple(out.shape) != kept:
            out = out.reshape(kept) if kept else out.reshape(())
        out = out.transpose(perm)
    pre = tuple(1 if d is None else shape[a] for a, d in enumerate(dims))
    if tuple(out.shape) != pre:
        out = out.reshape(pre)
    if broadcast:
        out = p.emit("broadcast_to", [out], shape, out.dtype)
    return out


def _wrap(trace: Trace, value: Traced, buffer: MemoryRegion) -> NkiTensor:
    """A new tensor holding ``value``: its buffer, unless that is already
    another tensor's (a whole tensor read), then a copy."""
    if value.name in trace.owned:
        value = trace.program.emit("copy", [value], value.shape, value.dtype)
    return NkiTensor(trace, value.name, value.shape, value.dtype, buffer,
                     written=True)


def new_tile(value: Traced, buffer: MemoryRegion = MemoryRegion.sbuf,
             instruction: str = "", valid: np.ndarray | None = None) -> NkiTensor:
    """A new on-chip tile holding ``value`` (checked against the target)."""
    trace = current()
    if is_on_chip(buffer):
        check_tile(instruction, value.shape, value.dtype, buffer)
    t = _wrap(trace, value, buffer)
    t.valid = valid
    return t


def check_tile(instruction: str, shape: tuple[int, ...], dtype: np.dtype,
               buffer: MemoryRegion, partition_axis: int = 0) -> None:
    """The compiler's rules for an on-chip tile: at most 128 partitions, at
    most the memory's bytes per partition (axes before ``partition_axis``,
    the older namespace's blocks, are tiles side by side)."""
    trace = current()
    if not shape:
        return
    if shape[partition_axis] > PMAX:
        raise fail(instruction, f"a tile in {buffer.value.upper()} has "
                                f"{shape[partition_axis]} partitions (axis "
                                f"{partition_axis}); at most {PMAX} "
                                f"(nl.tile_size.pmax)")
    rest = shape[:partition_axis] + shape[partition_axis + 1:]
    per = math.prod(rest) * np.dtype(dtype).itemsize
    cap = trace.target.sbuf_bytes if buffer is MemoryRegion.sbuf \
        else trace.target.psum_bytes
    if per > cap:
        raise fail(instruction, f"a tile of shape {tuple(shape)} "
                                f"({_dtypes.name_of(np.dtype(dtype))}) takes "
                                f"{per} bytes per partition in "
                                f"{buffer.value.upper()}; "
                                f"{trace.target.name} has {cap}")


def as_view(x: Any) -> View:
    if isinstance(x, View):
        return x
    if isinstance(x, NkiTensor):
        return x.whole()
    raise TypeError(f"expected an NKI tensor or an access of one, got "
                    f"{type(x).__name__}")


def value_of(x: Any, like: np.dtype | None = None,
             mask: np.ndarray | None = None) -> Traced:
    """The program value of an operand: a tensor, a view (its elements out
    of bounds left out by ``mask``), a Python scalar (of ``like``'s dtype),
    or an array constant (an index expression)."""
    if isinstance(x, NkiTensor):
        return x.traced()
    if isinstance(x, View):
        return x.read(mask)
    trace = current()
    if isinstance(x, Traced) and x.program is trace.program:
        return x
    if isinstance(x, np.ndarray):
        return trace.program.const(x)
    if isinstance(x, (bool, np.bool_, numbers.Number, np.generic)):
        dt = like if like is not None else np.asarray(x).dtype
        return trace.scalar(x if not isinstance(x, np.generic) else x.item(), dt)
    raise TypeError(f"expected an NKI tensor, an access of one or a number, "
                    f"got {type(x).__name__}")


def memory_of(x: Any) -> MemoryRegion | None:
    if isinstance(x, NkiTensor):
        return x.buffer
    if isinstance(x, View):
        return x.tensor.buffer
    return None


def require_on_chip(instruction: str, *operands: Any) -> None:
    """Compute engines read SBUF and PSUM only."""
    for x in operands:
        m = memory_of(x)
        if m is not None and is_hbm(m):
            raise fail(instruction, "an operand is in HBM; compute engines "
                                    "(vector, scalar, gpsimd, tensor) read "
                                    "only SBUF and PSUM: load it into a tile "
                                    "first (nl.load / nisa.dma_copy)")


def shape_of(x: Any) -> tuple[int, ...]:
    if isinstance(x, (NkiTensor, View)):
        return x.shape
    return np.shape(x)


def dtype_of(x: Any) -> np.dtype | None:
    if isinstance(x, (NkiTensor, View)):
        return x.dtype
    if isinstance(x, np.ndarray):
        return x.dtype
    return None


def operands_dtype(*xs: Any) -> np.dtype:
    """The promoted dtype of the operands; Python scalars are weak (an int
    takes the tile's type, a float makes integers float32)."""
    dts = [d for d in (dtype_of(x) for x in xs) if d is not None]
    if not dts:
        return np.dtype(np.float32) if any(isinstance(x, float) for x in xs) \
            else np.dtype(np.int32)
    dt = promote(*dts)
    if not is_float(dt) and any(isinstance(x, (float, np.floating)) for x in xs):
        return np.dtype(np.float32)
    return dt


def iter_shared(trace: Trace) -> Iterable[NkiTensor]:
    return iter(trace.shared)
