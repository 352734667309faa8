"""compile_hlo: an HloModuleProto -> an emulator NEFF."""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nrtpy._files import read_regular
from nrtpy.hlo._lower import Lowering
from nrtpy.hlo._module import Instruction, Module, Shape, parse_module

MUST_ALIAS_SUFFIX = ".must_alias_input"

# The modules whose @lowers fill the registry.  A module not (yet) in the
# tree is skipped, so that lowerings land independently.
_LOWERING_MODULES = ("_lower_ops", "_lower_index", "_lower_control")
_loaded = False


def _load_lowerings() -> None:
    global _loaded
    if _loaded:
        return
    for mod in _LOWERING_MODULES:
        full = f"nrtpy.hlo.{mod}"
        try:
            importlib.import_module(full)
        except ModuleNotFoundError as exc:
            if exc.name != full:
                raise
    _loaded = True


def module_bytes(module: Any) -> bytes:
    """The serialized HloModuleProto that ``module`` stands for."""
    if isinstance(module, (bytes, bytearray, memoryview)):
        return bytes(module)
    if isinstance(module, (str, os.PathLike)):
        return read_regular(module, "HLO module")
    if hasattr(module, "as_serialized_hlo_module_proto"):
        return bytes(module.as_serialized_hlo_module_proto())
    if hasattr(module, "compiler_ir"):  # a JAX Lowered
        return bytes(module.compiler_ir("hlo").as_serialized_hlo_module_proto())
    raise TypeError(f"module must be the bytes of an HloModuleProto, a path to "
                    f"them, an object with as_serialized_hlo_module_proto() or "
                    f"a JAX Lowered, got {type(module).__name__}")


_SUFFIX = re.compile(r"\.\d+$")
# The names the program gives its temporaries and constants.
_RESERVED = re.compile(r"^(tmp|const)\.\d+$")


def _names(arg: Any, what: str, count: int) -> list[str] | None:
    if arg is None:
        return None
    if isinstance(arg, (str, bytes)) or not isinstance(arg, Sequence):
        raise TypeError(f"{what} must be a sequence of str, got "
                        f"{type(arg).__name__}: {arg!r:.200}")
    names = list(arg)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{what}: {n!r:.200} is not a str")
    if len(names) != count:
        raise ValueError(f"{what}: {len(names)} names for {count} "
                         f"{'inputs' if 'input' in what else 'outputs'}")
    return names


def _leaf_index(shape: Shape, index: tuple[int, ...]) -> int | None:
    """The position among the leaves of ``shape`` of the subshape at
    ``index``, when that subshape is an array."""
    pos = 0
    s = shape
    for i in index:
        if not s.is_tuple or not 0 <= i < len(s.tuple_shapes):
            return None
        pos += sum(len(t.leaves()) for t in s.tuple_shapes[:i])
        s = s.tuple_shapes[i]
    return pos if not s.is_tuple else None


def _leaves(value: Any) -> list:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def compile_hlo(module: Any, path: str | os.PathLike, *, name: str | None = None,
                input_names: Sequence[str] | None = None,
                output_names: Sequence[str] | None = None) -> Path:
    """Compile an XLA HLO module into an emulator NEFF at ``path``.

    See ``nrtpy.neff.compile_hlo`` (the public name) and docs/hlo.md.
    """
    # Imported here: nrtpy.neff imports this module at its end.
    from nrtpy.neff import (_attach_outputs, _check_target, _forward_input_copies,
                            _write_neff)

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got "
                        f"{type(path).__name__}: {path!r:.200}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str or None, got "
                        f"{type(name).__name__}: {name!r:.200}")
    _check_target(path)
    _load_lowerings()
    mod = parse_module(module_bytes(module))
    ctx = Lowering(mod)
    entry = mod.entry

    # -- inputs --------------------------------------------------------------
    params = [i for i in entry.instructions if i.opcode == "parameter"]
    numbers = sorted(p.parameter_number for p in params)
    if numbers != list(range(len(params))):
        bad = next((p for p in sorted(params, key=lambda p: p.parameter_number)
                    if p.parameter_number != numbers.index(p.parameter_number)
                    or p.parameter_number >= len(params)), params[0])
        raise ValueError(f"malformed HLO: {bad.where()}: parameter numbers "
                         f"{numbers} of the entry computation are not 0.."
                         f"{len(params) - 1}")
    params.sort(key=lambda p: p.parameter_number)
    for p in params:
        if not p.shape.is_array:
            raise ctx.unsupported(p, f"an entry parameter of shape {p.shape} "
                                     f"(only arrays)")
        if p.shape.element_type not in _ARRAY_TYPES:
            raise ctx.unsupported(p, f"element type {p.shape.type_name}")
    in_names = _names(input_names, "input_names", len(params)) or \
        [_input_name(p) for p in params]

    # -- outputs -------------------------------------------------------------
    root = entry.root
    leaf_shapes = root.shape.leaves()
    explicit = _names(output_names, "output_names", len(leaf_shapes))
    if explicit is None and "neff_output_names" in root.frontend_attributes:
        explicit = [n.strip() for n in
                    root.frontend_attributes["neff_output_names"].split(",")]
        if len(explicit) != len(leaf_shapes):
            raise ValueError(f"malformed HLO: {root.where()}: "
                             f"neff_output_names names {len(explicit)} outputs, "
                             f"the root has {len(leaf_shapes)}")
    out_names: list[str | None] = list(explicit) if explicit else \
        [None] * len(leaf_shapes)

    # -- aliases: the <name>.must_alias_input / <name> pairs -------------------
    aliased: set[str] = set()
    seen_params: set[int] = set()
    for alias in mod.aliases:
        leaf = _leaf_index(root.shape, alias.output_index)
        pn = alias.parameter_number
        if leaf is None or not 0 <= pn < len(params):
            raise ValueError(f"malformed HLO: input_output_alias of output "
                             f"{list(alias.output_index)} to parameter {pn}: no "
                             f"such array output or parameter")
        if alias.parameter_index:
            raise NotImplementedError(f"input_output_alias into a tuple "
                                      f"parameter ({pn}, index "
                                      f"{list(alias.parameter_index)})")
        if pn in seen_params:
            raise ValueError(f"malformed HLO: parameter {pn} is aliased to two "
                             f"outputs")
        seen_params.add(pn)
        ps, os_ = params[pn].shape, leaf_shapes[leaf]
        if ps.dims != os_.dims or ps.element_type != os_.element_type:
            raise ValueError(f"malformed HLO: input_output_alias of output "
                             f"{list(alias.output_index)} ({os_}) to parameter "
                             f"{pn} ({ps}): the shapes differ")
        base = out_names[leaf]
        if base is None:
            base = in_names[pn]
            if base.endswith(MUST_ALIAS_SUFFIX):
                base = base[:-len(MUST_ALIAS_SUFFIX)]
        out_names[leaf] = base
        in_names[pn] = base + MUST_ALIAS_SUFFIX
        aliased.add(base)
    final_out = [n if n is not None else
                 (f"output{i}") for i, n in enumerate(out_names)]

    taken: dict[str, str] = {}
    for kind, names in (("input", in_names), ("output", final_out)):
        for n in names:
            if not n:
                raise ValueError(f"an {kind} name is empty")
            if "\0" in n:
                raise ValueError(f"{kind} name {n!r:.200} contains a NUL "
                                 f"character, which a tensor name cannot "
                                 f"hold")
            if _RESERVED.match(n):
                raise ValueError(f"{kind} name {n!r} is reserved for the "
                                 f"program's temporaries and constants")
            if n in taken:
                raise ValueError(f"duplicate tensor name {n!r} (an {taken[n]} "
                                 f"and an {kind})")
            taken[n] = kind

    # -- lowering ------------------------------------------------------------
    for p, n in zip(params, in_names):
        if 0 in p.shape.dims:
            raise ValueError(f"input {n!r} has no elements (shape {p.shape}); "
                             f"NEFF tensors need at least one")
    args = []
    for p, n in zip(params, in_names):
        dims, dtype = _neff_io(p.shape.dims, p.shape.dtype)
        buf = ctx.program.buffer("input", dims, dtype, name=n)
        args.append(ctx.cast(ctx.reshape(buf, p.shape.dims), p.shape.dtype))
    for n in final_out:
        if n in ctx.program.buffers:
            raise ValueError(f"duplicate tensor name {n!r}")
    result = ctx.inline(entry, args)
    leaves = [ctx.materialize(v) for v in _leaves(result)]
    for n in final_out:
        if n in ctx.program.buffers and ctx.program.buffers[n]["kind"] != "input":
            raise ValueError(f"output name {n!r} collides with a buffer of the "
                             f"program")
    # Zero-element outputs are left out of the NEFF, as neuronx-cc does
    # (nkipy makes them on the host); the others in neuronx-cc's form.
    kept = []
    for n, leaf in zip(final_out, leaves):
        if 0 not in leaf.shape:
            dims, dtype = _neff_io(tuple(leaf.shape), leaf.dtype)
            kept.append((n, ctx.reshape(ctx.cast(leaf, dtype), dims)))
    if not kept:
        # Nothing to compute that anyone can see (nkipy runs such a NEFF
        # and makes the empty results on the host): a program of no ops.
        ctx.program.ops.clear()
        for n in [n for n, b in ctx.program.buffers.items() if b["kind"] != "input"]:
            del ctx.program.buffers[n]
        ctx.program.consts.clear()
    _forward_input_copies(ctx.program, kept)
    outputs = _attach_outputs(ctx.program, kept, copy=aliased)
    _rematerialize_casts(ctx.program)
    neff_name = name or mod.name or Path(os.fspath(path)).stem
    return _write_neff(path, ctx.program, in_names, outputs,
                       neff_name=neff_name, generator="nrtpy.hlo")


def _neff_io(dims: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a NEFF declares for an entry parameter or result
    of ``dims`` and ``dtype``, as neuronx-cc writes them (docs/hlo.md): a
    scalar is a [1] tensor (Spike, like NumPy's ascontiguousarray, makes a
    0-d array 1-d and checks shapes strictly), and pred is uint8 holding 0
    or 1 (the runtime has no bool; nkipy passes uint8 arrays)."""
    return (dims or (1,)), (np.dtype(np.uint8) if dtype == np.bool_ else dtype)


def _rematerialize_casts(program) -> None:
    """Give each later reader of a cast its own cast, written just before
    it, as XLA's fusion duplicates cheap producers into each consumer.

    A widened copy of an input read by two fusion chains (a bfloat16 RMS
    norm reads ``x.astype(float32)`` for its mean square, then again to
    scale it) is otherwise written to memory at twice the input's size
    and read back; with a cast of its own in each chain, the emulator's
    fusion keeps every copy an intermediate that never reaches memory.
    Only casts of the top-level op list, of a buffer that nothing writes
    after the cast and nested lists do not touch, and whose result nested
    lists do not read.
    """
    from nrtpy import _dtypes
    from nrtpy.neff import _walk_ops

    ops = program.ops
    top = {id(op) for op in ops}
    # Names a top-level op refers to other than through "in" (a while's
    # "pred"), and every name of the nested lists' ops.
    nested = {v for op in ops for k, v in op.items()
              if k not in ("in", "out") and isinstance(v, str)}
    nested.update(n for op in _walk_ops(ops) if id(op) not in top
                  for n in (*op.get("in", ()), op.get("out"), op.get("pred")))
    writes: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        if "out" in op:
            writes.setdefault(op["out"], []).append(i)
    # reader index -> [(the cast's out, its own copy's name, the source)]
    copies: dict[int, list[tuple[str, str, str]]] = {}
    for i, op in enumerate(ops):
        if op.get("op") != "cast" or len(op.get("in", ())) != 1:
            continue
        out, src = op["out"], op["in"][0]
        info = program.buffers.get(out)
        # (the source must hold the same value at every reader: written
        # by no op after the cast, nor by a nested list's, as a while's
        # body writes its loop-carried buffers)
        if info is None or info["kind"] != "temp" or out in nested or \
                src in nested or writes.get(out) != [i] or \
                any(w > i for w in writes.get(src, ())):
            continue
        readers = [j for j in range(i + 1, len(ops)) if out in ops[j].get("in", ())]
        for j in readers[1:]:
            name = program.buffer("temp", tuple(info["shape"]),
                                  _dtypes.to_numpy(info["dtype"])).name
            copies.setdefault(j, []).append((out, name, src))
    if not copies:
        return
    result: list[dict] = []
    for j, op in enumerate(ops):
        own = {out: name for out, name, _ in copies.get(j, ())}
        for out, name, src in copies.get(j, ()):
            result.append({"op": "cast", "in": [src], "out": name})
        if own:
            op["in"] = [own.get(n, n) for n in op["in"]]
        result.append(op)
    ops[:] = result


# Element types of entry parameters and results (arrays NEFFs can hold).
_ARRAY_TYPES = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 19, 20, 28}


def _input_name(p: Instruction) -> str:
    attr = p.frontend_attributes.get("neff_input_names")
    if attr:
        return attr
    base = _SUFFIX.sub("", p.name)
    return base or f"input{p.parameter_number}"
