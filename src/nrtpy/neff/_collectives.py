"""Collective operations for ``nrtpy.neff.compile`` (XLA's semantics).

Each function records one collective op of the emulator program
(docs/neff-emulator-format.md §3) on an array being traced.  Every rank
loads the same NEFF (``NrtpyModel.load_from_neff(..., cc_enabled=True,
rank_id=r, world_size=n)``) and the op completes when every rank of its
group has reached it.  ``replica_groups`` is a list of lists of ranks that
together hold every rank once; ``None`` means one group of all the
``world_size`` ranks given to ``compile``.
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

from nrtpy.neff._trace import Traced

__all__ = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all",
           "collective_permute"]

_REDUCE_OPS = ("sum", "prod", "max", "min")


def _traced(fn: str, x: Any) -> Traced:
    if not isinstance(x, Traced):
        raise TypeError(f"nrtpy.neff.{fn}: x must be an array being traced "
                        f"by nrtpy.neff.compile, got {type(x).__name__}")
    return x


def _rank(fn: str, what: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
        raise ValueError(f"nrtpy.neff.{fn}: {what} must be a rank (an int "
                         f">= 0), got {v!r:.100}")
    return int(v)


def _groups(fn: str, x: Traced, replica_groups: Any,
            even: bool) -> tuple[list[list[int]] | None, int]:
    """The groups as JSON, and the size of each (the world size for None)."""
    world = x.program.world_size
    if replica_groups is None:
        return None, world
    if isinstance(replica_groups, (str, bytes)) or \
            not isinstance(replica_groups, Sequence) or not replica_groups:
        raise TypeError(f"nrtpy.neff.{fn}: replica_groups must be a "
                        f"non-empty list of lists of ranks, or None")
    groups: list[list[int]] = []
    seen: set[int] = set()
    for g in replica_groups:
        if isinstance(g, (str, bytes)) or not isinstance(g, Sequence) or not g:
            raise TypeError(f"nrtpy.neff.{fn}: each replica group must be a "
                            f"non-empty list of ranks, got {g!r:.100}")
        group = [_rank(fn, "a replica group member", r) for r in g]
        for r in group:
            if r in seen:
                raise ValueError(f"nrtpy.neff.{fn}: rank {r} is in "
                                 f"replica_groups twice")
            if r >= world:
                raise ValueError(f"nrtpy.neff.{fn}: rank {r} is not below "
                                 f"world_size {world} (given to compile)")
            seen.add(r)
        groups.append(group)
    if len(seen) != world:
        raise ValueError(f"nrtpy.neff.{fn}: replica_groups hold {len(seen)} "
                         f"of the {world} ranks; each rank must be in one")
    sizes = {len(g) for g in groups}
    if even and len(sizes) != 1:
        raise ValueError(f"nrtpy.neff.{fn}: the replica groups must all have "
                         f"the same size, got sizes {sorted(sizes)}")
    return groups, len(groups[0])


def _reduce(fn: str, op: Any) -> str:
    if op not in _REDUCE_OPS:
        raise ValueError(f"nrtpy.neff.{fn}: op must be one of "
                         f"{', '.join(map(repr, _REDUCE_OPS))}, got {op!r:.100}")
    return str(op)


def _axis(fn: str, name: str, axis: Any, ndim: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"nrtpy.neff.{fn}: {name} must be an int, got "
                        f"{type(axis).__name__}")
    if ndim == 0 or not -ndim <= axis < ndim:
        raise ValueError(f"nrtpy.neff.{fn}: {name} {axis} is out of range "
                         f"for {ndim} dimensions")
    return int(axis) % ndim


def all_reduce(x: Any, op: str = "sum", replica_groups: Any = None) -> Any:
    """The reduction (``op``: "sum", "prod", "max" or "min") of the
    operands of every rank of the group, on every rank; 16- and 8-bit
    floats are reduced in float32 and rounded once."""
    t = _traced("all_reduce", x)
    reduce = _reduce("all_reduce", op)
    groups, _ = _groups("all_reduce", t, replica_groups, even=False)
    return t.program.emit("all_reduce", [t], t.shape, t.dtype, reduce=reduce,
                          replica_groups=groups)


def all_gather(x: Any, axis: int, replica_groups: Any = None) -> Any:
    """The operands of the group's ranks concatenated along ``axis``, in
    group order."""
    t = _traced("all_gather", x)
    ax = _axis("all_gather", "axis", axis, t.ndim)
    groups, g = _groups("all_gather", t, replica_groups, even=True)
    shape = list(t.shape)
    shape[ax] *= g
    return t.program.emit("all_gather", [t], tuple(shape), t.dtype, axis=ax,
                          replica_groups=groups)


def reduce_scatter(x: Any, axis: int, op: str = "sum",
                   replica_groups: Any = None) -> Any:
    """Block ``i`` along ``axis`` of the group's reduction, on the rank at
    position ``i`` of the group."""
    t = _traced("reduce_scatter", x)
    ax = _axis("reduce_scatter", "axis", axis, t.ndim)
    reduce = _reduce("reduce_scatter", op)
    groups, g = _groups("reduce_scatter", t, replica_groups, even=True)
    if t.shape[ax] % g:
        raise ValueError(f"nrtpy.neff.reduce_scatter: axis {ax} of size "
                         f"{t.shape[ax]} does not split into {g} blocks")
    shape = list(t.shape)
    shape[ax] //= g
    return t.program.emit("reduce_scatter", [t], tuple(shape), t.dtype,
                          axis=ax, reduce=reduce, replica_groups=groups)


def all_to_all(x: Any, split_axis: int, concat_axis: int,
               replica_groups: Any = None) -> Any:
    """Split along ``split_axis`` into one block per group member, send
    block ``j`` to member ``j``, concatenate what arrives along
    ``concat_axis`` in group order."""
    t = _traced("all_to_all", x)
    sa = _axis("all_to_all", "split_axis", split_axis, t.ndim)
    ca = _axis("all_to_all", "concat_axis", concat_axis, t.ndim)
    groups, g = _groups("all_to_all", t, replica_groups, even=True)
    if t.shape[sa] % g:
        raise ValueError(f"nrtpy.neff.all_to_all: split_axis {sa} of size "
                         f"{t.shape[sa]} does not split into {g} blocks")
    shape = list(t.shape)
    shape[sa] //= g
    shape[ca] *= g
    return t.program.emit("all_to_all", [t], tuple(shape), t.dtype,
                          split_axis=sa, concat_axis=ca,
                          replica_groups=groups)


def collective_permute(x: Any, pairs: Any) -> Any:
    """Each target of ``pairs`` (``[(source, target), ...]``) gets its
    source's operand; a rank that is no target gets zeros."""
    t = _traced("collective_permute", x)
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise TypeError("nrtpy.neff.collective_permute: pairs must be a list "
                        "of (source, target) ranks")
    world = t.program.world_size
    out: list[list[int]] = []
    sources: set[int] = set()
    targets: set[int] = set()
    for p in pairs:
        if isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or len(p) != 2:
            raise TypeError(f"nrtpy.neff.collective_permute: each pair must "
                            f"be (source, target), got {p!r:.100}")
        s = _rank("collective_permute", "a source", p[0])
        d = _rank("collective_permute", "a target", p[1])
        if s >= world or d >= world:
            raise ValueError(f"nrtpy.neff.collective_permute: pair {p!r} "
                             f"names a rank not below world_size {world}")
        if s in sources or d in targets:
            raise ValueError(f"nrtpy.neff.collective_permute: rank "
                             f"{s if s in sources else d} is the "
                             f"{'source' if s in sources else 'target'} of "
                             f"two pairs")
        sources.add(s)
        targets.add(d)
        out.append([s, d])
    return t.program.emit("collective_permute", [t], t.shape, t.dtype,
                          pairs=out)
