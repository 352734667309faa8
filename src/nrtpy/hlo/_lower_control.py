"""Lowerings of control flow (while, conditional) and of the collectives.

``while`` and ``conditional`` become the emulator's control ops with nested
op lists (hlo-contract section C).  A loop's state tuple lives in buffers
of its own: the ``cond`` list computes the predicate from them, the
``body`` list computes the next state into fresh temporaries and then
copies it into the state buffers.  A conditional's branches each write the
result into the same buffers.

The collectives become the contract's ops (section D), one per operand,
with the instruction's replica groups and its to_apply recognised as sum,
prod, max or min.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nrtpy.hlo._lower import Buf, Lowering, Value, lowers
from nrtpy.hlo._lower_ops import _binary_reducer
from nrtpy.hlo._module import Computation, Instruction, Shape


def _leaves(v: Value) -> list[Buf]:
    if isinstance(v, tuple):
        return [leaf for x in v for leaf in _leaves(x)]
    return [v]


def _rebuild(v: Value, it) -> Value:
    """``v``'s tuple structure with the leaves taken from ``it``."""
    if isinstance(v, tuple):
        return tuple(_rebuild(x, it) for x in v)
    return next(it)


def _fresh(ctx: Lowering, shape: Shape) -> Value:
    """New buffers of ``shape`` (a tuple of them for tuple shapes)."""
    if shape.is_tuple:
        return tuple(_fresh(ctx, s) for s in shape.tuple_shapes)
    return ctx.temp(shape.dims, shape.dtype)


# Ops whose out may be their first operand, changed in place (the IN_PLACE
# rows of the emulator's op table).
_IN_PLACE = ("dynamic_update_slice", "update_slice", "scatter")


def _names(op: dict[str, Any], key: str = "in") -> set[str]:
    """The buffers an op, and the op lists nested in it, read (``key``
    "in") or write ("out")."""
    if key == "in":
        names = set(op.get("in", [])) | ({op["pred"]} if "pred" in op else set())
    else:
        names = {op["out"]} if "out" in op else set()
    for o in _nested(op):
        names |= _names(o, key)
    return names


def _nested(op: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for k in ("cond", "body") for o in op.get(k, [])] + \
        [o for br in op.get("branches", []) for o in br]


def _rename_reads(op: dict[str, Any], old: str, new: str) -> None:
    if "in" in op:
        op["in"] = [new if n == old else n for n in op["in"]]
    if op.get("pred") == old:
        op["pred"] = new
    for o in _nested(op):
        _rename_reads(o, old, new)


def _update_in_place(ctx: Lowering, dst: Buf, src: Buf, sources: list[str]) -> bool:
    """Let the op that made ``src`` from ``dst`` write ``dst`` in place,
    when it is an in-place op of the current list whose operand is
    ``dst``, and no op after it uses ``dst`` or writes ``src`` (those
    that read ``src`` then read ``dst``, which holds the same value): a
    KV cache updated each step is not copied whole, twice, per iteration.
    Whether it did; then ``dst`` already holds the value."""
    ops = ctx.program.ops
    if sources.count(src.name) != 1 or dst.name in sources:
        return False
    for k in range(len(ops) - 1, -1, -1):
        op = ops[k]
        if op.get("out") == src.name:
            break
        if src.name in _names(op, "out") or dst.name in _names(op) | _names(op, "out"):
            return False
    else:
        return False
    if op["op"] not in _IN_PLACE or op["in"][0] != dst.name or \
            src.name in op["in"] or dst.name in op["in"][1:]:
        return False
    op["out"] = dst.name
    for later in ops[k + 1:]:
        _rename_reads(later, src.name, dst.name)
    return True


def _assign(ctx: Lowering, dst: list[Buf], src: list[Buf]) -> None:
    """Copy the values ``src`` into the buffers ``dst`` at once: a source
    that is itself one of ``dst`` (a loop passing state around) is saved
    first, so that no copy reads a buffer already overwritten.  A source
    made by updating its own destination in place is written there."""
    sources = [s.name for s in src]
    done = {d.name for d, s in zip(dst, src)
            if s.name != d.name and _update_in_place(ctx, d, s, sources)}
    targets = {b.name for b in dst}
    saved = []
    for d, s in zip(dst, src):
        if s.name != d.name and s.name in targets:
            s = ctx.copy(s)
        saved.append(s)
    for d, s in zip(dst, saved):
        if s.name != d.name and d.name not in done:
            ctx.emit_into(d, "copy", [s])


def _scalar_selector(ctx: Lowering, ins: Instruction, b: Buf, what: str) -> Buf:
    if b.shape != () or not (b.dtype == np.bool_ or b.dtype.kind in "iu"):
        raise ctx.malformed(ins, f"the {what} is {b.dtype.name}{list(b.shape)}, "
                                 f"a scalar pred or integer is needed")
    return b


# -- while ------------------------------------------------------------------------


def _while_parts(ctx: Lowering, ins: Instruction) -> tuple[Computation, Computation]:
    """(condition, body): XLA lists the body first; told apart by their
    results (the condition's is a scalar pred)."""
    if len(ins.called_computation_ids) != 2:
        raise ctx.malformed(ins, "a while calls a condition and a body")
    a, b = ctx.computation(ins, 0), ctx.computation(ins, 1)

    def is_cond(c: Computation) -> bool:
        s = c.root.shape
        return not s.is_tuple and s.element_type == 1 and s.dims == ()

    if is_cond(b) and not is_cond(a):
        return b, a
    if is_cond(a) and not is_cond(b):
        return a, b
    return b, a


@lowers("while")
def _while(ctx: Lowering, ins: Instruction) -> Value:
    if len(ins.operand_ids) != 1:
        raise ctx.malformed(ins, f"a while takes one operand, not "
                                 f"{len(ins.operand_ids)}")
    cond, body = _while_parts(ctx, ins)
    init = ctx.value(ins, 0)
    # The loop's own state buffers, initialised with copies.
    state_leaves = [ctx.copy(leaf) for leaf in _leaves(init)]
    state = _rebuild(init, iter(state_leaves))
    with ctx.op_list() as cond_ops:
        pred = ctx.materialize(ctx.inline(cond, [state]))
        if isinstance(pred, tuple):
            raise ctx.malformed(ins, f"the condition {cond.name!r} returns a "
                                     f"tuple")
        _scalar_selector(ctx, ins, pred, "condition's result")
    with ctx.op_list() as body_ops:
        nxt = ctx.inline(body, [state])
        new_leaves = _leaves(ctx.materialize(nxt))
        if len(new_leaves) != len(state_leaves) or any(
                n.shape != s.shape or n.dtype != s.dtype
                for n, s in zip(new_leaves, state_leaves)):
            raise ctx.malformed(ins, f"the body {body.name!r} returns a state "
                                     f"of another shape")
        _assign(ctx, state_leaves, new_leaves)
    ctx.emit_raw({"op": "while", "in": [], "cond": cond_ops, "pred": pred.name,
                  "body": body_ops})
    return state


# -- conditional ----------------------------------------------------------------------


@lowers("conditional")
def _conditional(ctx: Lowering, ins: Instruction) -> Value:
    n = len(ins.called_computation_ids)
    if n < 1 or len(ins.operand_ids) != n + 1:
        raise ctx.malformed(ins, f"{len(ins.operand_ids)} operands for {n} "
                                 f"branches")
    sel = _scalar_selector(ctx, ins, ctx.operand(ins, 0), "selector")
    if sel.dtype == np.bool_ and n != 2:
        raise ctx.malformed(ins, f"a pred selector with {n} branches")
    branches = [ctx.computation(ins, k) for k in range(n)]
    # A constant selector: only its branch.
    cv = ctx.constant_of(ins, 0)
    if cv is not None and cv.size == 1:
        v = cv.reshape(()).item()
        k = (0 if v else 1) if sel.dtype == np.bool_ else \
            (int(v) if 0 <= int(v) < n else n - 1)
        return ctx.inline(branches[k], [ctx.value(ins, k + 1)])
    out = _fresh(ctx, ins.shape)
    out_leaves = _leaves(out)
    # Operands are written out here, before the branches: a lazy broadcast
    # materialized inside one branch would be unwritten in the others and
    # after the conditional.
    args = [ctx.value(ins, k + 1) for k in range(n)]
    lists = []
    for k, comp in enumerate(branches):
        with ctx.op_list() as ops:
            v = ctx.inline(comp, [args[k]])
            leaves = _leaves(ctx.materialize(v))
            if len(leaves) != len(out_leaves):
                raise ctx.malformed(ins, f"branch {comp.name!r} returns "
                                         f"{len(leaves)} arrays, not "
                                         f"{len(out_leaves)}")
            for dst, src in zip(out_leaves, leaves):
                ctx.emit_into(dst, "copy", [src])
        lists.append(ops)
    ctx.emit_raw({"op": "conditional", "in": [sel.name], "branches": lists})
    return out


# -- collectives ------------------------------------------------------------------------


def _replica_groups(ctx: Lowering, ins: Instruction) -> list[list[int]] | None:
    """The instruction's replica groups (replica_groups, or the newer
    collective_device_list, explicit or as an iota list); None for one
    group of all ranks."""
    groups = [g.ints(1) for g in ins.raw.messages(49, "ReplicaGroup")]
    dl = ins.raw.message(87, "CollectiveDeviceListProto")
    if not groups and dl is not None:
        groups = [g.ints(1) for g in dl.messages(1, "ReplicaGroup")]
        iota = dl.message(2, "IotaReplicaGroupListProto")
        if not groups and iota is not None:
            ng, per = iota.int64(1), iota.int64(2)
            dims, perm = iota.ints(3), iota.ints(4)
            try:
                ids = np.arange(ng * per).reshape(dims or [ng * per])
                ids = ids.transpose(perm or range(ids.ndim)).reshape(ng, per)
            except ValueError:
                raise ctx.malformed(ins, "an iota replica group list that "
                                         "does not fit its sizes") from None
            groups = ids.tolist()
    groups = [g for g in groups if g]
    if not groups:
        return None
    seen: set[int] = set()
    for g in groups:
        for r in g:
            if r < 0 or r in seen:
                raise ctx.malformed(ins, f"replica groups {groups}: rank {r} "
                                         f"is negative or appears twice")
            seen.add(r)
    return [[int(r) for r in g] for g in groups]


# The combiners of all-reduce and reduce-scatter that Neuron's collectives
# take: add, maximum and minimum (and on pred, or and and, which are
# maximum and minimum there).  neuronx-cc refuses multiply, so a module
# that would fail on hardware fails here too, though the emulator's
# all_reduce op has a product (nrtpy.neff.all_reduce(op="prod")).
_COLLECTIVE_REDUCE = {"add": "sum", "maximum": "max", "minimum": "min",
                      "or": "max", "and": "min"}


def _reduce_kind(ctx: Lowering, ins: Instruction, dt: np.dtype) -> str:
    comp = ctx.computation(ins, 0)
    op = _binary_reducer(comp)
    kind = _COLLECTIVE_REDUCE.get(op or "")
    if op == "multiply":
        raise ctx.unsupported(ins, f"a to_apply ({comp.name!r}) that multiplies: "
                                   f"Neuron's collectives reduce with add, "
                                   f"maximum or minimum only, and neuronx-cc "
                                   f"refuses multiply")
    if kind is None or (op in ("and", "or") and dt != np.bool_):
        raise ctx.unsupported(ins, f"a to_apply ({comp.name!r}, root "
                                   f"{comp.root.opcode!r}) that is not add, "
                                   f"maximum or minimum of its two parameters")
    return kind


def _per_operand(ctx: Lowering, ins: Instruction, emit) -> Value:
    xs = ctx.operands(ins)
    shapes = ins.shape.tuple_shapes if ins.shape.is_tuple else (ins.shape,)
    if len(xs) != len(shapes):
        raise ctx.malformed(ins, f"{len(xs)} operands for the result {ins.shape}")
    outs = []
    for x, s in zip(xs, shapes):
        if s.is_tuple or s.dtype != x.dtype:
            raise ctx.malformed(ins, f"operand {x.dtype.name}{list(x.shape)} "
                                     f"for a result {s}")
        outs.append(emit(x, s))
    return tuple(outs) if ins.shape.is_tuple else outs[0]


def _group_size(ctx: Lowering, ins: Instruction, groups) -> int | None:
    if groups is None:
        return None
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise ctx.malformed(ins, f"replica groups {groups} of different sizes")
    return sizes.pop()


def _attrs(groups) -> dict[str, Any]:
    return {"replica_groups": groups} if groups is not None else {}


@lowers("all-reduce")
def _all_reduce(ctx: Lowering, ins: Instruction) -> Value:
    groups = _replica_groups(ctx, ins)

    def emit(x: Buf, s: Shape) -> Buf:
        if tuple(x.shape) != s.dims:
            raise ctx.malformed(ins, f"all-reduce of {list(x.shape)} to {s}")
        return ctx.emit("all_reduce", [x], s.dims, s.dtype,
                        reduce=_reduce_kind(ctx, ins, x.dtype), **_attrs(groups))

    return _per_operand(ctx, ins, emit)


def _axis(ctx: Lowering, ins: Instruction, rank: int) -> int:
    if len(ins.dimensions) != 1 or not 0 <= ins.dimensions[0] < rank:
        raise ctx.malformed(ins, f"dimensions {list(ins.dimensions)}: one "
                                 f"dimension of the operand is needed")
    return ins.dimensions[0]


@lowers("all-gather")
def _all_gather(ctx: Lowering, ins: Instruction) -> Value:
    groups = _replica_groups(ctx, ins)
    g = _group_size(ctx, ins, groups)

    def emit(x: Buf, s: Shape) -> Buf:
        axis = _axis(ctx, ins, len(x.shape))
        want = list(x.shape)
        if g is not None:
            want[axis] *= g
        if len(s.dims) != len(x.shape) or (g is not None and list(s.dims) != want) \
                or (g is None and (x.shape[axis] == 0 or s.dims[axis] % x.shape[axis])):
            raise ctx.malformed(ins, f"all-gather of {list(x.shape)} along "
                                     f"{axis} to {s}")
        return ctx.emit("all_gather", [x], s.dims, s.dtype, axis=axis,
                        **_attrs(groups))

    return _per_operand(ctx, ins, emit)


@lowers("reduce-scatter")
def _reduce_scatter(ctx: Lowering, ins: Instruction) -> Value:
    groups = _replica_groups(ctx, ins)
    g = _group_size(ctx, ins, groups)

    def emit(x: Buf, s: Shape) -> Buf:
        axis = _axis(ctx, ins, len(x.shape))
        if len(s.dims) != len(x.shape) or s.dims[axis] == 0 or \
                x.shape[axis] % s.dims[axis] or \
                (g is not None and s.dims[axis] * g != x.shape[axis]):
            raise ctx.malformed(ins, f"reduce-scatter of {list(x.shape)} along "
                                     f"{axis} to {s}")
        return ctx.emit("reduce_scatter", [x], s.dims, s.dtype, axis=axis,
                        reduce=_reduce_kind(ctx, ins, x.dtype), **_attrs(groups))

    return _per_operand(ctx, ins, emit)


@lowers("all-to-all")
def _all_to_all(ctx: Lowering, ins: Instruction) -> Value:
    groups = _replica_groups(ctx, ins)
    if not ins.dimensions:
        raise ctx.unsupported(ins, "a tuple all-to-all (no split dimension)")

    def emit(x: Buf, s: Shape) -> Buf:
        axis = _axis(ctx, ins, len(x.shape))
        if tuple(s.dims) != tuple(x.shape):
            raise ctx.malformed(ins, f"all-to-all of {list(x.shape)} to {s}")
        return ctx.emit("all_to_all", [x], s.dims, s.dtype, split_axis=axis,
                        concat_axis=axis, **_attrs(groups))

    return _per_operand(ctx, ins, emit)


@lowers("collective-permute")
def _collective_permute(ctx: Lowering, ins: Instruction) -> Value:
    pairs = [[m.int64(1), m.int64(2)] for m in ins.raw.messages(52, "SourceTarget")]
    srcs, dsts = [p[0] for p in pairs], [p[1] for p in pairs]
    if any(r < 0 for r in srcs + dsts) or len(set(srcs)) != len(srcs) or \
            len(set(dsts)) != len(dsts):
        raise ctx.malformed(ins, f"source_target_pairs {pairs}: ranks must be "
                                 f"non-negative, sources and targets distinct")
    if len(ins.operand_ids) != 1:
        raise ctx.unsupported(ins, "a collective-permute with in-place "
                                   "operands")

    def emit(x: Buf, s: Shape) -> Buf:
        if tuple(s.dims) != tuple(x.shape):
            raise ctx.malformed(ins, f"collective-permute of {list(x.shape)} "
                                     f"to {s}")
        return ctx.emit("collective_permute", [x], s.dims, s.dtype, pairs=pairs)

    return _per_operand(ctx, ins, emit)
