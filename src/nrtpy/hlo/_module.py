"""HloModuleProto as typed Python objects, read by field number.

The field numbers are public facts of XLA's ``hlo.proto`` and
``xla_data.proto``.  Only what the compiler uses is decoded into
attributes; every instruction keeps its raw message (``Instruction.raw``)
so that a lowering may read any other field by number.  Unknown fields are
skipped.  ``parse_module`` also checks the module's structure: ids unique
per computation, every operand and called computation exists, no cycles
among instructions or calls, the entry computation exists.  Every failure
is a ``ValueError`` naming the byte offset or the instruction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from nrtpy.hlo._wire import Message

# PrimitiveType -> (XLA's name, NumPy dtype or None for non-arrays).
PRIMITIVE_TYPES: dict[int, tuple[str, Any]] = {
    1: ("pred", np.dtype(np.bool_)),
    2: ("s8", np.dtype(np.int8)),
    3: ("s16", np.dtype(np.int16)),
    4: ("s32", np.dtype(np.int32)),
    5: ("s64", np.dtype(np.int64)),
    6: ("u8", np.dtype(np.uint8)),
    7: ("u16", np.dtype(np.uint16)),
    8: ("u32", np.dtype(np.uint32)),
    9: ("u64", np.dtype(np.uint64)),
    10: ("f16", np.dtype(np.float16)),
    11: ("f32", np.dtype(np.float32)),
    12: ("f64", np.dtype(np.float64)),
    13: ("tuple", None),
    16: ("bf16", np.dtype(ml_dtypes.bfloat16)),
    17: ("token", None),
    19: ("f8e5m2", np.dtype(ml_dtypes.float8_e5m2)),
    20: ("f8e4m3fn", np.dtype(ml_dtypes.float8_e4m3fn)),
    28: ("f8e4m3", np.dtype(ml_dtypes.float8_e4m3)),
}
TUPLE, TOKEN = 13, 17

# LiteralProto: PrimitiveType -> (field number, how it is stored).  "bytes"
# fields hold the little-endian values back to back.
_LITERAL_FIELDS: dict[int, tuple[int, str]] = {
    1: (2, "varint"),    # pred -> preds
    2: (15, "bytes"),    # s8 -> s8s
    3: (17, "bytes"),    # s16 -> s16s
    4: (4, "varint"),    # s32 -> s32s
    5: (5, "varint"),    # s64 -> s64s
    6: (3, "bytes"),     # u8 -> u8s
    7: (16, "bytes"),    # u16 -> u16s
    8: (6, "varint"),    # u32 -> u32s
    9: (7, "varint"),    # u64 -> u64s
    10: (11, "bytes"),   # f16 -> f16s
    11: (8, "fixed"),    # f32 -> f32s
    12: (9, "fixed"),    # f64 -> f64s
    16: (13, "bytes"),   # bf16 -> bf16s
    19: (19, "bytes"),   # f8e5m2 -> f8e5m2s
    20: (20, "bytes"),   # f8e4m3fn -> f8e4m3fns
    28: (28, "bytes"),   # f8e4m3 -> f8e4m3s
}


@dataclass(frozen=True)
class Shape:
    """An array shape (``element_type`` and ``dims``) or a tuple of shapes."""

    element_type: int
    dims: tuple[int, ...] = ()
    tuple_shapes: tuple[Shape, ...] = ()

    @property
    def is_tuple(self) -> bool:
        return self.element_type == TUPLE

    @property
    def is_array(self) -> bool:
        return self.element_type not in (TUPLE, TOKEN)

    @property
    def type_name(self) -> str:
        return PRIMITIVE_TYPES.get(self.element_type, (f"type{self.element_type}",))[0]

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype; ValueError for tuples and tokens."""
        entry = PRIMITIVE_TYPES.get(self.element_type)
        if entry is None or entry[1] is None:
            raise ValueError(f"{self} has no array element type")
        return entry[1]

    @property
    def size(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    def leaves(self) -> list[Shape]:
        """The array shapes of a (nested) tuple, depth first; [self] for an
        array."""
        if not self.is_tuple:
            return [self]
        return [leaf for s in self.tuple_shapes for leaf in s.leaves()]

    def __str__(self) -> str:
        if self.is_tuple:
            return "(" + ", ".join(str(s) for s in self.tuple_shapes) + ")"
        return f"{self.type_name}[{','.join(str(d) for d in self.dims)}]"


@dataclass(frozen=True)
class Literal:
    shape: Shape
    value: Any  # np.ndarray of shape.dims, or a tuple of Literals


@dataclass
class Instruction:
    """One HloInstructionProto (fields the compiler reads; ``raw`` has all)."""

    name: str
    opcode: str
    shape: Shape
    id: int
    operand_ids: tuple[int, ...]
    called_computation_ids: tuple[int, ...]
    raw: Message
    computation: str = ""
    parameter_number: int = 0
    tuple_index: int = 0
    dimensions: tuple[int, ...] = ()
    literal: Literal | None = None
    frontend_attributes: dict[str, str] = field(default_factory=dict)
    op_name: str = ""  # metadata.op_name

    @property
    def offset(self) -> int:
        return self.raw.start

    def where(self) -> str:
        """How errors name it: ``'dot.3' (dot) in computation 'main.4'``."""
        return (f"instruction {self.name!r} ({self.opcode}) in computation "
                f"{self.computation!r}")

    # Attributes a few lowerings need, decoded on demand.
    @property
    def slice_dimensions(self) -> list[tuple[int, int, int]]:
        """(start, limit, stride) per dimension."""
        return [(m.int64(1), m.int64(2), m.int64(3, 1) if m.has(3) else 1)
                for m in self.raw.messages(17, "SliceDimensions")]

    @property
    def dot_dimension_numbers(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """(lhs_contracting, rhs_contracting, lhs_batch, rhs_batch)."""
        m = self.raw.message(30, "DotDimensionNumbers")
        if m is None:
            return [], [], [], []
        return m.ints(1), m.ints(2), m.ints(3), m.ints(4)

    @property
    def comparison_direction(self) -> str:
        return self.raw.string(63)

    @property
    def comparison_type(self) -> str:
        return self.raw.string(72) if self.raw.has(72) else ""

    @property
    def padding_config(self) -> list[tuple[int, int, int]]:
        """(edge_padding_low, edge_padding_high, interior_padding) per dim."""
        m = self.raw.message(21, "PaddingConfig")
        if m is None:
            return []
        return [(d.int64(1), d.int64(2), d.int64(3))
                for d in m.messages(1, "PaddingConfigDimension")]

    @property
    def custom_call_target(self) -> str:
        return self.raw.string(28)

    @property
    def backend_config(self) -> str:
        return self.raw.data(43).decode("utf-8", "replace")


@dataclass
class Computation:
    name: str
    id: int
    instructions: list[Instruction]  # in a valid order (operands first)
    root_id: int
    by_id: dict[int, Instruction]

    @property
    def root(self) -> Instruction:
        return self.by_id[self.root_id]

    @property
    def parameters(self) -> list[Instruction]:
        return sorted((i for i in self.instructions if i.opcode == "parameter"),
                      key=lambda i: i.parameter_number)


@dataclass(frozen=True)
class Alias:
    """An input_output_alias entry."""

    output_index: tuple[int, ...]
    parameter_number: int
    parameter_index: tuple[int, ...]
    kind: int  # 0 undefined, 1 may-alias, 2 must-alias


@dataclass
class Module:
    name: str
    entry: Computation
    computations: dict[int, Computation]
    aliases: list[Alias]
    frontend_attributes: dict[str, str]

    def computation(self, cid: int) -> Computation:
        return self.computations[cid]


# -- reading --------------------------------------------------------------


def parse_shape(m: Message) -> Shape:
    et = m.uint(2)
    if et == TUPLE:
        return Shape(et, (), tuple(parse_shape(s) for s in m.messages(4, "ShapeProto")))
    dims = tuple(m.ints(3))
    for d in dims:
        if d < 0:
            raise ValueError(f"ShapeProto at byte offset {m.start}: dimension "
                             f"{d} is negative (dynamic shapes are not "
                             f"supported)")
    return Shape(et, dims)


def parse_literal(m: Message, shape: Shape | None = None) -> Literal:
    sm = m.message(1, "ShapeProto")
    if sm is not None:
        shape = parse_shape(sm)
    if shape is None:
        raise ValueError(f"LiteralProto at byte offset {m.start}: no shape")
    if shape.is_tuple:
        subs = m.messages(10, "LiteralProto")
        if len(subs) != len(shape.tuple_shapes):
            raise ValueError(f"LiteralProto at byte offset {m.start}: "
                             f"{len(subs)} tuple elements for {shape}")
        return Literal(shape, tuple(parse_literal(s, t) for s, t in
                                    zip(subs, shape.tuple_shapes)))
    et = shape.element_type
    if et not in _LITERAL_FIELDS:
        raise NotImplementedError(f"literal of element type {shape.type_name} "
                                  f"(LiteralProto at byte offset {m.start})")
    dt = shape.dtype
    num, how = _LITERAL_FIELDS[et]
    if how == "bytes":
        raw = m.data(num)
        if len(raw) % dt.itemsize:
            raise ValueError(f"LiteralProto at byte offset {m.start}: "
                             f"{len(raw)} bytes of {shape.type_name} values")
        # (little-endian values; the hosts nrtpy runs on are little-endian)
        values = np.frombuffer(raw, dt).copy()
    elif how == "fixed":
        values = m.fixed(num, "<f4" if dt.itemsize == 4 else "<f8").astype(dt)
    else:
        ints = m.ints(num, signed=dt.kind != "u" and dt.kind != "b")
        if dt.kind == "b":
            values = np.array([bool(v) for v in ints], dt)
        else:
            values = np.array(ints, dtype=np.int64 if dt.kind == "i" else np.uint64)
            if values.size and (values.min() < np.iinfo(dt).min or
                                values.max() > np.iinfo(dt).max):
                raise ValueError(f"LiteralProto at byte offset {m.start}: "
                                 f"values out of range for {shape.type_name}")
            values = values.astype(dt)
    n = shape.size
    if values.size != n:
        raise ValueError(f"LiteralProto at byte offset {m.start}: {values.size} "
                         f"values for shape {shape} ({n} elements)")
    return Literal(shape, values.reshape(shape.dims))


def _string_map(m: Message | None) -> dict[str, str]:
    if m is None:
        return {}
    out = {}
    for e in m.messages(1, "FrontendAttributes.MapEntry"):
        out[e.string(1)] = e.string(2)
    return out


def parse_instruction(m: Message, computation: str) -> Instruction:
    sm = m.message(3, "ShapeProto")
    name = m.string(1)
    opcode = m.string(2)
    if not opcode:
        raise ValueError(f"instruction {name!r} at byte offset {m.start} in "
                         f"computation {computation!r} has no opcode")
    if sm is None:
        raise ValueError(f"instruction {name!r} at byte offset {m.start} in "
                         f"computation {computation!r} has no shape")
    shape = parse_shape(sm)
    meta = m.message(7, "OpMetadata")
    ins = Instruction(
        name=name, opcode=opcode, shape=shape, id=m.int64(35),
        operand_ids=tuple(m.ints(36)), called_computation_ids=tuple(m.ints(38)),
        raw=m, computation=computation, parameter_number=m.int64(9),
        tuple_index=m.int64(13), dimensions=tuple(m.ints(14)),
        frontend_attributes=_string_map(m.message(68, "FrontendAttributes")),
        op_name=meta.string(2) if meta is not None else "")
    if opcode == "constant":
        lm = m.message(8, "LiteralProto")
        if lm is None:
            raise ValueError(f"{ins.where()}: constant without a literal")
        ins.literal = parse_literal(lm, shape)
    return ins


def _order(comp_name: str, instructions: list[Instruction],
           by_id: dict[int, Instruction]) -> list[Instruction]:
    """The instructions with every operand before its users (iterative DFS;
    a cycle is a ValueError)."""
    state: dict[int, int] = {}  # 1 visiting, 2 done
    order: list[Instruction] = []
    for start in instructions:
        if state.get(start.id) == 2:
            continue
        stack = [(start, 0)]
        state[start.id] = 1
        while stack:
            ins, k = stack[-1]
            if k < len(ins.operand_ids):
                stack[-1] = (ins, k + 1)
                op = by_id[ins.operand_ids[k]]
                s = state.get(op.id)
                if s == 1:
                    raise ValueError(f"computation {comp_name!r}: instruction "
                                     f"{op.name!r} depends on itself (a cycle "
                                     f"through {ins.name!r})")
                if s is None:
                    state[op.id] = 1
                    stack.append((op, 0))
            else:
                state[ins.id] = 2
                order.append(ins)
                stack.pop()
    return order


def parse_computation(m: Message) -> Computation:
    name = m.string(1)
    instructions = [parse_instruction(i, name)
                    for i in m.messages(2, "HloInstructionProto")]
    by_id: dict[int, Instruction] = {}
    for ins in instructions:
        if ins.id in by_id:
            raise ValueError(f"computation {name!r}: instructions "
                             f"{by_id[ins.id].name!r} and {ins.name!r} have the "
                             f"same id {ins.id}")
        by_id[ins.id] = ins
    for ins in instructions:
        for oid in ins.operand_ids:
            if oid not in by_id:
                raise ValueError(f"{ins.where()}: operand id {oid} is not an "
                                 f"instruction of the computation")
    if not instructions:
        raise ValueError(f"computation {name!r} at byte offset {m.start} has "
                         f"no instructions")
    root_id = m.int64(6) if m.has(6) else instructions[-1].id
    if root_id not in by_id:
        raise ValueError(f"computation {name!r}: root id {root_id} is not one "
                         f"of its instructions")
    return Computation(name, m.int64(5), _order(name, instructions, by_id),
                       root_id, by_id)


# The operand counts XLA's verifier requires of the fixed-arity opcodes, so
# that a module which breaks them (a mutated or hand-written one) is
# refused as malformed before any lowering or pattern match reads it.
_OPERAND_COUNTS: dict[str, int] = {
    **dict.fromkeys(("parameter", "constant", "iota", "rng-get-and-update-state",
                     "partition-id", "replica-id"), 0),
    **dict.fromkeys((
        "abs", "bitcast", "bitcast-convert", "broadcast", "cbrt", "ceil",
        "clz", "convert", "copy", "cosine", "erf", "exponential",
        "exponential-minus-one", "floor", "get-tuple-element", "imag",
        "is-finite", "log", "log-plus-one", "logistic", "negate", "not",
        "popcnt", "real", "reduce-precision", "reshape", "reverse",
        "round-nearest-afz", "round-nearest-even", "rsqrt", "sign", "sine",
        "slice", "sqrt", "tan", "tanh", "transpose"), 1),
    **dict.fromkeys((
        "add", "and", "atan2", "compare", "complex", "divide", "dot",
        "maximum", "minimum", "multiply", "or", "pad", "power", "remainder",
        "shift-left", "shift-right-arithmetic", "shift-right-logical",
        "subtract", "xor"), 2),
    **dict.fromkeys(("clamp", "select"), 3),
}


def parse_module(data: bytes | memoryview) -> Module:
    """Read and check an HloModuleProto."""
    if len(data) == 0:
        raise ValueError("empty HLO module (0 bytes)")
    m = Message(memoryview(data).toreadonly(), name="HloModuleProto")
    comps = [parse_computation(c) for c in m.messages(3, "HloComputationProto")]
    if not comps:
        raise ValueError("HloModuleProto has no computations (is this an "
                         "HloModuleProto?)")
    by_id: dict[int, Computation] = {}
    by_name: dict[str, Computation] = {}
    for c in comps:
        if c.id in by_id:
            raise ValueError(f"computations {by_id[c.id].name!r} and "
                             f"{c.name!r} have the same id {c.id}")
        by_id[c.id] = c
        by_name[c.name] = c
    entry: Computation | None = None
    if m.has(6):
        entry = by_id.get(m.int64(6))
        if entry is None:
            raise ValueError(f"entry_computation_id {m.int64(6)} names no "
                             f"computation of the module")
    elif m.has(2):
        entry = by_name.get(m.string(2))
        if entry is None:
            raise ValueError(f"entry computation {m.string(2)!r} is not in the "
                             f"module")
    else:
        entry = comps[-1]
    # Calls: every called computation exists, and none calls itself.
    for c in comps:
        for ins in c.instructions:
            for cid in ins.called_computation_ids:
                if cid not in by_id:
                    raise ValueError(f"{ins.where()}: called computation id "
                                     f"{cid} is not in the module")
    _check_call_cycles(comps, by_id)
    for c in comps:
        for ins in c.instructions:
            want = _OPERAND_COUNTS.get(ins.opcode)
            if want is not None and len(ins.operand_ids) != want:
                raise ValueError(f"malformed HLO: {ins.where()}: has "
                                 f"{len(ins.operand_ids)} operands, "
                                 f"{ins.opcode} takes {want}")
    aliases = []
    am = m.message(8, "HloInputOutputAliasProto")
    if am is not None:
        for e in am.messages(1, "AliasEntryProto"):
            aliases.append(Alias(tuple(e.ints(1)), e.int64(2), tuple(e.ints(3)),
                                 e.int64(4)))
    return Module(m.string(1), entry, by_id, aliases,
                  _string_map(m.message(19, "FrontendAttributes")))


def _check_call_cycles(comps: list[Computation],
                       by_id: dict[int, Computation]) -> None:
    calls = {c.id: sorted({cid for i in c.instructions
                           for cid in i.called_computation_ids}) for c in comps}
    state: dict[int, int] = {}
    for c in comps:
        if c.id in state:
            continue
        stack = [(c.id, 0)]
        state[c.id] = 1
        while stack:
            cid, k = stack[-1]
            if k < len(calls[cid]):
                stack[-1] = (cid, k + 1)
                nxt = calls[cid][k]
                if state.get(nxt) == 1:
                    raise ValueError(f"computation {by_id[nxt].name!r} calls "
                                     f"itself (through {by_id[cid].name!r})")
                if nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, 0))
            else:
                state[cid] = 2
                stack.pop()
