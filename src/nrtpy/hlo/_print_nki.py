"""An HLO module printed as NKI source: ``nrtpy-cc --print-nki``.

neuronx-cc's tensorizer prints the module it compiles as an NKI kernel
(``--tensorizer-options=--print-nki``, which nkipy's ``lower_to_nki``
reads back as ``nki.py``).  ``print_nki`` writes such a kernel for a subset
of HLO, in the current NKI namespace (``import nki``), from the parsed
module (``_module``), never from the emulator program: the kernel is the
module's computation written with NKI's tiles, which runs on Trainium's
NKI as on ``nrtpy.nki``.

The plan, in the entry computation's order (operands first):

- **Element-wise groups.**  Consecutive element-wise instructions of one
  shape (unary, binary, compare, select, clamp, convert, copy, and the
  broadcasts that load a row, a column or a scalar) become one loop nest
  over the shape flattened to [rows, columns] (rows: the product of every
  dimension but the last): tiles of at most 128 rows (the partitions) and
  512 columns.  Each tile loads its operands, computes every instruction of
  the group, and stores the values used elsewhere.
- **Stages.**  A dot (one contracting dimension, leading batch dimensions)
  is tiled for the tensor engine (K and M by 128, N by 512, accumulated in
  PSUM); a reduce over trailing dimensions (add, multiply, maximum, minimum)
  reduces each row tile along its free axis, across column tiles; a
  transpose, or a broadcast that is not a row, column or scalar, copies
  with a strided access pattern (``.ap``), looping over the leading
  dimensions of the result.
- **Views.**  A reshape (or a same-type bitcast) moves no data in
  row-major HBM: it names its operand's HBM tensor, which every access
  reshapes to the form it needs.
- **Storage.**  Parameters are the kernel's arguments; the results are
  ``nl.shared_hbm`` tensors it returns; a value read by a later step is an
  ``nl.hbm`` tensor; a scalar constant (or one whose elements are all
  equal) is a number in the code, another constant an
  ``nl.shared_constant``.  A 0-d tensor is shape (1,), as in the NEFF.

An instruction outside the subset is a ``NkiPrintError`` naming it; nothing
is printed then.
"""

from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from nrtpy.hlo._module import Computation, Instruction, Module, parse_module

# Tile limits: a tile spans at most 128 partitions; 512 float32 columns
# are one PSUM bank (the tensor engine's moving free size) and keep the
# SBUF a group's tiles use small.
PARTITIONS = 128
FREE = 512
# A strided copy (transpose, general broadcast) loops in Python over the
# result's leading dimensions; beyond this many iterations the kernel
# would take too long to trace, so the module is refused.
MAX_STRIDED_ITERATIONS = 4096
# Constants that are not one value repeated are printed into the source.
MAX_CONSTANT_ELEMENTS = 4096


class NkiPrintError(NotImplementedError):
    """The module has an instruction outside the subset that prints as
    NKI (the message names it)."""


# HLO element type -> the nki.language dtype.  NKI has no 64-bit types.
_NL_DTYPES = {
    "pred": "nl.bool_", "s8": "nl.int8", "s16": "nl.int16", "s32": "nl.int32",
    "u8": "nl.uint8", "u16": "nl.uint16", "u32": "nl.uint32",
    "f16": "nl.float16", "bf16": "nl.bfloat16", "f32": "nl.float32",
    "f8e5m2": "nl.float8_e5m2", "f8e4m3fn": "nl.float8_e4m3fn",
    "f8e4m3": "nl.float8_e4m3",
}
# The same dtypes for NumPy arrays in the source (a constant's values are
# written in a type NumPy has, then given the NKI dtype).
_NP_VALUES = {"pred": "np.bool_", "s8": "np.int8", "s16": "np.int16",
              "s32": "np.int32", "u8": "np.uint8", "u16": "np.uint16",
              "u32": "np.uint32"}

_UNARY = {
    "abs": "nl.abs", "negate": "nl.negative", "exponential": "nl.exp",
    "log": "nl.log", "sqrt": "nl.sqrt", "rsqrt": "nl.rsqrt", "tanh": "nl.tanh",
    "logistic": "nl.sigmoid", "sine": "nl.sin", "cosine": "nl.cos",
    "tan": "nl.tan", "floor": "nl.floor", "ceil": "nl.ceil", "sign": "nl.sign",
    "erf": "nl.erf", "copy": "nl.copy", "convert": "nl.copy",
}
_BINARY = {
    "add": "nl.add", "subtract": "nl.subtract", "multiply": "nl.multiply",
    "divide": "nl.divide", "maximum": "nl.maximum", "minimum": "nl.minimum",
    "power": "nl.power", "remainder": "nl.fmod",
}
# and/or/xor/not: logical on pred, bitwise on integers.
_LOGICAL = {"and": "nl.logical_and", "or": "nl.logical_or",
            "xor": "nl.logical_xor", "not": "nl.logical_not"}
_BITWISE = {"and": "nl.bitwise_and", "or": "nl.bitwise_or",
            "xor": "nl.bitwise_xor", "not": "nl.invert"}
_COMPARE = {"EQ": "nl.equal", "NE": "nl.not_equal", "LT": "nl.less",
            "LE": "nl.less_equal", "GT": "nl.greater", "GE": "nl.greater_equal"}
# A reduce's combiner -> (the free-axis reduction, the element-wise op that
# joins partial results, a test of whether the init value changes nothing).
_REDUCTIONS = {
    "add": ("nl.sum", "nl.add", lambda v: v == 0),
    "multiply": ("nl.prod", "nl.multiply", lambda v: v == 1),
    "maximum": ("nl.max", "nl.maximum",
                lambda v: v == -math.inf or (isinstance(v, int) and v <= -2**31)),
    "minimum": ("nl.min", "nl.minimum",
                lambda v: v == math.inf or (isinstance(v, int) and v >= 2**31 - 1)),
}
# The float types the tensor engine multiplies (NKI has no float64).
_FLOATS = {"f16", "bf16", "f32", "f8e5m2", "f8e4m3fn", "f8e4m3"}
_ELEMENTWISE = set(_UNARY) | set(_BINARY) | set(_LOGICAL) | {
    "compare", "select", "clamp", "broadcast"}
_VIEWS = {"reshape", "bitcast"}
_STAGES = {"dot", "reduce", "transpose"}
_SUBSET = ("element-wise unary, binary, compare, select, clamp, convert, "
           "constants, iota, broadcast, reduce over trailing dimensions, dot, "
           "reshape, transpose, call")


def _refuse(ins: Instruction, why: str) -> NkiPrintError:
    return NkiPrintError(f"{ins.where()}: {why} (what prints as NKI: "
                         f"{_SUBSET})")


def _dims(ins: Instruction) -> tuple[int, ...]:
    """The shape the kernel gives the value: a 0-d tensor is (1,), as in
    the NEFF."""
    return ins.shape.dims or (1,)


def _prod(dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _rows_cols(dims: tuple[int, ...]) -> tuple[int, int]:
    """A shape flattened to [rows, columns]: the last dimension is the
    columns, every other one is folded into the rows."""
    return _prod(dims[:-1]), dims[-1]


def _label(name: str) -> str:
    """An HLO name as it may appear in a comment or the docstring: names
    are the module's text, so anything but letters, digits, '_', '.' and
    '-' (a newline, quotes) is replaced, and cannot change the code."""
    return re.sub(r"[^0-9A-Za-z_.\-]", "_", name)


def _literal(value: Any) -> str:
    """A number as Python source."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    v = float(value)
    if math.isnan(v):
        return "float('nan')"
    if math.isinf(v):
        return "float('inf')" if v > 0 else "float('-inf')"
    return repr(v)


def _python_number(ins: Instruction) -> Any:
    """The one value of a constant whose elements are all equal, as a
    Python number; None when they differ."""
    values = ins.literal.value if ins.literal is not None else None
    if values is None or values.size == 0:
        return None
    flat = np.asarray(values).reshape(-1)
    first = flat[0]
    same = np.array_equal(flat, np.full_like(flat, first), equal_nan=flat.dtype.kind == "f")
    if not same:
        return None
    if flat.dtype.kind == "b":
        return bool(first)
    if flat.dtype.kind in "iu":
        return int(first)
    return float(first)


class _Names:
    """Python identifiers for the kernel, each given once."""

    def __init__(self) -> None:
        self.used = {"nki", "nl", "nisa", "np", "kernel", "min", "range",
                     "float", "True", "False", "None"}

    def new(self, hint: str) -> str:
        base = re.sub(r"[^0-9A-Za-z_]", "_", hint).strip("_") or "v"
        if base[0].isdigit():
            base = "v_" + base
        if keyword.iskeyword(base):
            base += "_"
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name


@dataclass
class _Tiling:
    """One axis of a loop nest: ``extent`` elements in tiles of ``tile``."""

    extent: int
    tile: int
    var: str  # the loop's start variable
    size_var: str  # the tile's size variable, when it varies

    @property
    def loops(self) -> bool:
        return self.extent > self.tile

    @property
    def ragged(self) -> bool:
        return self.loops and self.extent % self.tile != 0

    @property
    def size(self) -> str:
        """The tile's size, as code."""
        if not self.loops:
            return str(self.extent)
        return self.size_var if self.ragged else str(self.tile)

    @property
    def span(self) -> str:
        """The tile's slice, as code."""
        if not self.loops:
            return f"0:{self.extent}"
        return f"{self.var}:{self.var} + {self.size}"

    def open(self, out: "_Writer") -> None:
        if not self.loops:
            return
        out.line(f"for {self.var} in nl.static_range(0, {self.extent}, {self.tile}):")
        out.indent += 1
        if self.ragged:
            out.line(f"{self.size_var} = min({self.tile}, {self.extent} - {self.var})")


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 1

    def line(self, text: str = "") -> None:
        self.lines.append(("    " * self.indent + text) if text else "")


@dataclass
class _Group:
    """Consecutive element-wise instructions of one shape."""

    dims: tuple[int, ...]
    members: list[Instruction] = field(default_factory=list)


@dataclass
class _Stage:
    ins: Instruction


def _inline_calls(module: Module) -> Computation:
    """The entry computation with every ``call`` replaced by the called
    computation's instructions (JAX wraps ``where``, ``clip`` and others in
    calls); each instruction keeps its name and its computation's name, for
    messages."""
    entry = module.entry
    if not any(i.opcode == "call" for c in module.computations.values()
               for i in c.instructions):
        return entry
    instructions: list[Instruction] = []
    by_id: dict[int, Instruction] = {}

    def inline(comp: Computation, arguments: tuple[int, ...]) -> int:
        new_ids: dict[int, int] = {}
        for ins in comp.instructions:
            if ins.opcode == "parameter" and comp is not entry:
                new_ids[ins.id] = arguments[ins.parameter_number]
                continue
            operands = tuple(new_ids[o] for o in ins.operand_ids)
            if ins.opcode == "call" and len(ins.called_computation_ids) == 1:
                new_ids[ins.id] = inline(module.computation(ins.called_computation_ids[0]),
                                         operands)
                continue
            copy = replace(ins, id=len(instructions), operand_ids=operands)
            instructions.append(copy)
            by_id[copy.id] = copy
            new_ids[ins.id] = copy.id
        return new_ids[comp.root_id]

    root = inline(entry, ())
    return Computation(entry.name, entry.id, instructions, root, by_id)


def _live(comp: Computation) -> Computation:
    """``comp`` without the instructions its root does not depend on (they
    would print code whose values nothing reads); parameters stay, as the
    kernel's arguments."""
    live = {comp.root_id}
    for ins in reversed(comp.instructions):  # users come after operands
        if ins.id in live:
            live.update(ins.operand_ids)
    kept = [i for i in comp.instructions if i.id in live or i.opcode == "parameter"]
    return Computation(comp.name, comp.id, kept, comp.root_id,
                       {i.id: i for i in kept})


class _Printer:
    def __init__(self, module: Module, kernel_name: str) -> None:
        self.module = module
        self.entry: Computation = _live(_inline_calls(module))
        self.kernel_name = kernel_name
        self.names = _Names()
        self.names.used.add(kernel_name)
        self.out = _Writer()
        # instruction id -> the HBM tensor (an expression) holding its value
        self.storage: dict[int, str] = {}
        # instruction id -> its number, for constants printed as numbers
        self.numbers: dict[int, Any] = {}
        self.group_of: dict[int, int] = {}
        self.uses_numpy = False
        self.loop_names: dict[str, str] = {}

    def loop_var(self, name: str) -> str:
        """The kernel's name for the loop variable ``name`` (given after the
        arguments' names, so that it never hides one)."""
        if name not in self.loop_names:
            self.loop_names[name] = self.names.new(name)
        return self.loop_names[name]

    # -- checks ---------------------------------------------------------------
    def operand(self, ins: Instruction, k: int = 0) -> Instruction:
        return self.entry.by_id[ins.operand_ids[k]]

    def nl_dtype(self, ins: Instruction) -> str:
        name = ins.shape.type_name
        if name not in _NL_DTYPES:
            raise _refuse(ins, f"element type {name} has no NKI dtype")
        return _NL_DTYPES[name]

    def outputs(self) -> list[Instruction]:
        root = self.entry.root
        if root.opcode != "tuple":
            return [root]
        leaves = [self.operand(root, k) for k in range(len(root.operand_ids))]
        for leaf in leaves:
            if leaf.shape.is_tuple:
                raise _refuse(leaf, "a nested tuple result")
        return leaves

    def check(self, ins: Instruction) -> None:
        """Refuse what does not print; every instruction passes here first,
        so that nothing is printed for a module with one it cannot."""
        op = ins.opcode
        if op == "tuple" and ins.id == self.entry.root_id:
            return
        if op == "reduce" and len(ins.operand_ids) != 2:
            raise _refuse(ins, f"a reduce of {len(ins.operand_ids) // 2} operands "
                               f"(argmax, argmin: one operand and one init value "
                               f"print)")
        if not ins.shape.is_array or ins.shape.is_tuple:
            raise _refuse(ins, f"{op} of a tuple or token")
        self.nl_dtype(ins)
        if 0 in ins.shape.dims:
            raise _refuse(ins, f"shape {ins.shape} has no elements")
        for oid in ins.operand_ids:
            self.nl_dtype(self.entry.by_id[oid])
        if op == "parameter":
            return
        if op == "iota":
            if ins.shape.dtype.kind == "b":
                raise _refuse(ins, "an iota of pred")
            return
        if op == "constant":
            if self.numbers.get(ins.id) is None and ins.shape.size > MAX_CONSTANT_ELEMENTS:
                raise _refuse(ins, f"a constant of {ins.shape.size} different values "
                                   f"(at most {MAX_CONSTANT_ELEMENTS} are printed)")
            return
        if op in _LOGICAL:
            if ins.shape.dtype.kind not in "biu":
                raise _refuse(ins, f"{op} of {ins.shape.type_name}")
            return
        if op in _UNARY or op in _BINARY or op in ("compare", "select", "clamp"):
            if op == "compare" and ins.comparison_direction not in _COMPARE:
                raise _refuse(ins, f"comparison {ins.comparison_direction!r}")
            if op == "divide" and ins.shape.dtype.kind in "iu":
                raise _refuse(ins, "integer divide (NKI's divide is a float "
                                   "division, XLA's truncates)")
            if op in ("remainder", "power") and ins.shape.dtype.kind in "iu":
                raise _refuse(ins, f"integer {op}")
            return
        if op == "broadcast":
            return
        if op in _VIEWS:
            src = self.operand(ins)
            if src.shape.element_type != ins.shape.element_type:
                raise _refuse(ins, "a bitcast that changes the element type")
            return
        if op == "transpose":
            return
        if op == "reduce":
            self.check_reduce(ins)
            return
        if op == "dot":
            self.dot_plan(ins)
            return
        raise _refuse(ins, f"opcode {op!r} is outside the subset")

    def check_reduce(self, ins: Instruction) -> tuple[str, str, Any]:
        src, init = self.operand(ins, 0), self.operand(ins, 1)
        rank = len(src.shape.dims)
        dims = sorted(ins.dimensions)
        if rank and dims != list(range(rank - len(dims), rank)):
            raise _refuse(ins, f"a reduce over dimensions {tuple(ins.dimensions)} "
                               f"of a rank-{rank} operand (only trailing "
                               f"dimensions print)")
        comp = self.module.computation(ins.called_computation_ids[0])
        root = comp.root
        params = {p.id for p in comp.parameters}
        if root.opcode not in _REDUCTIONS or len(comp.parameters) != 2 or \
                set(root.operand_ids) != params or len(root.operand_ids) != 2:
            raise _refuse(ins, f"a reduce whose computation {comp.name!r} is not "
                               f"one add, multiply, maximum or minimum of its "
                               f"two parameters")
        if src.shape.dtype.kind == "b":
            raise _refuse(ins, "a reduce of pred")
        if init.opcode != "constant" or self.numbers.get(init.id) is None:
            raise _refuse(ins, "a reduce whose init value is not a constant")
        reduction, join, is_identity = _REDUCTIONS[root.opcode]
        value = self.numbers[init.id]
        return reduction, join, (None if is_identity(value) else value)

    def dot_plan(self, ins: Instruction) -> dict[str, Any]:
        """How a dot tiles: which axis of each operand is contracted, the
        batch count, M, K, N."""
        lhs, rhs = self.operand(ins, 0), self.operand(ins, 1)
        lc, rc, lb, rb = ins.dot_dimension_numbers
        nb = len(lb)
        if len(lc) != 1 or len(rc) != 1:
            raise _refuse(ins, f"a dot contracting {len(lc)} dimensions (one prints)")
        if list(lb) != list(range(nb)) or list(rb) != list(range(nb)):
            raise _refuse(ins, "a dot whose batch dimensions are not the leading ones")
        lr, rr = len(lhs.shape.dims), len(rhs.shape.dims)
        if lr not in (nb + 1, nb + 2) or rr not in (nb + 1, nb + 2):
            raise _refuse(ins, "a dot with more than one free dimension per operand")
        for o in (lhs, rhs):
            if o.shape.type_name not in _FLOATS:
                raise _refuse(ins, f"a dot of {o.shape.type_name} (the tensor engine "
                                   f"multiplies floats)")
        if (lhs.shape.type_name == "f32") != (rhs.shape.type_name == "f32"):
            raise _refuse(ins, f"a dot of {lhs.shape.type_name} by "
                               f"{rhs.shape.type_name} (the tensor engine takes "
                               f"float32 only with float32)")
        ld, rd = lhs.shape.dims, rhs.shape.dims
        batch = _prod(ld[:nb])
        k = ld[lc[0]]
        m = ld[nb] if lr == nb + 2 and lc[0] == nb + 1 else (
            ld[nb + 1] if lr == nb + 2 else 1)
        n = rd[nb + 1] if rr == nb + 2 and rc[0] == nb else (
            rd[nb] if rr == nb + 2 else 1)
        return {"nb": nb, "batch": batch, "m": m, "k": k, "n": n,
                # lhs [M, K] in HBM needs a transposed load for the
                # stationary [K, M]; rhs [N, K] one for the moving [K, N].
                "lhs_km": lr == nb + 1 or lc[0] == nb,
                "rhs_kn": rr == nb + 1 or rc[0] == nb}

    def is_view(self, ins: Instruction) -> bool:
        """Whether ``ins`` has its operand's elements in the same row-major
        order (a reshape, a same-type bitcast, a broadcast or transpose that
        only adds or moves dimensions of size 1): it names the operand's HBM
        tensor instead of copying it."""
        if ins.opcode in _VIEWS:
            return True
        if ins.opcode in ("broadcast", "transpose"):
            src = self.operand(ins)
            if src.shape.size != ins.shape.size:
                return False
            if ins.opcode == "broadcast":
                return list(ins.dimensions) == sorted(ins.dimensions)
            moved = [d for d in ins.dimensions if src.shape.dims[d] != 1]
            return moved == sorted(moved)
        return False

    # -- planning -------------------------------------------------------------
    def plan(self) -> list[Any]:
        steps: list[Any] = []
        for ins in self.entry.instructions:
            op = ins.opcode
            if op in ("parameter", "constant", "iota", "tuple") or self.is_view(ins):
                continue
            if op == "broadcast" and not self.broadcast_loads(ins):
                steps.append(_Stage(ins))
                continue
            if op in _ELEMENTWISE:
                last = steps[-1] if steps else None
                if not (isinstance(last, _Group) and last.dims == _dims(ins)):
                    last = _Group(_dims(ins))
                    steps.append(last)
                last.members.append(ins)
                self.group_of[ins.id] = id(last)
                continue
            steps.append(_Stage(ins))
        return steps

    def broadcast_loads(self, ins: Instruction) -> str | None:
        """How a group reads a broadcast's operand: 'number' (a constant
        of one value), 'scalar' (one element), 'same' (the same elements),
        'row' (the last dimension), 'column' (every dimension but the
        last); None: a strided copy."""
        src = self.operand(ins)
        if src.opcode == "constant" and self.numbers.get(src.id) is not None:
            return "number"
        rank = len(ins.shape.dims)
        if src.shape.size == 1:
            return "scalar"
        dims = tuple(ins.dimensions)
        if dims == tuple(range(rank)):
            return "same"
        if dims == (rank - 1,):
            return "row"
        if dims == tuple(range(rank - 1)):
            return "column"
        return None

    # -- printing ---------------------------------------------------------------
    def print(self) -> str:
        entry = self.entry
        for ins in entry.instructions:
            if ins.opcode == "constant":
                self.numbers[ins.id] = _python_number(ins)
        outputs = self.outputs()
        for ins in entry.instructions:
            self.check(ins)
        params = entry.parameters
        arg_names = []
        for p in params:
            base = p.frontend_attributes.get("neff_input_names") or \
                re.sub(r"\.\d+$", "", p.name)
            name = self.names.new(base or f"input{p.parameter_number}")
            arg_names.append(name)
            self.storage[p.id] = name
        steps = self.plan()
        out = self.out

        # The results: each instruction computes into its result tensor;
        # a result that is a parameter, a constant, a view or a result
        # already is copied into it at the end.
        result_names = []
        copies: list[tuple[Instruction, str]] = []
        for i, res in enumerate(outputs):
            name = self.names.new(f"output{i}")
            result_names.append(name)
            out.line(f"{name} = nl.ndarray({_dims(res)}, dtype={self.nl_dtype(res)}, "
                     f"buffer=nl.shared_hbm)")
            computed = res.opcode not in ("parameter", "constant", "iota") and \
                not self.is_view(res) and res.id not in self.storage
            if computed:
                self.storage[res.id] = name
            else:
                copies.append((res, name))

        # Values read by a later step, or by a view, are kept in HBM.
        needed = self.materialized(outputs)
        for ins in entry.instructions:
            if ins.opcode in ("constant", "iota") and ins.id in needed and \
                    ins.id not in self.storage:
                self.print_constant(ins)
        for step in steps:
            out.line()
            if isinstance(step, _Group):
                self.print_group(step, needed)
            else:
                self.print_stage(step.ins)
        for res, name in copies:
            out.line()
            self.print_copy(res, name)
        out.line()
        returned = ", ".join(result_names)
        out.line(f"return {returned}")

        head = ['"""NKI kernel printed by nrtpy-cc --print-nki from the HLO module '
                f'{_label(self.module.name)!r}.', "",
                "Arguments (the module's parameters, in order):"]
        for p, name in zip(params, arg_names):
            head.append(f"    {name}: {p.shape.type_name}{list(_dims(p))}")
        head.append("Returns:")
        for res, name in zip(outputs, result_names):
            head.append(f"    {name}: {res.shape.type_name}{list(_dims(res))}")
        head.append('"""')
        text = ["import nki", "import nki.isa as nisa", "import nki.language as nl"]
        if self.uses_numpy:
            text.append("import numpy as np")
        text += ["", "", "@nki.jit", f"def {self.kernel_name}({', '.join(arg_names)}):"]
        text += ["    " + h if h else "" for h in head]
        text += out.lines
        return "\n".join(text) + "\n"

    def materialized(self, outputs: list[Instruction]) -> set[int]:
        """Ids of the values some step reads from HBM: operands of stages
        and views, values a group reads from outside itself, results."""
        needed = {res.id for res in outputs}
        for ins in self.entry.instructions:
            for oid in ins.operand_ids:
                src = self.entry.by_id[oid]
                group = self.group_of.get(ins.id)
                if ins.opcode == "broadcast" and group is not None and \
                        self.broadcast_loads(ins) == "number":
                    continue
                if group is not None and self.group_of.get(oid) == group:
                    continue
                if group is not None and src.opcode == "constant" and \
                        self.numbers.get(oid) is not None and \
                        _dims(src) == _dims(ins):
                    continue  # a number in the group's code
                if ins.opcode == "reduce" and oid == ins.operand_ids[1]:
                    continue  # the init value is a number
                if ins.opcode == "tuple":
                    continue
                # (a view's operand too: every reader of a view loads it
                # from its operand's HBM tensor)
                needed.add(oid)
        return needed

    def hbm(self, ins: Instruction) -> str:
        """The HBM tensor holding ``ins`` (allocated when first asked)."""
        if self.is_view(ins):
            return self.hbm(self.operand(ins))
        if ins.id not in self.storage:
            name = self.names.new(ins.name)
            self.out.line(f"{name} = nl.ndarray({_dims(ins)}, dtype={self.nl_dtype(ins)}, "
                          f"buffer=nl.hbm)")
            self.storage[ins.id] = name
        return self.storage[ins.id]

    def tensor_dims(self, ins: Instruction) -> tuple[int, ...]:
        """The shape of the HBM tensor that holds ``ins`` (a view's is its
        operand's)."""
        while self.is_view(ins):
            ins = self.operand(ins)
        return _dims(ins)

    def print_constant(self, ins: Instruction) -> None:
        """A constant (or an iota) as an HBM tensor of the kernel, its
        values written in the source."""
        self.uses_numpy = True
        name = self.names.new(ins.name)
        if ins.opcode == "iota":
            # the index along the iota dimension, repeated along the others
            dims = ins.shape.dims or (1,)
            axis = ins.dimensions[0] if ins.dimensions else 0
            line = [1] * len(dims)
            line[axis] = dims[axis]
            np_type = _NP_VALUES.get(ins.shape.type_name, "np.float32")
            values = f"np.arange({dims[axis]}, dtype={np_type})"
            if len(dims) > 1:
                values = f"np.broadcast_to({values}.reshape({tuple(line)}), {tuple(dims)})"
            self.out.line(f"{name} = nl.shared_constant({values}, "
                          f"dtype={self.nl_dtype(ins)})")
            self.storage[ins.id] = name
            return
        values = np.asarray(ins.literal.value).reshape(_dims(ins))
        kind = ins.shape.type_name
        if kind in _NP_VALUES:
            text = f"np.array({values.tolist()!r}, dtype={_NP_VALUES[kind]})"
        else:  # floats: float32 holds every value of the narrower types
            flat = ", ".join(_literal(v) for v in values.astype(np.float32).reshape(-1))
            text = (f"np.array([{flat}], dtype=np.float32)"
                    f".reshape({values.shape})")
        self.out.line(f"{name} = nl.shared_constant({text}, dtype={self.nl_dtype(ins)})")
        self.storage[ins.id] = name

    # -- element-wise groups ----------------------------------------------------
    def print_group(self, group: _Group, needed: set[int]) -> None:
        out = self.out
        rows, cols = _rows_cols(group.dims)
        members = {m.id for m in group.members}
        stores = [m for m in group.members if m.id in needed]
        # allocate the HBM tensors the group writes before its loops
        for m in stores:
            self.hbm(m)
        names = ", ".join(_label(m.name) for m in group.members)
        flat = "" if len(group.dims) == 2 else f" as [{rows}, {cols}]"
        out.line(f"# {names}: {list(group.dims)}{flat}, tiles of at most "
                 f"[{PARTITIONS}, {FREE}]")
        r = _Tiling(rows, PARTITIONS, self.loop_var("r0"), self.loop_var("nr"))
        c = _Tiling(cols, FREE, self.loop_var("c0"), self.loop_var("nc"))
        depth = out.indent
        r.open(out)
        c.open(out)
        tile_shape = f"({r.size}, {c.size})"
        values: dict[int, tuple[str, str]] = {}  # id -> ("tile"|"number", code)
        loaded: dict[tuple[str, str], str] = {}

        def load(ins: Instruction, form: str) -> str:
            tensor = self.hbm(ins)
            key = (tensor, form)
            if key in loaded:
                return loaded[key]
            if form == "same":
                view, span = (rows, cols), f"{r.span}, {c.span}"
            elif form == "row":
                view, span = (1, cols), f"0:1, {c.span}"
            elif form == "column":
                view, span = (rows, 1), f"{r.span}, 0:1"
            else:  # scalar
                view, span = (1, 1), "0:1, 0:1"
            access = tensor if self.tensor_dims(ins) == view else f"{tensor}.reshape({view})"
            tile = self.names.new(f"{tensor}_tile" if form == "same" else f"{tensor}_{form}")
            code = f"nl.load({access}[{span}])"
            if form != "same":
                code = f"nl.broadcast_to({code}, shape={tile_shape})"
            out.line(f"{tile} = {code}")
            loaded[key] = tile
            return tile

        def value(ins: Instruction) -> tuple[str, str]:
            if ins.id in values:
                return values[ins.id]
            if ins.opcode == "constant" and self.numbers.get(ins.id) is not None:
                return ("number", _literal(self.numbers[ins.id]))
            return ("tile", load(ins, "same"))

        def as_tile(v: tuple[str, str], like: Instruction) -> str:
            kind, code = v
            if kind == "tile":
                return code
            return f"nl.full({tile_shape}, {code}, dtype={self.nl_dtype(like)})"

        for ins in group.members:
            op = ins.opcode
            dt = self.nl_dtype(ins)
            if op == "broadcast":
                src = self.operand(ins)
                form = self.broadcast_loads(ins)
                if form == "number":
                    values[ins.id] = ("number", _literal(self.numbers[src.id]))
                    continue
                if src.id in members:
                    values[ins.id] = values[src.id]
                    continue
                values[ins.id] = ("tile", load(src, form))
                continue
            operands = [self.operand(ins, k) for k in range(len(ins.operand_ids))]
            args = [value(o) for o in operands]
            if all(a[0] == "number" for a in args):
                args[0] = ("tile", as_tile(args[0], operands[0]))
            codes = [a[1] for a in args]
            if op in _LOGICAL:
                fn = (_LOGICAL if ins.shape.dtype.kind == "b" else _BITWISE)[op]
                call = f"{fn}({', '.join(codes)}, dtype={dt})"
            elif op in _UNARY:
                call = f"{_UNARY[op]}({codes[0]}, dtype={dt})"
            elif op in _BINARY:
                call = f"{_BINARY[op]}({codes[0]}, {codes[1]}, dtype={dt})"
            elif op == "compare":
                fn = _COMPARE[ins.comparison_direction]
                call = f"{fn}({codes[0]}, {codes[1]}, dtype={dt})"
            elif op == "select":
                pred = as_tile(args[0], operands[0])
                call = f"nl.where({pred}, {codes[1]}, {codes[2]}, dtype={dt})"
            elif op == "clamp":  # clamp(low, x, high)
                low, x, high = codes
                if args[1][0] == "number":
                    x = as_tile(args[1], operands[1])
                call = (f"nl.minimum(nl.maximum({x}, {low}, dtype={dt}), {high}, "
                        f"dtype={dt})")
            else:  # pragma: no cover (check() refused it)
                raise _refuse(ins, f"opcode {op!r}")
            name = self.names.new(ins.name)
            out.line(f"{name} = {call}")
            values[ins.id] = ("tile", name)

        for m in stores:
            tensor = self.storage[m.id]
            access = tensor if _dims(m) == (rows, cols) else f"{tensor}.reshape({(rows, cols)})"
            out.line(f"nl.store({access}[{r.span}, {c.span}], value={as_tile(values[m.id], m)})")
        out.indent = depth

    def print_copy(self, src: Instruction, result: str) -> None:
        """A result that is another value: copied tile by tile."""
        out = self.out
        dims = _dims(src)
        rows, cols = _rows_cols(dims)
        out.line(f"# {result}: a copy of {_label(src.name)}")
        r = _Tiling(rows, PARTITIONS, self.loop_var("r0"), self.loop_var("nr"))
        c = _Tiling(cols, FREE, self.loop_var("c0"), self.loop_var("nc"))
        depth = out.indent
        r.open(out)
        c.open(out)
        view = (rows, cols)
        dst = result if dims == view else f"{result}.reshape({view})"
        if src.opcode == "constant" and self.numbers.get(src.id) is not None:
            tile = f"nl.full(({r.size}, {c.size}), {_literal(self.numbers[src.id])}, " \
                   f"dtype={self.nl_dtype(src)})"
        else:
            tensor = self.hbm(src)
            access = tensor if self.tensor_dims(src) == view else \
                f"{tensor}.reshape({view})"
            tile = f"nl.load({access}[{r.span}, {c.span}])"
        out.line(f"nl.store({dst}[{r.span}, {c.span}], value={tile})")
        out.indent = depth

    # -- stages ---------------------------------------------------------------------
    def print_stage(self, ins: Instruction) -> None:
        if ins.opcode == "dot":
            self.print_dot(ins)
        elif ins.opcode == "reduce":
            self.print_reduce(ins)
        elif ins.opcode in ("transpose", "broadcast"):
            self.print_strided_copy(ins)
        else:  # pragma: no cover (check() refused it)
            raise _refuse(ins, f"opcode {ins.opcode!r}")

    def print_reduce(self, ins: Instruction) -> None:
        out = self.out
        src = self.operand(ins)
        reduction, join, init = self.check_reduce(ins)
        kept = len(src.shape.dims) - len(ins.dimensions)
        rows = _prod(src.shape.dims[:kept])
        cols = _prod(src.shape.dims[kept:])
        source = self.hbm(src)
        result = self.hbm(ins)
        dt = self.nl_dtype(ins)
        out.line(f"# {_label(ins.name)}: {reduction[3:]} of {_label(src.name)} over dimensions "
                 f"{sorted(ins.dimensions)}: [{rows}, {cols}] reduced along "
                 f"its free axis")
        src_view = source if self.tensor_dims(src) == (rows, cols) else \
            f"{source}.reshape({(rows, cols)})"
        dst_view = f"{result}.reshape({(rows, 1)})"
        r = _Tiling(rows, PARTITIONS, self.loop_var("r0"), self.loop_var("nr"))
        depth = out.indent
        r.open(out)
        first = min(cols, FREE)
        acc = self.names.new(f"{ins.name}_acc")
        out.line(f"{acc} = {reduction}(nl.load({src_view}[{r.span}, 0:{first}]), "
                 f"axis=1, dtype={dt}, keepdims=True)")
        if cols > FREE:
            c0, nc = self.loop_var("c0"), self.loop_var("nc")
            out.line(f"for {c0} in nl.static_range({FREE}, {cols}, {FREE}):")
            out.indent += 1
            size = nc
            if cols % FREE:
                out.line(f"{nc} = min({FREE}, {cols} - {c0})")
            else:
                size = str(FREE)
            part = f"{reduction}(nl.load({src_view}[{r.span}, {c0}:{c0} + {size}]), " \
                   f"axis=1, dtype={dt}, keepdims=True)"
            out.line(f"{acc} = {join}({acc}, {part}, dtype={dt})")
            out.indent -= 1
        if init is not None:
            out.line(f"{acc} = {join}({acc}, {_literal(init)}, dtype={dt})  "
                     f"# the init value")
        out.line(f"nl.store({dst_view}[{r.span}, 0:1], value={acc})")
        out.indent = depth

    def print_dot(self, ins: Instruction) -> None:
        out = self.out
        plan = self.dot_plan(ins)
        lhs, rhs = self.operand(ins, 0), self.operand(ins, 1)
        lhs_t, rhs_t, res_t = self.hbm(lhs), self.hbm(rhs), self.hbm(ins)
        batch, m, k, n = plan["batch"], plan["m"], plan["k"], plan["n"]
        batched = plan["nb"] > 0
        lhs_shape = (k, m) if plan["lhs_km"] else (m, k)
        rhs_shape = (k, n) if plan["rhs_kn"] else (n, k)
        lead = (batch,) if batched else ()

        def view(tensor: str, ins_: Instruction, shape: tuple[int, ...]) -> str:
            return tensor if self.tensor_dims(ins_) == lead + shape else \
                f"{tensor}.reshape({lead + shape})"
        lhs_v, rhs_v, res_v = view(lhs_t, lhs, lhs_shape), view(rhs_t, rhs, rhs_shape), \
            view(res_t, ins, (m, n))
        out.line(f"# {_label(ins.name)}: {'a batch of ' + str(batch) + ' ' if batched else ''}"
                 f"[{m}, {k}] @ [{k}, {n}] on the tensor engine: stationary "
                 f"[K, M] and moving [K, N] tiles, K and M by {PARTITIONS}, N by "
                 f"{FREE}, summed in PSUM")
        depth = out.indent
        b = ""
        if batched:
            out.line(f"for {self.loop_var('b')} in nl.static_range({batch}):")
            out.indent += 1
            b = f"{self.loop_var('b')}, "
        mt = _Tiling(m, PARTITIONS, self.loop_var("m0"), self.loop_var("nm"))
        nt = _Tiling(n, FREE, self.loop_var("n0"), self.loop_var("nn"))
        kt = _Tiling(k, PARTITIONS, self.loop_var("k0"), self.loop_var("nk"))
        mt.open(out)
        nt.open(out)
        psum = self.names.new(f"{ins.name}_psum")
        out.line(f"{psum} = nl.ndarray(({mt.size}, {nt.size}), dtype=nl.float32, "
                 f"buffer=nl.psum)")
        kt.open(out)
        if plan["lhs_km"]:
            stationary = f"nl.load({lhs_v}[{b}{kt.span}, {mt.span}])"
        else:
            stationary = f"nl.load_transpose2d({lhs_v}[{b}{mt.span}, {kt.span}])"
        if plan["rhs_kn"]:
            moving = f"nl.load({rhs_v}[{b}{kt.span}, {nt.span}])"
        else:
            moving = f"nl.load_transpose2d({rhs_v}[{b}{nt.span}, {kt.span}])"
        out.line(f"nisa.nc_matmul(dst={psum}, stationary={stationary}, "
                 f"moving={moving})")
        if kt.loops:
            out.indent -= 1  # out of the K loop
        out.line(f"nl.store({res_v}[{b}{mt.span}, {nt.span}], "
                 f"value=nl.copy({psum}, dtype={self.nl_dtype(ins)}))")
        out.indent = depth

    def print_strided_copy(self, ins: Instruction) -> None:
        """A transpose, or a broadcast a group cannot load: each element of
        the result read through an access pattern of the source's storage
        (stride 0 along a broadcast dimension)."""
        out = self.out
        src = self.operand(ins)
        src_dims = src.shape.dims
        strides = [0] * len(src_dims)
        step = 1
        for d in range(len(src_dims) - 1, -1, -1):
            strides[d] = step
            step *= src_dims[d]
        dims = ins.shape.dims
        if ins.opcode == "transpose":
            perm = tuple(ins.dimensions)
            result_strides = [strides[p] for p in perm]
            what = f"transpose {perm}"
        else:
            result_strides = [0] * len(dims)
            for j, d in enumerate(ins.dimensions):
                result_strides[d] = strides[j]
            what = f"broadcast along {tuple(ins.dimensions)}"
        if len(dims) < 2:
            dims = (1,) + (dims or (1,))
            result_strides = [0] + (result_strides or [0])
        outer = dims[:-2]
        if _prod(outer) > MAX_STRIDED_ITERATIONS:
            raise _refuse(ins, f"a {what} looping {_prod(outer)} times over the "
                               f"leading dimensions (at most "
                               f"{MAX_STRIDED_ITERATIONS})")
        source = self.hbm(src)
        result = self.hbm(ins)
        out.line(f"# {_label(ins.name)}: {what} of {_label(src.name)}, read with a strided access "
                 f"pattern (element strides {result_strides})")
        depth = out.indent
        index = []
        offset_terms = []
        for d, extent in enumerate(outer):
            var = self.loop_var(f"i{d}")
            out.line(f"for {var} in nl.static_range({extent}):")
            out.indent += 1
            index.append(var)
            if result_strides[d]:
                offset_terms.append(f"{var} * {result_strides[d]}")
        sp, sf = result_strides[-2], result_strides[-1]
        r = _Tiling(dims[-2], PARTITIONS, self.loop_var("r0"), self.loop_var("nr"))
        c = _Tiling(dims[-1], FREE, self.loop_var("c0"), self.loop_var("nc"))
        r.open(out)
        c.open(out)
        if r.loops and sp:
            offset_terms.append(f"{r.var} * {sp}" if sp != 1 else r.var)
        if c.loops and sf:
            offset_terms.append(f"{c.var} * {sf}" if sf != 1 else c.var)
        offset = " + ".join(offset_terms) or "0"
        pattern = f"[[{sp}, {r.size}], [{sf}, {c.size}]]"
        lead = "".join(f"{i}, " for i in index)
        dst = result if len(ins.shape.dims) >= 2 else f"{result}.reshape({dims})"
        out.line(f"nl.store({dst}[{lead}{r.span}, {c.span}], "
                 f"value=nl.load({source}.ap({pattern}, offset={offset})))")
        out.indent = depth


def print_nki(module: Any, *, kernel_name: str = "kernel") -> str:
    """NKI source (current namespace: ``import nki``) of a kernel that
    computes what the entry computation of ``module`` computes.

    Args:
        module: anything :func:`nrtpy.neff.compile_hlo` takes (bytes, a
            path, a JAX ``Lowered``...), or a parsed ``Module``.
        kernel_name: the kernel function's name.

    Raises:
        NkiPrintError: an instruction outside the subset (named).
        ValueError: a malformed module.
    """
    if not isinstance(module, Module):
        from nrtpy.hlo._compile import module_bytes
        module = parse_module(module_bytes(module))
    if not kernel_name.isidentifier() or keyword.iskeyword(kernel_name):
        raise ValueError(f"kernel_name {kernel_name!r} is not a Python identifier")
    return _Printer(module, kernel_name).print()
