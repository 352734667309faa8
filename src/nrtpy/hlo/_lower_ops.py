"""Lowerings of the data-movement, elementwise, dot and reduce opcodes.

XLA's semantics, op by op, with the emulator's ops (docs/
neff-emulator-format.md §3 and the new ops of the HLO contract).  Each
elementwise op computes in its operands' type (XLA has no implicit
promotion), which the emulator does for 16- and 8-bit floats in float32
with one rounding at the store.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from nrtpy import _dtypes, _nrtpy
from nrtpy.hlo._lower import Buf, Lowering, Value, lowers
from nrtpy.hlo._module import Computation, Instruction

# -- structure: parameters, constants, tuples, calls ------------------------------


@lowers("parameter")
def _parameter(ctx: Lowering, ins: Instruction) -> Value:
    n = ins.parameter_number
    if not 0 <= n < len(ctx._args[-1]):
        raise ctx.malformed(ins, f"parameter number {n} is out of range (the "
                                 f"computation has {len(ctx._args[-1])} "
                                 f"arguments)")
    return ctx.argument(n)


def _literal_value(ctx: Lowering, lit) -> Value:
    if isinstance(lit.value, tuple):
        return tuple(_literal_value(ctx, v) for v in lit.value)
    return ctx.const(lit.value)


@lowers("constant")
def _constant(ctx: Lowering, ins: Instruction) -> Value:
    assert ins.literal is not None  # checked when read
    if ins.literal.shape.dims != ins.shape.dims and not ins.shape.is_tuple:
        raise ctx.malformed(ins, f"the literal's shape {ins.literal.shape} is "
                                 f"not the instruction's {ins.shape}")
    return _literal_value(ctx, ins.literal)


@lowers("tuple")
def _tuple(ctx: Lowering, ins: Instruction) -> Value:
    return tuple(ctx.value(ins, k, lazy=True) for k in range(len(ins.operand_ids)))


@lowers("get-tuple-element")
def _get_tuple_element(ctx: Lowering, ins: Instruction) -> Value:
    v = ctx.value(ins, 0, lazy=True)
    if not isinstance(v, tuple) or not 0 <= ins.tuple_index < len(v):
        raise ctx.malformed(ins, f"index {ins.tuple_index} of an operand that "
                                 f"is not a tuple of more than "
                                 f"{ins.tuple_index} elements")
    return v[ins.tuple_index]


@lowers("call")
def _call(ctx: Lowering, ins: Instruction) -> Value:
    return ctx.inline(ctx.computation(ins, 0),
                      [ctx.value(ins, k, lazy=True) for k in range(len(ins.operand_ids))])


@lowers("copy", "opt-barrier")
def _identity(ctx: Lowering, ins: Instruction) -> Value:
    # Buffers are never written twice, so a copy may share its operand's.
    return ctx.value(ins, 0, lazy=True)


# -- shapes ---------------------------------------------------------------------


def _same_shape(ctx: Lowering, ins: Instruction, *bufs: Buf) -> None:
    for k, b in enumerate(bufs):
        if tuple(b.shape) != ins.shape.dims:
            raise ctx.malformed(ins, f"operand {k} has shape {list(b.shape)}, "
                                     f"the result {list(ins.shape.dims)}: "
                                     f"elementwise operands have the result's "
                                     f"shape")


@lowers("reshape")
def _reshape(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0)
    if x.size != ins.shape.size:
        raise ctx.malformed(ins, f"reshape of {list(x.shape)} to "
                                 f"{list(ins.shape.dims)} changes the element "
                                 f"count")
    return ctx.reshape(x, ins.shape.dims)


@lowers("transpose")
def _transpose(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0)
    perm = list(ins.dimensions)
    if sorted(perm) != list(range(len(x.shape))):
        raise ctx.malformed(ins, f"dimensions {perm} are not a permutation of "
                                 f"{len(x.shape)} dimensions")
    return ctx.transpose(x, perm)


@lowers("broadcast")
def _broadcast(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0)
    out = ins.shape.dims
    dims = list(ins.dimensions)
    if len(dims) != len(x.shape) or len(set(dims)) != len(dims) or \
            any(not 0 <= d < len(out) for d in dims) or \
            any(x.shape[i] not in (1, out[d]) for i, d in enumerate(dims)):
        raise ctx.malformed(ins, f"dimensions {dims} do not map operand shape "
                                 f"{list(x.shape)} into {list(out)}")
    # Operand dims in increasing output order, then 1s where the output
    # has dims of its own, then NumPy broadcasting.
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = ctx.transpose(x, order)
    expanded = [1] * len(out)
    for i in order:
        expanded[dims[i]] = x.shape[order.index(i)]
    x = ctx.reshape(x, expanded)
    return ctx.broadcast_to(x, out, lazy=True)


@lowers("slice")
def _slice(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0)
    sd = ins.slice_dimensions
    if len(sd) != len(x.shape):
        raise ctx.malformed(ins, f"{len(sd)} slice dimensions for "
                                 f"{len(x.shape)} operand dimensions")
    start, step, shape = [], [], []
    for d, ((lo, hi, st), n) in enumerate(zip(sd, x.shape)):
        if st <= 0 or not 0 <= lo <= hi <= n:
            raise ctx.malformed(ins, f"slice [{lo}:{hi}:{st}] of dimension {d} "
                                     f"(size {n})")
        count = (hi - lo + st - 1) // st
        start.append(lo if count else 0)
        step.append(st)
        shape.append(count)
    if tuple(shape) != ins.shape.dims:
        raise ctx.malformed(ins, f"the slice has shape {shape}")
    if tuple(shape) == tuple(x.shape):
        return x
    return ctx.emit("slice", [x], shape, x.dtype, start=start, step=step)


@lowers("reverse")
def _reverse(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0)
    dims = set(ins.dimensions)
    if any(not 0 <= d < len(x.shape) for d in dims):
        raise ctx.malformed(ins, f"dimensions {sorted(dims)} out of range")
    dims = {d for d in dims if x.shape[d] > 1}
    if not dims:
        return x
    start = [x.shape[d] - 1 if d in dims else 0 for d in range(len(x.shape))]
    step = [-1 if d in dims else 1 for d in range(len(x.shape))]
    return ctx.emit("slice", [x], x.shape, x.dtype, start=start, step=step)


@lowers("concatenate")
def _concatenate(ctx: Lowering, ins: Instruction) -> Value:
    xs = ctx.operands(ins)
    if not xs or len(ins.dimensions) != 1:
        raise ctx.malformed(ins, "concatenate needs operands and one dimension")
    axis = ins.dimensions[0]
    xs = [x for x in xs if x.shape[axis] > 0] or xs[:1]
    if len(xs) == 1:
        return xs[0]
    return ctx.emit("concatenate", xs, ins.shape.dims, ins.shape.dtype, axis=axis)


@lowers("iota")
def _iota(ctx: Lowering, ins: Instruction) -> Value:
    dims = ins.shape.dims
    axis = ins.dimensions[0] if ins.dimensions else 0
    if dims and not 0 <= axis < len(dims):
        raise ctx.malformed(ins, f"iota_dimension {axis} out of range")
    if not dims:
        return ctx.full(0, (), ins.shape.dtype)
    # Only the iota dimension varies: computed along it, then broadcast.
    line = ctx.emit("iota", [], (dims[axis],), ins.shape.dtype, axis=0)
    shape = [1] * len(dims)
    shape[axis] = dims[axis]
    return ctx.broadcast_to(ctx.reshape(line, shape), dims, lazy=True)


# -- elementwise ----------------------------------------------------------------

_UNARY = {
    "negate": "neg", "abs": "abs", "sign": "sign", "floor": "floor",
    "ceil": "ceil", "round-nearest-even": "round_even",
    "round-nearest-afz": "round_away", "exponential": "exp",
    "exponential-minus-one": "expm1", "log": "log", "log-plus-one": "log1p",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "tanh": "tanh",
    "logistic": "sigmoid", "sine": "sin", "cosine": "cos", "erf": "erf",
}
# Ops that leave integers unchanged.
_INT_IDENTITY = {"floor", "ceil", "round-nearest-even", "round-nearest-afz"}
# The opcodes whose row is defined only for floats (the op table's
# float-only column, _nrtpy.OPS): of an integer, a malformed module.
_FLOAT_ONLY = {h for h, op in _UNARY.items() if _nrtpy.OPS[op]["float_only"]}


_is_float = _dtypes.is_float


@lowers(*_UNARY)
def _unary(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0, lazy=True)
    _same_shape(ctx, ins, x)
    dt = ins.shape.dtype
    if not _is_float(dt):
        if ins.opcode in _INT_IDENTITY:
            return x
        if ins.opcode in _FLOAT_ONLY:
            raise ctx.malformed(ins, f"{ins.opcode} of {dt.name}: a float "
                                     f"operation")
    return ctx.elementwise(_UNARY[ins.opcode], [x], x.shape, dt)


@lowers("is-finite")
def _is_finite(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0, lazy=True)
    _same_shape(ctx, ins, x)
    if not _is_float(x.dtype):
        return ctx.splat(True, x.shape, np.bool_)
    return ctx.elementwise("is_finite", [x], x.shape, np.bool_, compute=x.dtype)


@lowers("not")
def _not(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0, lazy=True)
    _same_shape(ctx, ins, x)
    if x.dtype == np.bool_:
        return ctx.elementwise("logical_not", [x], x.shape, np.bool_)
    return ctx.elementwise("bitwise_not", [x], x.shape, x.dtype)


_BINARY = {"add": "add", "subtract": "sub", "multiply": "mul", "power": "pow",
           "remainder": "rem", "maximum": "maximum", "minimum": "minimum",
           "atan2": "atan2", "shift-left": "shift_left",
           "shift-right-logical": "shift_right_logical",
           "shift-right-arithmetic": "shift_right_arithmetic"}
_BOOL_BINARY = {"and": "logical_and", "or": "logical_or", "xor": "logical_xor",
                "maximum": "logical_or", "minimum": "logical_and"}
_INT_BINARY = {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
               "divide": "trunc_divide"}


@lowers(*_BINARY, "and", "or", "xor", "divide")
def _binary(ctx: Lowering, ins: Instruction) -> Value:
    a, b = ctx.operand(ins, 0, lazy=True), ctx.operand(ins, 1, lazy=True)
    _same_shape(ctx, ins, a, b)
    dt = ins.shape.dtype
    if a.dtype != dt or b.dtype != dt:
        raise ctx.malformed(ins, f"operands {a.dtype.name} and {b.dtype.name} "
                                 f"for a {dt.name} result")
    if dt == np.bool_ and ins.opcode in _BOOL_BINARY:
        op = _BOOL_BINARY[ins.opcode]
    elif not _is_float(dt) and ins.opcode in _INT_BINARY:
        op = _INT_BINARY[ins.opcode]
    elif ins.opcode == "divide":
        op = "div"
    elif ins.opcode in _BINARY:
        op = _BINARY[ins.opcode]
    else:
        raise ctx.unsupported(ins, f"on {dt.name}")
    return ctx.elementwise(op, [a, b], ins.shape.dims, dt)


@lowers("select")
def _select(ctx: Lowering, ins: Instruction) -> Value:
    p, a, b = (ctx.operand(ins, k, lazy=True) for k in range(3))
    _same_shape(ctx, ins, a, b)
    if p.dtype != np.bool_ or p.shape not in ((), tuple(ins.shape.dims)):
        raise ctx.malformed(ins, f"the predicate is {p.dtype.name}"
                                 f"{list(p.shape)}")
    return ctx.elementwise("where", [p, a, b], ins.shape.dims, ins.shape.dtype)


@lowers("clamp")
def _clamp(ctx: Lowering, ins: Instruction) -> Value:
    lo, x, hi = (ctx.operand(ins, k, lazy=True) for k in range(3))
    _same_shape(ctx, ins, x)
    for k, bound in ((0, lo), (2, hi)):
        if bound.shape not in ((), x.shape):
            raise ctx.malformed(ins, f"operand {k} has shape {list(bound.shape)}")
    dt = ins.shape.dtype
    if dt == np.bool_:
        raise ctx.unsupported(ins, "on pred")
    t = ctx.elementwise("maximum", [x, lo], x.shape, dt)
    return ctx.elementwise("minimum", [t, hi], x.shape, dt)


@lowers("convert")
def _convert(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0, lazy=True)
    _same_shape(ctx, ins, x)
    return ctx.cast(x, ins.shape.dtype)


@lowers("bitcast-convert")
def _bitcast_convert(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0)
    if x.size * x.dtype.itemsize != ins.shape.size * ins.shape.dtype.itemsize:
        raise ctx.malformed(ins, f"bitcast of {x.dtype.name}{list(x.shape)} to "
                                 f"{ins.shape} changes the byte count")
    if x.dtype == ins.shape.dtype:
        return ctx.reshape(x, ins.shape.dims)
    return ctx.emit("bitcast", [x], ins.shape.dims, ins.shape.dtype)


_COMPARE = {"EQ": "equal", "NE": "not_equal", "GE": "greater_equal",
            "GT": "greater", "LE": "less_equal", "LT": "less"}
_SIGNED_OF = {2: np.int16, 1: np.int8, 4: np.int32, 8: np.int64}


def total_order_key(ctx: Lowering, x: Buf) -> Buf:
    """Signed integers ordered as XLA's total order of the floats ``x``:
    -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN (for compare's
    TOTALORDER and sort).  The bits as a signed integer order the
    non-negative floats; negative ones have their magnitude bits flipped."""
    it = np.dtype(_SIGNED_OF[x.dtype.itemsize])
    k = ctx.emit("bitcast", [x], x.shape, it)
    zero = ctx.const(np.zeros((), it))
    neg = ctx.emit("less", [k, zero], x.shape, np.bool_, compute=it)
    flipped = ctx.emit("bitwise_xor", [k, ctx.const(np.array(np.iinfo(it).max, it))],
                       x.shape, it)
    return ctx.emit("where", [neg, flipped, k], x.shape, it)


@lowers("compare")
def _compare(ctx: Lowering, ins: Instruction) -> Value:
    a, b = ctx.operand(ins, 0, lazy=True), ctx.operand(ins, 1, lazy=True)
    if tuple(a.shape) != ins.shape.dims or tuple(b.shape) != ins.shape.dims or \
            a.dtype != b.dtype:
        raise ctx.malformed(ins, f"operands {a.dtype.name}{list(a.shape)} and "
                                 f"{b.dtype.name}{list(b.shape)} for "
                                 f"{ins.shape}")
    direction = ins.comparison_direction
    if direction not in _COMPARE:
        raise ctx.malformed(ins, f"comparison_direction {direction!r}")
    kind = ins.comparison_type or ("FLOAT" if _is_float(a.dtype) else
                                   "UNSIGNED" if a.dtype.kind in "ub" else "SIGNED")
    if kind == "TOTALORDER" and _is_float(a.dtype):
        a = total_order_key(ctx, ctx.materialize(a))
        b = total_order_key(ctx, ctx.materialize(b))
    elif kind not in ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED", "PARTIALORDER"):
        raise ctx.unsupported(ins, f"comparison_type {kind!r}")
    elif kind in ("SIGNED", "UNSIGNED") and _is_float(a.dtype):
        raise ctx.malformed(ins, f"comparison_type {kind} of {a.dtype.name}")
    return ctx.elementwise(_COMPARE[direction], [a, b], ins.shape.dims, np.bool_,
                           compute=a.dtype)


# -- dot ------------------------------------------------------------------------


@lowers("dot")
def _dot(ctx: Lowering, ins: Instruction) -> Value:
    lhs, rhs = ctx.operand(ins, 0), ctx.operand(ins, 1)
    lc, rc, lb, rb = ins.dot_dimension_numbers
    ln, rn = len(lhs.shape), len(rhs.shape)
    ok = (len(lc) == len(rc) and len(lb) == len(rb)
          and len(set(lc + lb)) == len(lc) + len(lb)
          and len(set(rc + rb)) == len(rc) + len(rb)
          and all(0 <= d < ln for d in lc + lb)
          and all(0 <= d < rn for d in rc + rb)
          and all(lhs.shape[i] == rhs.shape[j] for i, j in zip(lc, rc))
          and all(lhs.shape[i] == rhs.shape[j] for i, j in zip(lb, rb)))
    if not ok:
        raise ctx.malformed(ins, f"dot dimension numbers (lhs contracting {lc}, "
                                 f"rhs contracting {rc}, lhs batch {lb}, rhs "
                                 f"batch {rb}) do not fit {list(lhs.shape)} and "
                                 f"{list(rhs.shape)}")
    lf = [d for d in range(ln) if d not in lc and d not in lb]
    rf = [d for d in range(rn) if d not in rc and d not in rb]
    batch = [lhs.shape[d] for d in lb]
    m = int(np.prod([lhs.shape[d] for d in lf], dtype=np.int64))
    n = int(np.prod([rhs.shape[d] for d in rf], dtype=np.int64))
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    want = tuple(batch + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf])
    if want != ins.shape.dims:
        raise ctx.malformed(ins, f"the dot's result has shape {list(want)}")
    bsz = int(np.prod(batch, dtype=np.int64))
    # lhs -> [batch..., m, k], rhs -> [batch..., k, n]; batch dims merged.
    a = ctx.transpose(lhs, lb + lf + lc)
    b = ctx.transpose(rhs, rb + rc + rf)
    lead = [bsz] if batch else []
    a = ctx.reshape(a, lead + [m, k])
    b = ctx.reshape(b, lead + [k, n])
    dt = ins.shape.dtype
    out = ctx.emit("matmul", [a, b], lead + [m, n], dt, compute=dt)
    return ctx.reshape(out, ins.shape.dims)


# -- reduce ---------------------------------------------------------------------

# to_apply root -> (emulator reduction, identity per dtype kind).
_REDUCERS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
             "and": "min", "or": "max"}


def _identity_of(kind: str, dt: np.dtype):
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if dt == np.bool_:
        return kind == "min"
    if _is_float(dt):
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dt)
    return info.min if kind == "max" else info.max


# Unary instructions that leave a scalar's value as it is (up to the
# rounding of a convert, which a combiner's accumulation type is): what
# producers wrap a combiner's operands and result in.  neuronx-cc writes
# copy(p1) for assignment; XLA upcasts bfloat16 reductions as
# convert(add(convert(p0), convert(p1))).
_VALUE_WRAPPERS = ("copy", "convert", "bitcast", "reshape")


def _unwrapped(comp: Computation, ins: Instruction) -> Instruction:
    """``ins`` with the _VALUE_WRAPPERS around it removed."""
    seen = 0
    while ins.opcode in _VALUE_WRAPPERS and len(ins.operand_ids) == 1 and \
            ins.operand_ids[0] in comp.by_id and seen < len(comp.instructions):
        inner = comp.by_id[ins.operand_ids[0]]
        if ins.opcode == "convert" and not _same_value_convert(inner, ins):
            break
        ins = inner
        seen += 1
    return ins


def _same_value_convert(src: Instruction, dst: Instruction) -> bool:
    """A convert that keeps the value: to the same type, or between float
    types (an accumulation type and back); not one that truncates a float
    to an integer or wraps an integer."""
    if not (src.shape.is_array and dst.shape.is_array):
        return False
    a, b = src.shape.dtype, dst.shape.dtype
    return a == b or (_is_float(a) and _is_float(b))


def _two_parameters(comp: Computation) -> dict[int, int] | None:
    """Instruction id -> parameter number, when ``comp`` has exactly the two
    parameters 0 and 1."""
    params = {i.id: i.parameter_number for i in comp.instructions
              if i.opcode == "parameter"}
    return params if sorted(params.values()) == [0, 1] else None


def _binary_reducer(comp: Computation) -> str | None:
    """The opcode of ``to_apply`` when it is ``op(p0, p1)`` (either order),
    through value wrappers around the result and each operand."""
    params = _two_parameters(comp)
    root = _unwrapped(comp, comp.root)
    if params is None or len(root.operand_ids) != 2 or \
            any(o not in comp.by_id for o in root.operand_ids):
        return None
    got = sorted(params.get(_unwrapped(comp, comp.by_id[o]).id, -1)
                 for o in root.operand_ids)
    return root.opcode if got == [0, 1] else None


def _is_assignment(comp: Computation) -> bool:
    """Whether ``to_apply`` returns its second parameter (through value
    wrappers): a scatter that overwrites."""
    params = _two_parameters(comp)
    root = _unwrapped(comp, comp.root)
    return params is not None and params.get(root.id) == 1


@lowers("reduce")
def _reduce(ctx: Lowering, ins: Instruction) -> Value:
    n_ops = len(ins.operand_ids)
    if n_ops % 2 or n_ops == 0:
        raise ctx.malformed(ins, f"{n_ops} operands: reduce takes N inputs and "
                                 f"N initial values")
    n = n_ops // 2
    xs = [ctx.operand(ins, k) for k in range(n)]
    inits = [ctx.operand(ins, n + k) for k in range(n)]
    dims = sorted(set(ins.dimensions))
    shape = xs[0].shape
    if any(x.shape != shape for x in xs) or any(i.shape != () for i in inits) \
            or any(not 0 <= d < len(shape) for d in dims):
        raise ctx.malformed(ins, "inputs of different shapes, non-scalar "
                                 "initial values or dimensions out of range")
    out_shape = tuple(d for i, d in enumerate(shape) if i not in dims)
    comp = ctx.computation(ins, 0)
    if n == 1:
        return _reduce_one(ctx, ins, xs[0], inits[0], dims, out_shape,
                           _binary_reducer(comp), comp, 1)
    ops = _separable_reducer(comp, n)
    if ops is not None:
        # Each output reduces its own input (e.g. two sums at once).
        return tuple(_reduce_one(ctx, ins, x, init, dims, out_shape, op, comp,
                                 n + k, ins.shape.tuple_shapes[k].dtype)
                     for k, (x, init, op) in enumerate(zip(xs, inits, ops)))
    if n == 2:
        return _reduce_arg(ctx, ins, xs, inits, dims, out_shape, comp)
    raise ctx.unsupported(ins, f"a variadic reduce of {n} inputs whose "
                               f"to_apply ({comp.name!r}) is neither separable "
                               f"nor argmax/argmin")


def _separable_reducer(comp: Computation, n: int) -> list[str] | None:
    """The opcodes when ``to_apply`` returns (op_k(p_k, p_{n+k}))_k, each
    output combining only its own accumulator and element."""
    root = comp.root
    if root.opcode != "tuple" or len(root.operand_ids) != n:
        return None
    params = {i.id: i.parameter_number for i in comp.instructions
              if i.opcode == "parameter"}
    if len(params) != 2 * n:
        return None
    ops = []
    for k, oid in enumerate(root.operand_ids):
        e = comp.by_id[oid]
        if len(e.operand_ids) != 2 or \
                sorted(params.get(o, -1) for o in e.operand_ids) != [k, n + k]:
            return None
        ops.append(e.opcode)
    return ops


def _reduce_one(ctx: Lowering, ins: Instruction, x: Buf, init: Buf,
                dims: list[int], out_shape: tuple[int, ...],
                root_op: str | None, comp: Computation, init_operand: int,
                dt: np.dtype | None = None) -> Value:
    dt = ins.shape.dtype if dt is None else dt
    kind = _REDUCERS.get(root_op or "")
    if kind is None or (root_op in ("and", "or") and dt != np.bool_) or \
            (dt == np.bool_ and root_op in ("add", "multiply")):
        raise ctx.unsupported(ins, f"a reduce whose to_apply "
                                   f"({comp.name!r}, root "
                                   f"{comp.root.opcode!r}) is not add, "
                                   f"multiply, maximum, minimum, and, or of its "
                                   f"parameters")
    if x.dtype != dt or init.dtype != dt:
        raise ctx.malformed(ins, f"reduce of {x.dtype.name} with a "
                                 f"{init.dtype.name} initial value to {dt.name}")
    count = int(np.prod([x.shape[d] for d in dims], dtype=np.int64))
    if count == 0:
        return ctx.broadcast_to(init, out_shape)
    if not dims:
        r = x
    else:
        r = ctx.emit(kind, [x], out_shape, dt, axes=dims, keepdims=False)
    init_value = ctx.constant_of(ins, init_operand)
    if init_value is not None and init_value.size == 1:
        ident = _identity_of(kind, dt)
        v = init_value.reshape(()).item()
        if v == ident and not (kind == "sum" and _is_float(dt) and
                               np.signbit(init_value.reshape(()))):
            return r
    # A non-identity initial value: combined once, as XLA folds it in.
    op = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum"}[kind]
    if dt == np.bool_:
        op = "logical_or" if kind == "max" else "logical_and"
    return ctx.emit(op, [r, init], out_shape, dt)


# A scalar evaluator of small HLO computations (reducers), used to recognise
# what a variadic to_apply computes; only the opcodes such reducers use.
def _evaluate(comp: Computation, args: list) -> list | None:
    vals: dict[int, object] = {}
    with np.errstate(all="ignore"):
        for i in comp.instructions:
            # (parse_module checked the operand counts of these opcodes)
            ops = [vals[o] for o in i.operand_ids]
            op = i.opcode
            if op == "parameter":
                if not 0 <= i.parameter_number < len(args):
                    return None
                v = args[i.parameter_number]
            elif op == "constant" and i.literal is not None and not i.shape.is_tuple:
                v = np.asarray(i.literal.value).reshape(())[()]
            elif op == "compare":
                d = i.comparison_direction
                a, b = ops
                v = {"EQ": a == b, "NE": a != b, "GT": a > b, "GE": a >= b,
                     "LT": a < b, "LE": a <= b}.get(d)
                if v is None:
                    return None
                v = np.bool_(v)
            elif op == "select":
                v = ops[1] if ops[0] else ops[2]
            elif op in ("and", "or", "xor") and all(isinstance(o, np.bool_) for o in ops):
                v = {"and": ops[0] & ops[1], "or": ops[0] | ops[1],
                     "xor": ops[0] ^ ops[1]}[op]
            elif op == "not" and isinstance(ops[0], np.bool_):
                v = ~ops[0]
            elif op == "maximum":
                v = np.maximum(*ops)
            elif op == "minimum":
                v = np.minimum(*ops)
            elif op == "tuple":
                v = tuple(ops)
            elif op == "copy":
                v = ops[0]
            else:
                return None
            vals[i.id] = v
    out = vals[comp.root_id]
    return list(out) if isinstance(out, tuple) else None


def _argreduce_kind(comp: Computation, vdt: np.dtype, idt: np.dtype) -> str | None:
    """"argmax" or "argmin" when ``comp`` (acc_value, acc_index, value,
    index) -> (value, index) keeps the first extreme of a left-to-right
    scan, NaN counting as the extreme (what NumPy's argmax/argmin return),
    else None."""
    if _is_float(vdt):
        samples = [np.nan, -np.inf, -2.5, -0.0, 0.0, 1.0, 3.0, np.inf]
    elif vdt == np.bool_:
        samples = [False, True]
    else:
        info = np.iinfo(vdt)
        samples = [info.min, 0, 1, 7, info.max]
    values = [vdt.type(s) for s in samples]
    for kind in ("argmax", "argmin"):
        ok = True
        for va in values:
            for vb in values:
                ia, ib = idt.type(1), idt.type(2)
                got = _evaluate(comp, [va, ia, vb, ib])
                if got is None or len(got) != 2:
                    return None
                a_nan = va != va
                b_nan = vb != vb
                if a_nan:
                    keep_a = True
                elif b_nan:
                    keep_a = False
                else:
                    keep_a = bool(va >= vb) if kind == "argmax" else bool(va <= vb)
                want = (va, ia) if keep_a else (vb, ib)
                same_v = (got[0] != got[0] and want[0] != want[0]) or got[0] == want[0]
                if not same_v or got[1] != want[1]:
                    ok = False
                    break
            if not ok:
                break
        if ok:
            return kind
    return None


def _is_iota_along(ctx: Lowering, ins: Instruction, k: int, dim: int) -> bool:
    """Operand ``k`` of ``ins`` counts 0, 1, ... along ``dim`` (an iota,
    maybe broadcast)."""
    p = ctx.producer(ins, k)
    target = dim
    while p.opcode in ("broadcast", "copy"):
        if p.opcode == "broadcast":
            if target not in p.dimensions:
                return False
            target = list(p.dimensions).index(target)
        p = ctx.producer(p, 0)
    return p.opcode == "iota" and list(p.dimensions or [0]) == [target]


def _reduce_arg(ctx: Lowering, ins: Instruction, xs: list[Buf], inits: list[Buf],
                dims: list[int], out_shape: tuple[int, ...],
                comp: Computation) -> Value:
    values, index = xs
    vdt, idt = values.dtype, index.dtype
    kind = _argreduce_kind(comp, vdt, idt) if idt.kind in "iu" else None
    what = (f"a variadic reduce whose to_apply ({comp.name!r}) is not the "
            f"argmax/argmin pattern over an iota")
    if kind is None or len(dims) != 1 or not _is_iota_along(ctx, ins, 1, dims[0]):
        raise ctx.unsupported(ins, what)
    init_v, init_i = ctx.constant_of(ins, 2), ctx.constant_of(ins, 3)
    ident = _identity_of("max" if kind == "argmax" else "min", vdt)
    if init_v is None or init_i is None or init_v.reshape(()).item() != ident \
            or init_i.reshape(()).item() != 0:
        raise ctx.unsupported(ins, what + " (initial values not "
                                   f"({ident}, 0))")
    axis = dims[0]
    if values.shape[axis] == 0:
        return (ctx.broadcast_to(inits[0], out_shape),
                ctx.broadcast_to(inits[1], out_shape))
    red = "max" if kind == "argmax" else "min"
    v = ctx.emit(red, [values], out_shape, vdt, axes=[axis], keepdims=False)
    i64 = ctx.emit(kind, [values], out_shape, np.int64, axis=axis, keepdims=False)
    return (v, ctx.cast(i64, idt))


# -- reduce-precision -------------------------------------------------------------

# (exponent_bits, mantissa_bits) -> the type that rounds to exactly those
# (round to nearest even, overflow to infinity, NaN kept).
_PRECISIONS = {(8, 7): "bfloat16", (5, 10): "float16", (5, 2): "float8_e5m2"}


@lowers("reduce-precision")
def _reduce_precision(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0, lazy=True)
    _same_shape(ctx, ins, x)
    bits = (ins.raw.int64(18), ins.raw.int64(19))
    if not _is_float(x.dtype):
        raise ctx.malformed(ins, f"reduce-precision of {x.dtype.name}")
    own = ml_dtypes.finfo(x.dtype)
    if bits == (own.nexp, own.nmant):
        return x
    if bits not in _PRECISIONS or bits[0] > own.nexp or bits[1] > own.nmant:
        raise ctx.unsupported(ins, f"exponent_bits={bits[0]} "
                                   f"mantissa_bits={bits[1]} of {x.dtype.name}")
    narrow = np.dtype(getattr(ml_dtypes, _PRECISIONS[bits], None) or _PRECISIONS[bits])
    return ctx.cast(ctx.cast(x, narrow), x.dtype)


@lowers("tan")
def _tan(ctx: Lowering, ins: Instruction) -> Value:
    # sin/cos in at least float32 (16- and 8-bit floats round once, at the
    # end), within a few ulp of XLA's tan.
    x = ctx.operand(ins, 0, lazy=True)
    _same_shape(ctx, ins, x)
    dt = ins.shape.dtype
    if not _is_float(dt):
        raise ctx.malformed(ins, f"tan of {dt.name}: a float operation")
    wide = dt if dt.itemsize >= 4 else np.dtype(np.float32)
    xw = ctx.cast(x, wide)
    s = ctx.elementwise("sin", [xw], x.shape, wide)
    c = ctx.elementwise("cos", [xw], x.shape, wide)
    return ctx.cast(ctx.elementwise("div", [s, c], x.shape, wide), dt)


# -- bit counting -------------------------------------------------------------------

_UNSIGNED_OF = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _popcount(ctx: Lowering, u: Buf) -> Buf:
    """Set bits per element of the unsigned ``u`` (SWAR: pairs, nibbles,
    bytes, then a multiply that sums the bytes into the top one)."""
    dt, w = u.dtype, u.dtype.itemsize * 8
    sh = tuple(u.shape)

    def c(v: int) -> Buf:
        return ctx.const(np.array(v & ((1 << w) - 1), dt))

    def ew(op: str, a: Buf, b: Buf) -> Buf:
        return ctx.elementwise(op, [a, b], sh, dt)

    ones = (1 << w) - 1
    m1, m2, m4 = ones // 3, ones // 5, ones // 17
    x = ew("sub", u, ew("bitwise_and", ew("shift_right_logical", u, c(1)), c(m1)))
    x = ew("add", ew("bitwise_and", x, c(m2)),
           ew("bitwise_and", ew("shift_right_logical", x, c(2)), c(m2)))
    x = ew("bitwise_and", ew("add", x, ew("shift_right_logical", x, c(4))), c(m4))
    if w > 8:
        x = ew("shift_right_logical", ew("mul", x, c(ones // 255)), c(w - 8))
    return x


@lowers("popcnt", "count-leading-zeros")
def _bit_count(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0)
    _same_shape(ctx, ins, x)
    dt = ins.shape.dtype
    if dt.kind not in "iu":
        raise ctx.malformed(ins, f"{ins.opcode} of {dt.name}: an integer operation")
    udt = np.dtype(_UNSIGNED_OF[dt.itemsize])
    u = ctx.emit("bitcast", [x], x.shape, udt) if dt != udt else x
    if ins.opcode == "count-leading-zeros":
        # Every bit below the highest set one set too; the zeros above it
        # are the width minus their count.
        for k in (1, 2, 4, 8, 16, 32):
            if k < dt.itemsize * 8:
                u = ctx.elementwise("bitwise_or", [u, ctx.elementwise(
                    "shift_right_logical", [u, ctx.const(np.array(k, udt))],
                    x.shape, udt)], x.shape, udt)
        n = ctx.elementwise("sub", [ctx.const(np.array(dt.itemsize * 8, udt)),
                                    _popcount(ctx, u)], x.shape, udt)
    else:
        n = _popcount(ctx, u)
    return ctx.emit("bitcast", [n], x.shape, dt) if dt != udt else n


@lowers("add-dependency")
def _add_dependency(ctx: Lowering, ins: Instruction) -> Value:
    # (the ordering token means nothing to a program that runs in order)
    return ctx.value(ins, 0, lazy=True)


@lowers("get-dimension-size")
def _get_dimension_size(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.value(ins, 0, lazy=True)
    if isinstance(x, tuple) or len(ins.dimensions) != 1 or \
            not 0 <= ins.dimensions[0] < len(x.shape):
        raise ctx.malformed(ins, "needs an array operand and one dimension")
    return ctx.const(np.array(x.shape[ins.dimensions[0]], ins.shape.dtype))
