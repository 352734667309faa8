"""Lowerings of the indexing opcodes: gather, scatter, dynamic-slice,
dynamic-update-slice, pad, reduce-window, convolution, sort and the TopK
custom calls.

All of them reduce to flat index arithmetic: an integer buffer holding, for
each element of the result (or of the updates), the C-order position of
the element it reads (or writes) in the operand seen as 1-D; then one
``take`` (reads) or ``scatter`` (writes, hlo-contract section B).  Index
buffers are int32 when the sizes allow, else int64.  ``take`` fails the
execution on an index outside the operand, so every index is clamped or
masked first, as XLA does: gather and the dynamic slices clamp their start
indices into the operand; scatter skips a whole update window that does
not fit (its flat indices become -1, which ``scatter`` skips).

Index patterns that do not depend on the data (window offsets, pads,
convolution patches) are constants when small and computed with ``iota``
and arithmetic otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

import numpy as np

from nrtpy import _dtypes
from nrtpy.hlo._lower import Buf, Lowering, Value, lowers
from nrtpy.hlo._lower_ops import (_binary_reducer, _is_assignment, _is_iota_along,
                                   total_order_key)
from nrtpy.hlo._module import Computation, Instruction

# Index patterns of at most this many elements are constants of the NEFF.
_CONST_INDEX_LIMIT = 1 << 16


def _prod(xs: Sequence[int]) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def _strides(shape: Sequence[int]) -> list[int]:
    """C-order element strides."""
    out = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        out[d] = out[d + 1] * int(shape[d + 1])
    return out


def _idt(limit: int) -> np.dtype:
    """The index dtype for values in [-limit, limit]."""
    return np.dtype(np.int32) if limit < 2**31 - 1 else np.dtype(np.int64)


def _is_float(dt: np.dtype) -> bool:
    return _dtypes.is_float(dt)


def _is_int(dt: np.dtype) -> bool:
    return np.dtype(dt).kind in "iu"


# -- index arithmetic helpers ----------------------------------------------------


def _affine(ctx: Lowering, shape: Sequence[int], coef: Sequence[int],
            idt: np.dtype, offset: int = 0) -> Buf:
    """A buffer of ``shape``: offset + sum_j i_j * coef[j] (i_j the index
    along axis j).  A constant when small, else iota arithmetic."""
    shape = [int(d) for d in shape]
    if _prod(shape) <= _CONST_INDEX_LIMIT or not shape:
        v = np.full(shape, offset, np.int64)
        for j, (n, c) in enumerate(zip(shape, coef)):
            if c and n > 1:
                line = np.arange(n, dtype=np.int64) * c
                v = v + line.reshape([n if k == j else 1 for k in range(len(shape))])
        return ctx.const(v.astype(idt))
    acc: Buf | None = None
    for j, (n, c) in enumerate(zip(shape, coef)):
        if not c or n == 1:
            continue
        line = ctx.emit("iota", [], (n,), idt, axis=0)
        if c != 1:
            line = ctx.emit("mul", [line, ctx.const(np.array(c, idt))], (n,), idt)
        line = ctx.reshape(line, [n if k == j else 1 for k in range(len(shape))])
        if acc is None:
            acc = line
        else:
            out = [max(a, b) for a, b in zip(acc.shape, line.shape)]
            acc = ctx.emit("add", [acc, line], out, idt)
    if acc is None:
        return ctx.full(offset, shape, idt)
    if offset:
        acc = ctx.emit("add", [acc, ctx.const(np.array(offset, idt))], acc.shape, idt)
    return ctx.broadcast_to(acc, shape)


def _clamp(ctx: Lowering, x: Buf, lo: int, hi: int, idt: np.dtype) -> Buf:
    """The integer buffer ``x`` clamped to [lo, hi] (in its own type, so
    that no value wraps) and converted to ``idt``."""
    dt = x.dtype
    if dt == np.bool_:
        x = ctx.cast(x, np.int8)
        dt = x.dtype
    if not _is_int(dt):
        raise NotImplementedError(f"index of type {dt.name}")
    info = np.iinfo(dt)
    if lo > info.min:
        x = ctx.emit("maximum", [x, ctx.const(np.array(lo, dt))], x.shape, dt)
    if hi < info.max:
        x = ctx.emit("minimum", [x, ctx.const(np.array(max(hi, lo), dt))], x.shape, dt)
    return ctx.cast(x, idt)


def _scaled(ctx: Lowering, x: Buf, c: int, idt: np.dtype) -> Buf:
    if c == 1:
        return x
    return ctx.emit("mul", [x, ctx.const(np.array(c, idt))], x.shape, idt)


def _add(ctx: Lowering, a: Buf | None, b: Buf, idt: np.dtype) -> Buf:
    if a is None:
        return b
    shape = [max(x, y) for x, y in zip(a.shape, b.shape)] if \
        len(a.shape) == len(b.shape) else (a.shape if a.size >= b.size else b.shape)
    return ctx.emit("add", [a, b], shape, idt)


def _component(ctx: Lowering, idx: Buf, ivd: int, k: int) -> Buf:
    """Component ``k`` of the index vectors along ``ivd`` (that dim removed)."""
    shape = list(idx.shape)
    rest = shape[:ivd] + shape[ivd + 1:]
    if shape[ivd] == 1:
        return ctx.reshape(idx, rest)
    start = [0] * len(shape)
    start[ivd] = k
    sl = shape.copy()
    sl[ivd] = 1
    t = ctx.emit("slice", [idx], sl, idx.dtype, start=start, step=[1] * len(shape))
    return ctx.reshape(t, rest)


def _take_flat(ctx: Lowering, x: Buf, index: Buf, rows: int, shape: Sequence[int]) -> Buf:
    """take of ``x`` seen as [count/rows, rows] along axis 0 at ``index``,
    reshaped to ``shape``."""
    data = ctx.reshape(x, [x.size // rows, rows] if rows > 1 else [x.size])
    out_shape = list(index.shape) + ([rows] if rows > 1 else [])
    t = ctx.emit("take", [data, index], out_shape, x.dtype, axis=0)
    return ctx.reshape(t, shape)


def _trailing_rows(shape: Sequence[int], full: Sequence[bool]) -> int:
    """How many trailing dims are read whole (``full[d]``)."""
    t = 0
    for d in range(len(shape) - 1, -1, -1):
        if not full[d]:
            break
        t += 1
    return t


def _empty(ctx: Lowering, ins: Instruction) -> Buf:
    return ctx.full(0, ins.shape.dims, ins.shape.dtype)


# -- gather ---------------------------------------------------------------------


@lowers("gather")
def _gather(ctx: Lowering, ins: Instruction) -> Value:
    x, idx = ctx.operand(ins, 0), ctx.operand(ins, 1)
    dn = ins.raw.message(33, "GatherDimensionNumbers")
    if dn is None:
        raise ctx.malformed(ins, "no gather_dimension_numbers")
    offset_dims, collapsed = dn.ints(1), dn.ints(2)
    start_map, ivd = dn.ints(3), dn.int64(4)
    obatch, ibatch = dn.ints(5), dn.ints(6)
    sizes = ins.raw.ints(34)
    r = len(x.shape)
    if not _is_int(idx.dtype):
        raise ctx.malformed(ins, f"start indices of type {idx.dtype.name}")
    if not 0 <= ivd <= len(idx.shape):
        raise ctx.malformed(ins, f"index_vector_dim {ivd} out of range")
    if ivd == len(idx.shape):
        idx = ctx.reshape(idx, list(idx.shape) + [1])
    nvec = idx.shape[ivd]
    batch_shape = [n for d, n in enumerate(idx.shape) if d != ivd]
    window = [d for d in range(r) if d not in collapsed and d not in obatch]
    ok = (len(sizes) == r and all(0 <= s <= n for s, n in zip(sizes, x.shape))
          and nvec == len(start_map) and len(set(start_map)) == len(start_map)
          and all(0 <= d < r for d in start_map + collapsed + obatch)
          and all(sizes[d] <= 1 for d in collapsed + obatch)
          and len(obatch) == len(ibatch)
          and all(0 <= d < len(idx.shape) and d != ivd for d in ibatch)
          and len(window) == len(offset_dims)
          and offset_dims == sorted(offset_dims))
    out_rank = len(batch_shape) + len(offset_dims)
    if not ok or any(not 0 <= d < out_rank for d in offset_dims):
        raise ctx.malformed(ins, f"gather dimension numbers (offset_dims "
                                 f"{offset_dims}, collapsed_slice_dims "
                                 f"{collapsed}, start_index_map {start_map}, "
                                 f"index_vector_dim {ivd}, slice sizes {sizes})"
                                 f" do not fit operand {list(x.shape)} and "
                                 f"indices {list(idx.shape)}")
    batch_pos = [p for p in range(out_rank) if p not in offset_dims]
    want = [0] * out_rank
    for p, n in zip(batch_pos, batch_shape):
        want[p] = n
    for p, d in zip(offset_dims, window):
        want[p] = sizes[d]
    if tuple(want) != ins.shape.dims:
        raise ctx.malformed(ins, f"the gather's result has shape {want}")
    if ins.shape.size == 0:
        return _empty(ctx, ins)
    idt = _idt(x.size)

    # Whole slices along one axis (embedding lookups, jnp.take): one take
    # along that axis, no per-element indices.
    if len(start_map) == 1 and not obatch:
        a = start_map[0]
        if sizes[a] == 1 and all(sizes[d] == x.shape[d] for d in range(r) if d != a):
            comp = _clamp(ctx, _component(ctx, idx, ivd, 0), 0, x.shape[a] - 1, idt)
            t_shape = list(x.shape[:a]) + batch_shape + list(x.shape[a + 1:])
            t = ctx.emit("take", [x, comp], t_shape, x.dtype, axis=a)
            labels = ([("o", d) for d in range(a)] +
                      [("b", j) for j in range(len(batch_shape))] +
                      [("o", d) for d in range(a + 1, r)])
            labels = [lb for lb in labels if not (lb[0] == "o" and lb[1] in collapsed)]
            if a not in collapsed:
                labels.append(("o", a))
            size = {("b", j): n for j, n in enumerate(batch_shape)}
            size.update({("o", d): x.shape[d] if d != a else 1 for d in range(r)})
            t = ctx.reshape(t, [size[lb] for lb in labels])
            target = [None] * out_rank
            for j, p in enumerate(batch_pos):
                target[p] = ("b", j)
            for p, d in zip(offset_dims, window):
                target[p] = ("o", d)
            return ctx.transpose(t, [labels.index(lb) for lb in target])

    # General case: per-element flat indices.  Trailing operand dims read
    # whole, which are also the trailing result dims, stay rows of the take.
    full = [d in window and sizes[d] == x.shape[d] and d not in start_map
            for d in range(r)]
    t = _trailing_rows(x.shape, full)
    while t and not (len(window) >= t and window[-t:] == list(range(r - t, r))
                     and offset_dims[-t:] == list(range(out_rank - t, out_rank))):
        t -= 1
    lead = list(x.shape[:r - t])
    st = _strides(lead)
    rows = _prod(x.shape[r - t:])
    base: Buf | None = None
    for k, d in enumerate(start_map):
        if d >= r - t:
            continue
        c = _clamp(ctx, _component(ctx, idx, ivd, k), 0, x.shape[d] - sizes[d], idt)
        base = _add(ctx, base, _scaled(ctx, c, st[d], idt), idt)
    for od, sd in zip(obatch, ibatch):
        bpos = sd if sd < ivd else sd - 1
        coef = [st[od] if j == bpos else 0 for j in range(len(batch_shape))]
        base = _add(ctx, base, _affine(ctx, batch_shape, coef, idt), idt)
    out_lead = list(ins.shape.dims[:out_rank - t])
    win_lead = [d for d in window if d < r - t]
    off_lead = [p for p in offset_dims if p < out_rank - t]
    # The base broadcast over window dims, the offsets over batch dims.
    off_coef = [0] * len(out_lead)
    for p, d in zip(off_lead, win_lead):
        off_coef[p] = st[d]
    index = _affine(ctx, out_lead, off_coef, idt)
    if base is not None:
        bshape = [1] * len(out_lead)
        for p, n in zip(batch_pos, batch_shape):
            bshape[p] = n
        index = ctx.emit("add", [ctx.reshape(base, bshape), index], out_lead, idt)
    return _take_flat(ctx, x, index, rows, ins.shape.dims)


# -- scatter --------------------------------------------------------------------

_SCATTER_MODES = {"add": "add", "multiply": "mul", "maximum": "max",
                  "minimum": "min", "or": "max", "and": "min"}


def _scatter_mode(ctx: Lowering, ins: Instruction, comp: Computation,
                  dt: np.dtype) -> str:
    root = comp.root
    if _is_assignment(comp):
        return "assign"
    op = _binary_reducer(comp)
    mode = _SCATTER_MODES.get(op or "")
    if mode is None or (op in ("and", "or") and dt != np.bool_):
        raise ctx.unsupported(ins, f"a scatter whose to_apply ({comp.name!r}, "
                                   f"root {root.opcode!r}) is not assignment "
                                   f"(returns its second parameter), add, "
                                   f"multiply, maximum or minimum of its two "
                                   f"parameters")
    return mode


@lowers("scatter")
def _scatter(ctx: Lowering, ins: Instruction) -> Value:
    if len(ins.operand_ids) != 3:
        raise ctx.unsupported(ins, f"a variadic scatter of "
                                   f"{(len(ins.operand_ids) - 1) // 2} operands")
    x, idx, upd = ctx.operand(ins, 0), ctx.operand(ins, 1), ctx.operand(ins, 2)
    dn = ins.raw.message(48, "ScatterDimensionNumbers")
    if dn is None:
        raise ctx.malformed(ins, "no scatter_dimension_numbers")
    uwd, inserted = dn.ints(1), dn.ints(2)
    sd2od, ivd = dn.ints(3), dn.int64(4)
    ibatch, sibatch = dn.ints(5), dn.ints(6)
    r = len(x.shape)
    if tuple(x.shape) != ins.shape.dims or x.dtype != ins.shape.dtype or \
            upd.dtype != x.dtype or not _is_int(idx.dtype):
        raise ctx.malformed(ins, f"operand {x.dtype.name}{list(x.shape)}, "
                                 f"indices {idx.dtype.name}, updates "
                                 f"{upd.dtype.name} for {ins.shape}")
    if not 0 <= ivd <= len(idx.shape):
        raise ctx.malformed(ins, f"index_vector_dim {ivd} out of range")
    if ivd == len(idx.shape):
        idx = ctx.reshape(idx, list(idx.shape) + [1])
    batch_shape = [n for d, n in enumerate(idx.shape) if d != ivd]
    window = [d for d in range(r) if d not in inserted and d not in ibatch]
    u_rank = len(upd.shape)
    scatter_pos = [p for p in range(u_rank) if p not in uwd]
    ok = (idx.shape[ivd] == len(sd2od) and len(set(sd2od)) == len(sd2od)
          and all(0 <= d < r for d in sd2od + inserted + ibatch)
          and len(ibatch) == len(sibatch)
          and all(0 <= d < len(idx.shape) and d != ivd for d in sibatch)
          and len(window) == len(uwd) and uwd == sorted(uwd)
          and all(0 <= p < u_rank for p in uwd)
          and [upd.shape[p] for p in scatter_pos] == batch_shape
          and all(upd.shape[p] <= x.shape[d] for p, d in zip(uwd, window)))
    if not ok:
        raise ctx.malformed(ins, f"scatter dimension numbers (update_window_dims"
                                 f" {uwd}, inserted_window_dims {inserted}, "
                                 f"scatter_dims_to_operand_dims {sd2od}, "
                                 f"index_vector_dim {ivd}) do not fit operand "
                                 f"{list(x.shape)}, indices {list(idx.shape)} "
                                 f"and updates {list(upd.shape)}")
    mode = _scatter_mode(ctx, ins, ctx.computation(ins, 0), x.dtype)
    if upd.size == 0 or x.size == 0:
        return x
    wsize = [1] * r
    for p, d in zip(uwd, window):
        wsize[d] = upd.shape[p]
    idt = _idt(2 * x.size + 2)
    st = _strides(x.shape)
    # Updates in XLA:CPU's order: scatter index outer, window inner.
    perm = scatter_pos + uwd
    upd = ctx.transpose(upd, perm)
    ushape = list(upd.shape)
    ns = len(scatter_pos)
    base: Buf | None = None
    bad: Buf | None = None   # whole window out of the operand
    for k, d in enumerate(sd2od):
        c = _component(ctx, idx, ivd, k)
        hi = x.shape[d] - wsize[d]
        cdt = c.dtype if c.dtype != np.bool_ else np.dtype(np.int8)
        c = ctx.cast(c, cdt)
        info = np.iinfo(cdt)
        tests = []
        if info.min < 0:
            tests.append(ctx.emit("less", [c, ctx.const(np.array(0, cdt))],
                                  c.shape, np.bool_, compute=cdt))
        if hi < info.max:
            tests.append(ctx.emit("greater", [c, ctx.const(np.array(hi, cdt))],
                                  c.shape, np.bool_, compute=cdt))
        for tst in tests:
            bad = tst if bad is None else ctx.emit("logical_or", [bad, tst],
                                                   c.shape, np.bool_)
        c = _clamp(ctx, c, 0, hi, idt)
        base = _add(ctx, base, _scaled(ctx, c, st[d], idt), idt)
    for od, sd in zip(ibatch, sibatch):
        bpos = sd if sd < ivd else sd - 1
        coef = [st[od] if j == bpos else 0 for j in range(len(batch_shape))]
        base = _add(ctx, base, _affine(ctx, batch_shape, coef, idt), idt)
    off_coef = [0] * ns + [st[d] for d in window]
    index = _affine(ctx, ushape, off_coef, idt)
    bshape = batch_shape + [1] * len(window)
    if base is not None:
        index = ctx.emit("add", [ctx.reshape(base, bshape), index], ushape, idt)
    if bad is not None:
        index = ctx.emit("where", [ctx.reshape(bad, bshape),
                                   ctx.const(np.array(-1, idt)), index], ushape, idt)
    return ctx.emit("scatter", [x, index, upd], x.shape, x.dtype, mode=mode)


# -- dynamic slices ---------------------------------------------------------------


def _start_indices(ctx: Lowering, ins: Instruction, first: int, r: int) -> list[Buf]:
    """The scalar start indices (operands first..), or the components of
    the old form's single 1-D index operand."""
    n = len(ins.operand_ids) - first
    if n == r:
        bufs = [ctx.operand(ins, first + k) for k in range(r)]
        if all(b.shape == () for b in bufs):
            return bufs
    elif n == 1 and r != 1:
        v = ctx.operand(ins, first)
        if v.shape == (r,):
            return [_component(ctx, v, 0, k) for k in range(r)]
    raise ctx.malformed(ins, f"{n} start index operands for {r} dimensions")


def _static_start(ctx: Lowering, ins: Instruction, k: int) -> int | None:
    v = ctx.constant_of(ins, k)
    if v is None or v.size != 1:
        return None
    return int(v.reshape(()).item())


def _static_starts(ctx: Lowering, ins: Instruction, first: int, shape: Sequence[int],
                   sizes: Sequence[int]) -> list[int] | None:
    """The clamped start indices (operands first..) of a window of
    ``sizes`` when each is known at compile time (a constant, or any
    value where the window spans its dimension whole), else None."""
    r = len(shape)
    _start_indices(ctx, ins, first, r)  # (checks their count and shapes)
    static = []
    for d in range(r):
        if sizes[d] == shape[d]:
            static.append(0)
            continue
        s = _static_start(ctx, ins, first + d) \
            if len(ins.operand_ids) - first == r else None
        if s is None:
            return None
        static.append(min(max(s, 0), shape[d] - sizes[d]))
    return static


def _starts_vector(ctx: Lowering, ins: Instruction, first: int, r: int) -> Buf:
    """The start indices (operands first..) as the one 1-D integer tensor
    the emulator's dynamic_slice and dynamic_update_slice read, each in
    its own dtype (they are read exactly, so no cast can wrap one)."""
    if len(ins.operand_ids) - first == 1 and r != 1:
        v = ctx.operand(ins, first)
        if v.shape == (r,):
            return ctx.cast(v, np.int8) if v.dtype == np.bool_ else v
    starts = _start_indices(ctx, ins, first, r)
    dts = {b.dtype for b in starts}
    dt = starts[0].dtype if len(dts) == 1 else np.dtype(np.int64)
    dt = np.dtype(np.int8) if dt == np.bool_ else dt
    parts = []
    for k, b in enumerate(starts):
        v = _static_start(ctx, ins, first + k)
        if v is not None and np.can_cast(np.min_scalar_type(v), dt):
            parts.append(ctx.const(np.array([v], dt)))   # (no op for it)
        else:
            parts.append(ctx.reshape(ctx.cast(b, dt), (1,)))
    if r == 1:
        return parts[0]
    return ctx.emit("concatenate", parts, (r,), dt, axis=0)


@lowers("dynamic-slice")
def _dynamic_slice(ctx: Lowering, ins: Instruction) -> Value:
    """A window at run-time starts is the emulator's dynamic_slice, which
    clamps them as XLA does; one at starts known now, a slice."""
    x = ctx.operand(ins, 0)
    sizes = ins.raw.ints(20)
    r = len(x.shape)
    if len(sizes) != r or any(not 0 <= s <= n for s, n in zip(sizes, x.shape)) or \
            tuple(sizes) != ins.shape.dims:
        raise ctx.malformed(ins, f"dynamic_slice_sizes {sizes} for operand "
                                 f"{list(x.shape)}")
    if ins.shape.size == 0:
        return _empty(ctx, ins)
    static = _static_starts(ctx, ins, 1, x.shape, sizes)
    if static is None:
        return ctx.emit("dynamic_slice", [x, _starts_vector(ctx, ins, 1, r)],
                        sizes, x.dtype, bounds="clamp")
    if list(sizes) == list(x.shape):
        return x
    return ctx.emit("slice", [x], sizes, x.dtype, start=static, step=[1] * r)


@lowers("dynamic-update-slice")
def _dynamic_update_slice(ctx: Lowering, ins: Instruction) -> Value:
    """The emulator's dynamic_update_slice (clamping as XLA does) at
    run-time starts, an update_slice at starts known now."""
    x, u = ctx.operand(ins, 0), ctx.operand(ins, 1)
    r = len(x.shape)
    if len(u.shape) != r or any(a > b for a, b in zip(u.shape, x.shape)) or \
            u.dtype != x.dtype or tuple(x.shape) != ins.shape.dims:
        raise ctx.malformed(ins, f"update {u.dtype.name}{list(u.shape)} into "
                                 f"{x.dtype.name}{list(x.shape)}")
    if u.size == 0:
        return x
    static = _static_starts(ctx, ins, 2, x.shape, u.shape)
    if static is None:
        return ctx.emit("dynamic_update_slice", [x, u, _starts_vector(ctx, ins, 2, r)],
                        x.shape, x.dtype, bounds="clamp")
    if list(u.shape) == list(x.shape):
        return u
    return ctx.emit("update_slice", [x, u], x.shape, x.dtype, start=static,
                    step=[1] * r)


# -- pad --------------------------------------------------------------------------


def _pad(ctx: Lowering, ins: Instruction | None, x: Buf, value: Buf,
         config: Sequence[tuple[int, int, int]]) -> Buf:
    """``x`` padded with the scalar ``value`` (XLA's pad: negative edges
    crop, interior padding between elements)."""
    r = len(x.shape)
    out = []
    for (lo, hi, it), n in zip(config, x.shape):
        core = n + (n - 1) * it if n else 0
        out.append(lo + hi + core)
    if any(n < 0 for n in out):
        what = f"padding {list(config)} of {list(x.shape)} gives a negative size"
        raise ctx.malformed(ins, what) if ins else ValueError(what)
    if all(c == (0, 0, 0) for c in config):
        return x
    if _prod(out) == 0:
        return ctx.full(0, out, x.dtype) if value is None else ctx.broadcast_to(value, out)
    if x.size == 0:
        return ctx.broadcast_to(value, out)
    if all(lo >= 0 and hi >= 0 and it == 0 for lo, hi, it in config):
        # Edges only: concatenate fill blocks, dim by dim.
        cur = x
        for d, (lo, hi, _) in enumerate(config):
            if lo == 0 and hi == 0:
                continue

            def fill(n: int) -> list[Buf]:
                shape = list(cur.shape)
                shape[d] = n
                return [ctx.broadcast_to(value, shape)] if n else []

            parts = fill(lo) + [cur] + fill(hi)
            shape = list(cur.shape)
            shape[d] += lo + hi
            cur = ctx.emit("concatenate", parts, shape, x.dtype, axis=d)
        return cur
    # General: take from [x..., value] with, per output position, the source
    # element or the value's slot (count(x)).
    total = x.size
    idt = _idt(total * (r + 1) + 1)
    st = _strides(x.shape)
    parts = []
    for d, ((lo, hi, it), n) in enumerate(zip(config, x.shape)):
        o = np.arange(out[d], dtype=np.int64) - lo
        src = o // (it + 1)
        valid = (o >= 0) & (o % (it + 1) == 0) & (src < n)
        parts.append(np.where(valid, src * st[d], total))
    if _prod(out) <= _CONST_INDEX_LIMIT:
        v = np.zeros(out, np.int64)
        for d, p in enumerate(parts):
            v = v + p.reshape([-1 if k == d else 1 for k in range(r)])
        index = ctx.const(np.minimum(v, total).astype(idt))
    else:
        index = None
        for d, p in enumerate(parts):
            c = ctx.reshape(ctx.const(p.astype(idt)),
                            [out[d] if k == d else 1 for k in range(r)])
            index = c if index is None else ctx.emit(
                "add", [index, c], [max(a, b) for a, b in zip(index.shape, c.shape)], idt)
        index = ctx.emit("minimum", [index, ctx.const(np.array(total, idt))], out, idt)
    data = ctx.emit("concatenate", [ctx.reshape(x, [total]), ctx.reshape(value, [1])],
                    [total + 1], x.dtype, axis=0)
    return ctx.emit("take", [data, index], out, x.dtype, axis=0)


@lowers("pad")
def _pad_op(ctx: Lowering, ins: Instruction) -> Value:
    x, v = ctx.operand(ins, 0), ctx.operand(ins, 1)
    config = ins.padding_config
    if len(config) != len(x.shape) or v.shape != () or v.dtype != x.dtype or \
            any(it < 0 for _, _, it in config):
        raise ctx.malformed(ins, f"padding_config {config} for "
                                 f"{x.dtype.name}{list(x.shape)} with a "
                                 f"{v.dtype.name}{list(v.shape)} value")
    out = _pad(ctx, ins, x, v, config)
    if tuple(out.shape) != ins.shape.dims:
        raise ctx.malformed(ins, f"the padded shape is {list(out.shape)}")
    return out


# -- windows: reduce-window and convolution -----------------------------------------


def _window(ins: Instruction, r: int) -> list[dict[str, int]]:
    m = ins.raw.message(15, "Window")
    dims = []
    for w in (m.messages(1, "WindowDimension") if m is not None else []):
        dims.append(dict(size=w.int64(1), stride=w.int64(2, 1) or 1,
                         lo=w.int64(3), hi=w.int64(4),
                         wdil=w.int64(5, 1) or 1, bdil=w.int64(6, 1) or 1,
                         rev=int(w.flag(7))))
    return dims


_WINDOW_REDUCERS = {"add": ("add", "sum"), "maximum": ("maximum", "max"),
                    "minimum": ("minimum", "min"), "multiply": ("mul", "prod"),
                    "or": ("logical_or", "max"), "and": ("logical_and", "min")}


def _identity(kind: str, dt: np.dtype):
    if kind == "sum":
        return -0.0 if _is_float(dt) else 0   # -0.0 + x == x, also for -0.0
    if kind == "prod":
        return 1
    if dt == np.bool_:
        return kind == "min"
    if _is_float(dt):
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dt)
    return info.min if kind == "max" else info.max


@lowers("reduce-window")
def _reduce_window(ctx: Lowering, ins: Instruction) -> Value:
    if len(ins.operand_ids) != 2:
        raise ctx.unsupported(ins, "a variadic reduce-window")
    x, init = ctx.operand(ins, 0), ctx.operand(ins, 1)
    r = len(x.shape)
    win = _window(ins, r)
    dt = x.dtype
    if len(win) != r or init.shape != () or init.dtype != dt or dt != ins.shape.dtype:
        raise ctx.malformed(ins, f"a window of {len(win)} dimensions for "
                                 f"{dt.name}{list(x.shape)}")
    comp = ctx.computation(ins, 0)
    op = _binary_reducer(comp)
    if op not in _WINDOW_REDUCERS or (op in ("and", "or")) != (dt == np.bool_):
        raise ctx.unsupported(ins, f"a reduce-window whose to_apply "
                                   f"({comp.name!r}, root {comp.root.opcode!r}) "
                                   f"is not add, maximum, minimum or multiply "
                                   f"of its two parameters")
    if any(w["rev"] for w in win) or any(w["size"] < 1 for w in win):
        raise ctx.malformed(ins, "window reversal or an empty window")
    binop, kind = _WINDOW_REDUCERS[op]
    if dt == np.bool_ and binop in ("maximum", "minimum"):
        binop = "logical_or" if binop == "maximum" else "logical_and"
    # Padding and base dilation hold the reduction's identity, which is
    # what XLA's skipping of those positions amounts to.
    ident = ctx.const(np.array(_identity(kind, dt), dt))
    p = _pad(ctx, ins, x, ident, [(w["lo"], w["hi"], w["bdil"] - 1) for w in win])
    out = []
    for w, n in zip(win, p.shape):
        span = (w["size"] - 1) * w["wdil"] + 1
        out.append(max(0, (n - span) // w["stride"] + 1) if n >= span else 0)
    if tuple(out) != ins.shape.dims:
        raise ctx.malformed(ins, f"the reduce-window's result has shape {out}")
    if _prod(out) == 0:
        return ctx.broadcast_to(init, out)
    # XLA starts each window from the init value: skipped when it is the
    # identity (for float sums only -0.0 is: +0.0 + -0.0 is +0.0).
    init_v = ctx.constant_of(ins, 1)
    skip_init = False
    if init_v is not None and init_v.size == 1:
        v = init_v.reshape(())
        skip_init = v.item() == _identity(kind, dt) and \
            not (kind == "sum" and _is_float(dt) and not np.signbit(v))
    npos = _prod([w["size"] for w in win])
    steps = [w["stride"] for w in win]
    if npos <= 64:
        # One strided slice per window position, combined in XLA's order.
        acc: Buf | None = None
        for pos in np.ndindex(*[w["size"] for w in win]):
            start = [k * w["wdil"] for k, w in zip(pos, win)]
            s = ctx.emit("slice", [p], out, dt, start=start, step=steps)
            if acc is None:
                acc = s if skip_init else ctx.emit(binop, [init, s], out, dt)
            else:
                acc = ctx.emit(binop, [acc, s], out, dt)
        return acc
    # Large windows: gather all window positions at once, then reduce.
    idt = _idt(p.size + 1)
    st = _strides(p.shape)
    pos_idx = np.zeros([npos], np.int64)
    for j, pos in enumerate(np.ndindex(*[w["size"] for w in win])):
        pos_idx[j] = sum(k * w["wdil"] * s for k, w, s in zip(pos, win, st))
    base = _affine(ctx, out, [s * w["stride"] for s, w in zip(st, win)], idt)
    index = ctx.emit("add", [ctx.reshape(base, out + [1]),
                             ctx.const(pos_idx.astype(idt))], out + [npos], idt)
    g = ctx.emit("take", [ctx.reshape(p, [p.size]), index], out + [npos], dt, axis=0)
    red = ctx.emit(kind, [g], out, dt, axes=[r], keepdims=False)
    return red if skip_init else ctx.emit(binop, [init, red], out, dt)


def _conv_dims(ins: Instruction) -> dict[str, object]:
    m = ins.raw.message(16, "ConvolutionDimensionNumbers")
    if m is None:
        raise Lowering.malformed(ins, "no convolution_dimension_numbers")
    return dict(ib=m.int64(7), if_=m.int64(8), isp=m.ints(11),
                ki=m.int64(3), ko=m.int64(4), ksp=m.ints(6),
                ob=m.int64(9), of=m.int64(10), osp=m.ints(12))


@lowers("convolution")
def _convolution(ctx: Lowering, ins: Instruction) -> Value:
    lhs, rhs = ctx.operand(ins, 0), ctx.operand(ins, 1)
    dn = _conv_dims(ins)
    nsp = len(dn["isp"])
    r = nsp + 2
    win = _window(ins, nsp)
    fg = ins.raw.int64(50, 1) or 1
    bg = ins.raw.int64(58, 1) or 1
    ok = (len(lhs.shape) == r and len(rhs.shape) == r and len(win) == nsp
          and len(dn["ksp"]) == nsp and len(dn["osp"]) == nsp
          and sorted([dn["ib"], dn["if_"]] + dn["isp"]) == list(range(r))
          and sorted([dn["ki"], dn["ko"]] + dn["ksp"]) == list(range(r))
          and sorted([dn["ob"], dn["of"]] + dn["osp"]) == list(range(r)))
    if not ok:
        raise ctx.malformed(ins, "convolution dimension numbers or window do "
                                 "not fit the operands")
    # Canonical layouts: lhs [N, C, S...], rhs [O, I, K...].
    x = ctx.transpose(lhs, [dn["ib"], dn["if_"]] + dn["isp"])
    w = ctx.transpose(rhs, [dn["ko"], dn["ki"]] + dn["ksp"])
    n, c = x.shape[0], x.shape[1]
    o, ci = w.shape[0], w.shape[1]
    ksz = list(w.shape[2:])
    if any(wd["size"] != k for wd, k in zip(win, ksz)) or c % fg or o % fg or \
            c // fg != ci or n % bg or o % bg or (fg > 1 and bg > 1):
        raise ctx.malformed(ins, f"kernel {list(rhs.shape)}, input "
                                 f"{list(lhs.shape)}, feature_group_count {fg}, "
                                 f"batch_group_count {bg} do not fit")
    dt = ins.shape.dtype
    if lhs.dtype != rhs.dtype:
        raise ctx.unsupported(ins, f"operands of types {lhs.dtype.name} and "
                                   f"{rhs.dtype.name}")
    if any(wd["rev"] for wd in win):
        flip = [i + 2 for i, wd in enumerate(win) if wd["rev"] and ksz[i] > 1]
        if flip:
            w = ctx.emit("slice", [w], w.shape, w.dtype,
                         start=[w.shape[d] - 1 if d in flip else 0 for d in range(r)],
                         step=[-1 if d in flip else 1 for d in range(r)])
    zero = ctx.const(np.zeros((), x.dtype))
    p = _pad(ctx, ins, x, zero, [(0, 0, 0), (0, 0, 0)] +
             [(wd["lo"], wd["hi"], wd["bdil"] - 1) for wd in win])
    psp = list(p.shape[2:])
    out_sp = []
    for wd, m in zip(win, psp):
        span = (wd["size"] - 1) * wd["wdil"] + 1
        out_sp.append((m - span) // wd["stride"] + 1 if m >= span else 0)
    nb, ob = n // bg, o
    want = [0] * r
    want[dn["ob"]], want[dn["of"]] = nb, ob
    for d, s in zip(dn["osp"], out_sp):
        want[d] = s
    if tuple(want) != ins.shape.dims:
        raise ctx.malformed(ins, f"the convolution's result has shape {want}")
    if _prod(want) == 0:
        return _empty(ctx, ins)
    kpos, otot = _prod(ksz), _prod(out_sp)
    if c == 0 or kpos == 0:
        return _empty(ctx, ins)
    # Patches [N, C, K, O] of the padded input: a take of positions.
    pst = _strides(psp)
    identity = (kpos == 1 and out_sp == psp and all(wd["stride"] == 1 for wd in win))
    if identity:
        patches = ctx.reshape(p, [n, c, 1, otot])
    else:
        idt = _idt(_prod(psp) + 1)
        kidx = np.zeros([kpos], np.int64)
        for j, pos in enumerate(np.ndindex(*ksz)):
            kidx[j] = sum(k * wd["wdil"] * s for k, wd, s in zip(pos, win, pst))
        ocoef = [s * wd["stride"] for s, wd in zip(pst, win)]
        if kpos * otot <= _CONST_INDEX_LIMIT * 16:
            oidx = np.zeros(out_sp, np.int64)
            for j, (m, cf) in enumerate(zip(out_sp, ocoef)):
                oidx = oidx + (np.arange(m) * cf).reshape(
                    [m if q == j else 1 for q in range(nsp)])
            index = ctx.const((kidx[:, None] + oidx.reshape(1, -1)).astype(idt))
        else:
            obuf = ctx.reshape(_affine(ctx, out_sp, ocoef, idt), [1, otot])
            index = ctx.emit("add", [ctx.const(kidx.astype(idt).reshape(kpos, 1)), obuf],
                             [kpos, otot], idt)
        flat = ctx.reshape(p, [n, c, _prod(psp)])
        patches = ctx.emit("take", [flat, index], [n, c, kpos, otot], x.dtype, axis=2)
    if bg > 1:
        # Input batch groups pair with output feature groups.
        pt = ctx.reshape(patches, [bg, nb, c * kpos, otot])
        wt = ctx.reshape(w, [bg, o // bg, c * kpos])
        # [bg, o/bg, cK] @ [bg, nb, cK, otot] -> per group and batch.
        pt = ctx.transpose(pt, [1, 0, 2, 3])            # [nb, bg, cK, otot]
        res = ctx.emit("matmul", [wt, pt], [nb, bg, o // bg, otot], dt, compute=dt)
        res = ctx.reshape(res, [nb, o] + out_sp)
    else:
        pt = ctx.reshape(patches, [n, fg, (c // fg) * kpos, otot])
        wt = ctx.reshape(w, [fg, o // fg, ci * kpos])
        res = ctx.emit("matmul", [wt, pt], [n, fg, o // fg, otot], dt, compute=dt)
        res = ctx.reshape(res, [n, o] + out_sp)
    # [N, O, S...] -> the output's dimension order.
    canon = [dn["ob"], dn["of"]] + dn["osp"]
    return ctx.transpose(res, [canon.index(d) for d in range(r)])


# -- sort and top-k -------------------------------------------------------------------


def _take_along(ctx: Lowering, x: Buf, perm: Buf, axis: int) -> Buf:
    """x[..., perm[...], ...] along ``axis`` (NumPy's take_along_axis;
    ``perm`` has x's shape except along ``axis``)."""
    r = len(x.shape)
    order = [d for d in range(r) if d != axis] + [axis]
    xt = ctx.transpose(x, order)
    pt = ctx.transpose(perm, order)
    n, k = xt.shape[-1], pt.shape[-1]
    rows = _prod(xt.shape[:-1])
    idt = _idt(x.size + 1)
    pt = ctx.reshape(ctx.cast(pt, idt), [rows, k])
    if rows > 1:
        base = _affine(ctx, [rows, 1], [n, 0], idt)
        pt = ctx.emit("add", [pt, base], [rows, k], idt)
    g = ctx.emit("take", [ctx.reshape(xt, [xt.size]), pt], [rows, k], x.dtype, axis=0)
    g = ctx.reshape(g, list(xt.shape[:-1]) + [k])
    return ctx.transpose(g, [order.index(d) for d in range(r)])


class _Key:
    """One key of a sort comparator: operand ``k`` (read through the
    expression ``expr`` of the comparator's parameter 2k), ``desc``ending,
    compared as ``kind`` (FLOAT, TOTALORDER, SIGNED, UNSIGNED)."""

    def __init__(self, k: int, desc: bool, expr: Instruction, kind: str) -> None:
        self.k, self.desc, self.expr, self.kind = k, desc, expr, kind


_EXPR_OPS = {"parameter", "constant", "compare", "select", "and", "or", "xor",
             "not", "negate", "abs", "convert", "copy", "maximum", "minimum",
             "add", "subtract", "multiply", "broadcast", "reshape",
             "bitcast-convert"}


def _sort_keys(comp: Computation, nops: int) -> list[_Key] | None:
    """The keys when the comparator is a lexicographic less-than over some
    operands, each maybe read through an elementwise expression (JAX
    canonicalises NaNs and -0.0 before a TOTALORDER compare): JAX's
    pattern or(lt(a0, b0), and(eq(a0, b0), <the rest>)), or select(eq(a0,
    b0), <the rest>, lt(a0, b0)); else None."""
    params = {i.id: i.parameter_number for i in comp.instructions
              if i.opcode == "parameter"}
    if len(params) != 2 * nops:
        return None
    by_id = comp.by_id
    sigs: dict[int, tuple[str, frozenset] | None] = {}

    def sig(i: Instruction):
        """(text of the expression with parameters as their operand, the
        parameter numbers it reads), or None if not elementwise."""
        if i.id in sigs:
            return sigs[i.id]
        out = None
        if i.opcode in _EXPR_OPS and not i.shape.is_tuple and i.shape.dims == ():
            if i.opcode == "parameter":
                out = (f"P{i.parameter_number // 2}", frozenset([i.parameter_number]))
            elif i.opcode == "constant":
                if i.literal is not None:
                    v = np.asarray(i.literal.value)
                    out = (f"C{v.dtype.str}{v.tobytes().hex()}", frozenset())
            else:
                subs = [sig(by_id[o]) for o in i.operand_ids]
                if all(s is not None for s in subs):
                    text = (f"{i.opcode}/{i.comparison_direction if i.opcode == 'compare' else ''}"
                            f"/{i.comparison_type if i.opcode == 'compare' else ''}"
                            f"/{i.shape.type_name}(" + ",".join(s[0] for s in subs) + ")")
                    out = (text, frozenset().union(*[s[1] for s in subs]))
        sigs[i.id] = out
        return out

    def pair(i: Instruction):
        """(operand k, a-side parity, a, b) when ``i`` compares the same
        expression of parameters 2k (one side) and 2k+1 (the other)."""
        if i.opcode != "compare" or len(i.operand_ids) != 2:
            return None
        a, b = (by_id[o] for o in i.operand_ids)
        sa, sb = sig(a), sig(b)
        if sa is None or sb is None or sa[0] != sb[0] or len(sa[1]) != 1 or \
                len(sb[1]) != 1:
            return None
        pa, pb = next(iter(sa[1])), next(iter(sb[1]))
        if pa // 2 != pb // 2 or pa == pb:
            return None
        return pa // 2, pa % 2, a, b

    def less(i: Instruction):
        p = pair(i)
        if p is None or i.comparison_direction not in ("LT", "GT"):
            return None
        k, parity, a, b = p
        desc = (i.comparison_direction == "GT") != (parity == 1)
        kind = i.comparison_type or ""
        return _Key(k, desc, a if parity == 0 else b, kind)

    def equal(i: Instruction, key: _Key) -> bool:
        p = pair(i)
        return p is not None and p[0] == key.k and i.comparison_direction == "EQ"

    def match(i: Instruction):
        one = less(i)
        if one is not None:
            return [one]
        ops = [by_id[o] for o in i.operand_ids]
        if i.opcode == "or" and len(ops) == 2:
            for first, rest in ((ops[0], ops[1]), (ops[1], ops[0])):
                head = less(first)
                if head is None or rest.opcode != "and" or len(rest.operand_ids) != 2:
                    continue
                a, b = (by_id[o] for o in rest.operand_ids)
                for e, tail in ((a, b), (b, a)):
                    if equal(e, head):
                        t = match(tail)
                        if t is not None:
                            return [head] + t
        if i.opcode == "select" and len(ops) == 3:
            head = less(ops[2])
            if head is not None and equal(ops[0], head):
                t = match(ops[1])
                if t is not None:
                    return [head] + t
        return None

    keys = match(comp.root)
    if keys is None or len({key.k for key in keys}) != len(keys):
        return None
    return keys


def _expr(ctx: Lowering, comp: Computation, ins: Instruction, env: dict[int, Buf],
          shape: Sequence[int], memo: dict[int, Buf]) -> Buf:
    """The scalar expression ``ins`` of a comparator evaluated elementwise
    over arrays of ``shape`` (parameter n := env[n])."""
    if ins.id in memo:
        return memo[ins.id]
    op = ins.opcode
    dt = ins.shape.dtype
    args = [_expr(ctx, comp, comp.by_id[o], env, shape, memo) for o in ins.operand_ids]
    if op == "parameter":
        out = env[ins.parameter_number]
    elif op == "constant":
        out = ctx.const(np.asarray(ins.literal.value).reshape(()))
    elif op in ("copy", "broadcast", "reshape"):
        out = args[0]
    elif op == "convert":
        out = ctx.emit("cast", args, shape, dt)
    elif op == "bitcast-convert":
        out = ctx.emit("bitcast", [ctx.broadcast_to(args[0], shape)], shape, dt)
    elif op == "compare":
        a, b = args
        kind = ins.comparison_type
        if kind == "TOTALORDER" and _is_float(a.dtype):
            a = total_order_key(ctx, ctx.broadcast_to(a, shape))
            b = total_order_key(ctx, ctx.broadcast_to(b, shape))
        name = {"EQ": "equal", "NE": "not_equal", "GE": "greater_equal",
                "GT": "greater", "LE": "less_equal", "LT": "less"}[ins.comparison_direction]
        out = ctx.emit(name, [a, b], shape, np.bool_, compute=a.dtype)
    elif op == "select":
        out = ctx.emit("where", args, shape, dt)
    elif op in ("and", "or", "xor", "not") and dt == np.bool_:
        out = ctx.emit("logical_" + op, args, shape, dt)
    elif op in ("and", "or", "xor", "not"):
        out = ctx.emit("bitwise_" + op, args, shape, dt)
    else:
        out = ctx.emit({"negate": "neg", "abs": "abs", "maximum": "maximum",
                        "minimum": "minimum", "add": "add", "subtract": "sub",
                        "multiply": "mul"}[op], args, shape, dt)
    memo[ins.id] = out
    return out


def _argsort(ctx: Lowering, key: Buf, axis: int, desc: bool) -> Buf:
    if key.dtype == np.bool_:
        key = ctx.cast(key, np.uint8)
    return ctx.emit("argsort", [key], key.shape, np.int32, axis=axis, descending=desc)


def _sort_perm(ctx: Lowering, keys: list[tuple[Buf, bool]], axis: int) -> Buf:
    """The stable lexicographic sorting permutation (int32) along ``axis``:
    stable sorts from the last key to the first."""
    kb, desc = keys[-1]
    perm = _argsort(ctx, kb, axis, desc)
    for kb, desc in reversed(keys[:-1]):
        sub = _argsort(ctx, _take_along(ctx, kb, perm, axis), axis, desc)
        perm = _take_along(ctx, perm, sub, axis)
    return perm


def _used_outputs(ctx: Lowering, ins: Instruction, n: int) -> set[int]:
    """The tuple elements of ``ins`` that the computation reads (all of
    them unless every user is a get-tuple-element)."""
    comp = ctx._comps[-1]
    if not ins.shape.is_tuple or comp.root_id == ins.id:
        return set(range(n))
    read = {o for i in comp.instructions for o in i.operand_ids} | {comp.root_id}
    used: set[int] = set()
    for i in comp.instructions:
        if ins.id in i.operand_ids:
            if i.opcode != "get-tuple-element":
                return set(range(n))
            if i.id in read:
                used.add(i.tuple_index)
    return used


@lowers("sort")
def _sort(ctx: Lowering, ins: Instruction) -> Value:
    # Lazy: an iota operand (argsort's) need not be written out.
    xs = [ctx.operand(ins, k, lazy=True) for k in range(len(ins.operand_ids))]
    if not xs or any(x.shape != xs[0].shape for x in xs):
        raise ctx.malformed(ins, "sort operands of different shapes")
    shape = xs[0].shape
    axis = ins.dimensions[0] if ins.dimensions else len(shape) - 1
    if shape and not 0 <= axis < len(shape):
        raise ctx.malformed(ins, f"sort dimension {axis} out of range")
    comp = ctx.computation(ins, 0)
    keys = _sort_keys(comp, len(xs))
    if keys is None:
        raise ctx.unsupported(ins, f"a sort whose comparator ({comp.name!r}) is "
                                   f"not a lexicographic less-than/greater-than "
                                   f"of operand pairs")
    if not shape or shape[axis] <= 1:
        outs = [ctx.materialize(x) for x in xs]
    else:
        bufs = []
        for key in keys:
            env = {2 * key.k: ctx.materialize(xs[key.k])}
            kb = _expr(ctx, comp, key.expr, env, shape, {})
            if key.kind != "TOTALORDER" and _is_float(kb.dtype):
                # IEEE order: -0.0 and +0.0 are equal (NaNs go last, as in
                # the total order).
                zero = ctx.const(np.zeros((), kb.dtype))
                isz = ctx.emit("equal", [kb, zero], shape, np.bool_, compute=kb.dtype)
                kb = ctx.emit("where", [isz, zero, kb], shape, kb.dtype)
            bufs.append((kb, key.desc))
        perm = _sort_perm(ctx, bufs, axis)
        used = _used_outputs(ctx, ins, len(xs))
        outs = []
        for k, x in enumerate(xs):
            if k not in used:
                # Never read (argsort drops the sorted keys): not computed.
                outs.append(ctx.temp(x.shape, x.dtype))
            elif _is_iota_along(ctx, ins, k, axis) and _is_int(x.dtype):
                outs.append(ctx.cast(perm, x.dtype))
            else:
                outs.append(_take_along(ctx, ctx.materialize(x), perm, axis))
    if ins.shape.is_tuple:
        return tuple(outs)
    return outs[0]


# Top-k of at most this many: k rounds of argmax (a full sort otherwise).
_ITERATIVE_TOP_K = 16


def _top_k_iterative(ctx: Lowering, x: Buf, k: int, largest: bool) -> Buf:
    """The int32 indices [..., k] of the k largest (smallest) along the last
    axis, ties to the lower index, floats in XLA's total order: k rounds of
    argmax over int64 keys, each taking its winner out (the key set to the
    int64 extreme, which no key of 32 bits or less can reach)."""
    shape = list(x.shape)
    n = shape[-1]
    rows = _prod(shape[:-1])
    key = x
    if _is_float(x.dtype):
        key = total_order_key(ctx, x)
    elif x.dtype == np.bool_:
        key = ctx.cast(x, np.uint8)
    i64 = np.dtype(np.int64)
    key = ctx.cast(ctx.reshape(key, [rows, n]), i64)
    gone = ctx.const(np.array(np.iinfo(i64).min if largest else np.iinfo(i64).max, i64))
    op = "argmax" if largest else "argmin"
    base = _affine(ctx, [rows, 1], [n, 0], i64) if rows > 1 else None
    picks = []
    for j in range(k):
        pick = ctx.emit(op, [key], [rows, 1], i64, axis=1, keepdims=True)
        picks.append(pick)
        if j + 1 < k:
            flat = pick if base is None else ctx.emit("add", [pick, base], [rows, 1], i64)
            key = ctx.emit("scatter", [key, flat, ctx.broadcast_to(gone, [rows, 1])],
                           [rows, n], i64, mode="assign")
    perm = picks[0] if k == 1 else ctx.emit("concatenate", picks, [rows, k], i64, axis=1)
    return ctx.reshape(ctx.cast(perm, np.int32), shape[:-1] + [k])


def _top_k(ctx: Lowering, ins: Instruction, x: Buf, k: int, largest: bool = True) -> Value:
    shape = list(x.shape)
    if not shape or not 0 <= k <= shape[-1]:
        raise ctx.malformed(ins, f"top-k of {k} along the last dimension of "
                                 f"{shape}")
    axis = len(shape) - 1
    leaves = ins.shape.leaves()
    out_shape = shape[:-1] + [k]
    if any(list(s.dims) != out_shape for s in leaves) or not 1 <= len(leaves) <= 2:
        raise ctx.malformed(ins, f"the top-k result {ins.shape} is not "
                                 f"(values, indices) of shape {out_shape}")
    if leaves[0].dtype != x.dtype:
        raise ctx.malformed(ins, f"top-k values of type {leaves[0].type_name}")
    if 0 < k <= _ITERATIVE_TOP_K and 4 * k < shape[-1] and x.dtype.itemsize < 8:
        perm = _top_k_iterative(ctx, x, k, largest)
    else:
        perm = _argsort(ctx, x, axis, largest)
        if k != shape[-1]:
            perm = ctx.emit("slice", [perm], out_shape, np.int32,
                            start=[0] * len(shape), step=[1] * len(shape))
    values = _take_along(ctx, x, perm, axis)
    if leaves[0].dtype != x.dtype:
        raise ctx.malformed(ins, f"top-k values of type {leaves[0].type_name}")
    if len(leaves) == 1:
        return values
    return (values, ctx.cast(perm, leaves[1].dtype))


@lowers("topk")
def _topk(ctx: Lowering, ins: Instruction) -> Value:
    x = ctx.operand(ins, 0)
    k = ins.raw.int64(81) if ins.raw.has(81) else ins.shape.leaves()[0].dims[-1]
    largest = ins.raw.flag(85, True) if ins.raw.has(85) else True
    return _top_k(ctx, ins, x, k, largest)


def _backend_k(ins: Instruction) -> int | None:
    cfg = ins.backend_config.strip()
    if not cfg:
        return None
    try:
        v = json.loads(cfg)
    except ValueError:
        v = None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, dict):
        for key in ("k", "K", "top_k"):
            if isinstance(v.get(key), int):
                return v[key]
    m = re.search(r"\d+", cfg)
    return int(m.group()) if m else None


# Annotations that JAX leaves in its modules: the operand unchanged.
_IDENTITY_CALLS = {"Sharding", "xla.sdy.FuncResultSharding",
                   "xla.sdy.ShardingConstraint"}


@lowers("custom-call")
def _custom_call(ctx: Lowering, ins: Instruction) -> Value:
    target = ins.custom_call_target
    if target in _IDENTITY_CALLS and len(ins.operand_ids) == 1:
        v = ctx.value(ins, 0)
        if not isinstance(v, tuple) and tuple(v.shape) == ins.shape.dims \
                and not ins.shape.is_tuple and v.dtype == ins.shape.dtype:
            return v
    if target == "AwsNeuronTopK":
        x = ctx.operand(ins, 0)
        k = _backend_k(ins)
        if k is None:
            raise ctx.malformed(ins, f"AwsNeuronTopK without k in "
                                     f"backend_config ({ins.backend_config!r:.100})")
        return _top_k(ctx, ins, x, k)
    if target == "AwsNeuronCustomNativeKernel":
        from nrtpy.hlo import _lower_nki
        if _lower_nki.is_nrtpy_kernel(ins.backend_config):
            return _lower_nki.inline_kernel(ctx, ins)
        raise ctx.unsupported(ins, "custom-call AwsNeuronCustomNativeKernel is "
                                   "an NKI kernel compiled for Trainium by "
                                   "AWS's NKI; the emulator runs only kernels "
                                   "that nrtpy.nki traced")
    raise ctx.unsupported(ins, f"custom-call target {target!r}")
