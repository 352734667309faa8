"""Write and inspect NEFFs: ``nrtpy.neff.compile`` and ``nrtpy.neff.inspect``.

``compile`` traces a Python function written with NumPy operators and
functions into a NEFF that the nrtpy emulator executes::

    import numpy as np
    import nrtpy.neff

    def kernel(a_input, b_input):
        return a_input + b_input

    a = np.ones((128, 512), np.float16)
    path = nrtpy.neff.compile(kernel, a, a, path="add.neff")
    model = nrtpy.NrtpyModel.load_from_neff(path)

Inputs are named after the function's parameters, outputs ``output_0``,
``output_1``, ...  (a tuple return gives several outputs).  NumPy arrays the
function closes over become constants.  Supported: ``+ - * / @ **``,
comparisons, unary ufuncs (``np.exp``, ``np.tanh``, ...), ``np.maximum``,
``np.minimum``, ``np.where``, ``np.sum/mean/max/min/prod/argmax/argmin``
with ``axis=`` and ``keepdims=``, ``np.matmul``, ``np.take``,
``np.transpose`` / ``.T``, ``reshape``, ``astype``, ``np.concatenate``,
``np.broadcast_to``, basic slicing with constants (ints, slices, ``None``,
``...``), ``& | ^ ~`` on booleans, and this module's
``relu``, ``gelu``, ``sigmoid``, ``rsqrt``, ``softmax``, and the collectives
``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all`` and
``collective_permute`` (for NEFFs that ``world_size`` ranks load with
``cc_enabled=True``).  Anything else raises ``TypeError`` naming the
operation.
"""

from __future__ import annotations

import errno
import inspect as _inspect
import io
import json
import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from nrtpy import _dtypes, _nrtpy
from nrtpy.neff import _container
from nrtpy.neff._collectives import (all_gather, all_reduce, all_to_all,
                                    collective_permute, reduce_scatter)
from nrtpy.neff._ops import gelu, relu, rsqrt, sigmoid, softmax
from nrtpy.neff._trace import Program, Traced

__all__ = ["compile", "compile_hlo", "inspect", "relu", "gelu", "sigmoid",
           "rsqrt", "softmax", "all_reduce", "all_gather", "reduce_scatter",
           "all_to_all", "collective_permute"]

PROGRAM_FORMAT = "nrtpy-emulator-program"
PROGRAM_VERSION = 1


def _input_names(fn: Callable[..., Any], count: int) -> list[str]:
    names: list[str] = []
    for p in _inspect.signature(fn).parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            names.extend(f"{p.name}{i}" for i in range(count - len(names)))
            break
    if len(names) < count:
        raise TypeError(f"{fn.__name__}() takes {len(names)} positional "
                        f"arguments but {count} example inputs were given")
    return names[:count]


_NPY_HEADERS: dict[tuple[str, tuple[int, ...]], bytes] = {}


def _npy_bytes(array: np.ndarray) -> bytes:
    """``array`` as np.save writes it, the header made once per dtype and
    shape (a kernel's index constants share a few)."""
    array = np.ascontiguousarray(array).reshape(np.shape(array))
    key = (array.dtype.str, array.shape)
    header = _NPY_HEADERS.get(key)
    if header is None:
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            buf, np.lib.format.header_data_from_array_1_0(array))
        if len(_NPY_HEADERS) >= 4096:
            _NPY_HEADERS.clear()
        header = _NPY_HEADERS[key] = buf.getvalue()
    return header + array.tobytes()


def compile(fn: Callable[..., Any], *example_inputs: Any,
            path: str | Path, name: str | None = None,
            output_names: Sequence[str] | None = None,
            world_size: int = 1) -> Path:
    """Trace ``fn`` over arrays shaped like ``example_inputs``; write a NEFF.

    Args:
        fn: a function of arrays, written with NumPy operators and functions.
        example_inputs: arrays (or objects with ``shape`` and ``dtype``) that
            fix each input's shape and dtype; their values are not used.
        path: where to write the NEFF.
        name: the NEFF's name (default: ``fn.__name__``).
        output_names: names for the outputs instead of ``output_0``,
            ``output_1``, ... (one per returned array).
        world_size: the number of ranks that will load the NEFF, for the
            collectives without ``replica_groups`` (which span them all).

    Returns:
        ``path``, as a ``Path``.

    Raises:
        TypeError: ``fn`` uses an operation the emulator does not support,
            or an argument has the wrong type (``fn`` not callable, ``path``
            not a path, ``name`` or an output name not a str).
        ValueError: ``fn`` returns no outputs, an input or output has no
            elements, or the output names do not fit.
        IsADirectoryError: ``path`` is a directory.
        FileNotFoundError: the folder of ``path`` does not exist.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {type(fn).__name__}: "
                        f"{fn!r:.200}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got "
                        f"{type(path).__name__}: {path!r:.200}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str or None, got "
                        f"{type(name).__name__}: {name!r:.200}")
    if output_names is not None:
        if isinstance(output_names, (str, bytes)) or \
                not isinstance(output_names, Sequence):
            raise TypeError(f"output_names must be a sequence of str, got "
                            f"{type(output_names).__name__}: "
                            f"{output_names!r:.200}")
        for out_name in output_names:
            if not isinstance(out_name, str):
                raise TypeError(f"output name {out_name!r:.200} must be a "
                                f"str, not {type(out_name).__name__}")
    _check_target(path)  # before tracing
    if isinstance(world_size, bool) or not isinstance(world_size, int):
        raise TypeError(f"world_size must be an int, got "
                        f"{type(world_size).__name__}: {world_size!r:.200}")
    if not 1 <= world_size <= 1024:
        raise ValueError(f"world_size must be from 1 to 1024, got {world_size}")
    program = Program()
    program.world_size = world_size
    names = _input_names(fn, len(example_inputs))
    inputs = []
    for pname, example in zip(names, example_inputs):
        shape = tuple(int(d) for d in np.shape(example))
        dtype = np.dtype(example.dtype) if hasattr(example, "dtype") else np.asarray(example).dtype
        if 0 in shape:
            raise ValueError(f"input {pname!r} has no elements (shape {shape}); "
                             f"NEFF tensors need at least one")
        inputs.append(program.buffer("input", shape, dtype, name=pname))

    result = fn(*inputs)
    results = result if isinstance(result, tuple) else (result,)
    if not results:
        raise ValueError(f"{getattr(fn, '__name__', 'fn')}() returned no "
                         f"outputs (an empty tuple); a NEFF needs at least "
                         f"one")
    if output_names is None:
        output_names = [f"output_{i}" for i in range(len(results))]
    output_names = list(output_names)
    if len(output_names) != len(results):
        raise ValueError(f"{len(output_names)} output names for "
                         f"{len(results)} outputs")
    taken = set(names)
    for out_name in output_names:
        # Program temporaries and constants are named "tmp.N"/"const.N";
        # parameter names cannot contain a dot, output names must not.
        if not isinstance(out_name, str) or not out_name or "." in out_name \
                or out_name in taken:
            raise ValueError(f"output name {out_name!r} must be a non-empty "
                             f"str without '.', distinct from the inputs "
                             f"{names} and the other outputs")
        if "\0" in out_name:
            raise ValueError(f"output name {out_name!r:.200} contains a NUL "
                             f"character, which a tensor name cannot hold")
        taken.add(out_name)
    outputs = _attach_outputs(program, [(n, program.operand(v)) for n, v in
                                        zip(output_names, results)])
    neff_name = name or getattr(fn, "__name__", "kernel")
    return _write_neff(path, program, [t.name for t in inputs], outputs,
                       neff_name=neff_name, generator="nrtpy.neff")


def _walk_ops(ops: list[dict[str, Any]]):
    """Every op of a program, those in nested op lists (``while``'s
    ``cond``/``body``, ``conditional``'s ``branches``) included."""
    stack = [ops]
    while stack:
        for op in stack.pop():
            yield op
            for value in op.values():
                if isinstance(value, list) and value:
                    if isinstance(value[0], dict):
                        stack.append(value)
                    elif isinstance(value[0], list):
                        stack.extend(v for v in value if v and isinstance(v[0], dict))


def _names_of(op: dict[str, Any]) -> set[str]:
    """The buffers an op names, in its nested op lists too."""
    names: set[str] = set()
    for o in _walk_ops([op]):
        names.update(o.get("in", ()))
        names.update(o[k] for k in ("out", "pred") if k in o)
    return names


def _defined_first(ops: list[dict[str, Any]]) -> set[str]:
    """The buffers whose first mention in `ops` is a top-level op that
    writes them without reading them (every op writes all of its out)."""
    seen: set[str] = set()
    defined: set[str] = set()
    for op in ops:
        names = _names_of(op)
        out = op.get("out")
        if out is not None and out not in seen and out not in op.get("in", ()) \
                and "cond" not in op and "body" not in op and "branches" not in op:
            defined.add(out)
        seen |= names
    return defined


def _forward_input_copies(program: Program, results: list[tuple[str, Traced]]) -> None:
    """Drop each top-level copy of an input or a constant into a temporary
    that nothing else writes, its readers reading the input instead: an
    input or a constant is never written, so both hold the same values for
    as long as the program runs (a loop's state that the loop only reads,
    as HLO writes it)."""
    writers: dict[str, int] = {}
    for op in _walk_ops(program.ops):
        if "out" in op:
            writers[op["out"]] = writers.get(op["out"], 0) + 1
    rename: dict[str, str] = {}
    kept = []
    for op in program.ops:
        if op["op"] == "copy" and len(op.get("in", ())) == 1:
            src, dst = op["in"][0], op["out"]
            if program.buffers[src]["kind"] in ("input", "const") and \
                    program.buffers[dst]["kind"] == "temp" and writers[dst] == 1 and \
                    program.buffers[src]["shape"] == program.buffers[dst]["shape"] and \
                    program.buffers[src]["dtype"] == program.buffers[dst]["dtype"]:
                rename[dst] = src
                continue
        kept.append(op)
    if not rename:
        return
    program.ops[:] = kept
    for op in _walk_ops(program.ops):
        if "in" in op:
            op["in"] = [rename.get(n, n) for n in op["in"]]
        if op.get("pred") in rename:
            op["pred"] = rename[op["pred"]]
    for name in rename:
        del program.buffers[name]
    for _, t in results:
        t.name = rename.get(t.name, t.name)


def _check_target(path: str | os.PathLike) -> None:
    """Refuse, before any work, a NEFF path that cannot be written: a
    folder, or a file in a folder that does not exist.  Said of the path
    given (the writer's own errors would name its temporary file)."""
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "path is a directory, not a "
                                "NEFF file to write", os.fspath(path))
    folder = os.path.dirname(os.fspath(path)) or os.curdir
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, "the folder of path does not "
                                "exist", os.fspath(path))


def _attach_outputs(program: Program, results: list[tuple[str, Traced]],
                    copy: frozenset[str] | set[str] = frozenset()
                    ) -> list[tuple[str, dict[str, Any]]]:
    """Make each (name, value) of `results` an output buffer of `program`.

    A temporary becomes the output itself (the ops that write it write the
    output directly) when one op writes it, or when the first op of the
    program that names it writes all of it (reads it not) at the top
    level: then the ops after may rewrite it (a loop's state) and its value
    at the end is the result, while no op ever sees what the caller's
    output buffer held.  Not so when its name is in `copy`; anything else
    (an input, a constant, a value output twice, a temporary that ops
    update piece by piece from its initial zeros) is copied into the
    output by an op appended at the end.  Returns (name, buffer entry) per
    output.
    """
    writers: dict[str, int] = {}
    for op in _walk_ops(program.ops):
        if "out" in op:
            writers[op["out"]] = writers.get(op["out"], 0) + 1
    top_writers = {op["out"] for op in program.ops if "out" in op}
    defined = _defined_first(program.ops)
    outputs = []
    renamed: dict[str, str] = {}  # temporaries that became outputs
    for out_name, t in results:
        if 0 in t.shape:
            raise ValueError(f"{out_name} has no elements (shape {t.shape}); "
                             f"NEFF tensors need at least one")
        # Another handle on a buffer already made an output: copied from it.
        t.name = renamed.get(t.name, t.name)
        info = program.buffers[t.name]
        if info["kind"] == "temp" and out_name not in copy and (
                (writers.get(t.name) == 1 and t.name in top_writers)
                or t.name in defined):
            # Let the op that computes the result write the output directly.
            program.buffers[out_name] = dict(info, kind="output")
            del program.buffers[t.name]
            old = t.name
            for op in _walk_ops(program.ops):
                if old in op.get("in", ()):
                    op["in"] = [out_name if n == old else n for n in op["in"]]
                if op.get("out") == old:
                    op["out"] = out_name
                for key in ("pred",):
                    if op.get(key) == old:
                        op[key] = out_name
            t.name = renamed[old] = out_name
        else:
            program.buffers[out_name] = dict(info, kind="output")
            program.buffers[out_name].pop("var", None)
            program.ops.append({"op": "copy", "in": [t.name], "out": out_name})
        outputs.append((out_name, program.buffers[out_name]))
    return outputs


def _write_neff(path: str | Path, program: Program, input_names: list[str],
                outputs: list[tuple[str, dict[str, Any]]], *, neff_name: str,
                generator: str, compress: bool = True) -> Path:
    """Write `program` (inputs `input_names`, outputs from _attach_outputs)
    as a NEFF at `path`: def.json, program.json and the constants (the
    payload gzipped unless `compress` is false)."""
    var: dict[str, dict[str, Any]] = {}
    var_id = 0

    def add_var(vname: str, entry: dict[str, Any]) -> None:
        nonlocal var_id
        var[vname] = dict(entry, var_id=var_id)
        var_id += 1

    for in_name in input_names:
        b = program.buffers[in_name]
        size = int(np.prod(b["shape"], dtype=np.int64)) * \
            _dtypes.to_numpy(b["dtype"]).itemsize
        add_var(in_name, {"type": "input", "size": size,
                          "shape": b["shape"], "dtype": b["dtype"]})
    for out_name, b in outputs:
        size = int(np.prod(b["shape"], dtype=np.int64)) * \
            _dtypes.to_numpy(b["dtype"]).itemsize
        add_var(out_name, {"type": "output", "size": size, "shape": b["shape"],
                           "dtype": b["dtype"]})
    files: dict[str, bytes] = {}
    for cname, array in program.consts.items():
        add_var(cname, {"type": "file", "file_name": f"{cname}.npy",
                        "size": array.nbytes})
        files[f"sg00/{cname}.npy"] = _npy_bytes(array)

    prog = {"format": PROGRAM_FORMAT, "version": PROGRAM_VERSION,
            "buffers": program.buffers, "ops": program.ops}
    files["neff.json"] = json.dumps({
        "name": neff_name, "version": "2.0", "generator": generator,
        "subgraphs": ["sg00"]}, indent=1).encode()
    # (compact, as program.json: json's C encoder only runs without indent,
    # and programs of thousands of ops and constants are common)
    files["sg00/def.json"] = json.dumps(
        {"var": var, "emulator_program": "program.json"},
        separators=(",", ":")).encode()
    files["sg00/program.json"] = json.dumps(prog, separators=(",", ":")).encode()
    return _container.write(path, files, name=neff_name, compress=compress)


def compile_hlo(module: Any, path: str | Path, *, name: str | None = None,
                input_names: Sequence[str] | None = None,
                output_names: Sequence[str] | None = None) -> Path:
    """Compile an XLA HLO module into a NEFF that the emulator executes.

    Args:
        module: the bytes of a serialized ``HloModuleProto``; a str or
            ``os.PathLike`` naming a file holding them (``.pb``); an object
            with ``as_serialized_hlo_module_proto()`` (what JAX's
            ``jax.jit(f).lower(*args).compiler_ir("hlo")`` returns); or a
            JAX ``Lowered`` (``jax.jit(f).lower(*args)``).
        path: where to write the NEFF (written to a temporary file beside
            it, then renamed: ``path`` never holds a partial NEFF).
        name: the NEFF's name (default: the module's name).
        input_names: names of the entry parameters, in parameter-number
            order (default: each parameter's
            ``frontend_attributes["neff_input_names"]``, else its name
            without XLA's ``.N`` suffix, else ``input{N}``).
        output_names: names of the outputs, the leaves of the entry root
            in order (default: the root's comma-separated
            ``frontend_attributes["neff_output_names"]``, else ``output0``,
            ``output1``, ...).

    An ``input_output_alias`` entry makes the parameter
    ``<name>.must_alias_input`` and the output ``<name>``, which
    ``NrtpyModel`` updates in place (``<name>`` is the output's explicit
    name, else the parameter's).  Semantics are XLA's; docs/hlo.md lists
    the opcodes covered and the tolerance of reductions and dots.

    Returns:
        ``path``, as a ``Path``.

    Raises:
        NotImplementedError: an opcode, attribute or dtype the compiler
            does not cover (naming the opcode, instruction and computation).
        ValueError: a malformed module (naming the byte offset or the
            instruction), or names that do not fit (duplicates, counts).
        TypeError: ``module`` or a name of the wrong type.
        FileNotFoundError, IsADirectoryError: ``path``'s folder is missing,
            or ``path`` is a folder.
    """
    from nrtpy.hlo._compile import compile_hlo as _compile_hlo

    return _compile_hlo(module, path, name=name, input_names=input_names,
                        output_names=output_names)


def inspect(path: str | Path) -> dict[str, Any]:
    """Header fields and I/O table of any NEFF, as plain Python data.

    Returns a dict with ``header`` (the header fields: integers, text, and
    ``hash``/``uuid``/``tpb_per_node`` as hex), ``inputs`` and ``outputs``
    (lists, in NEFF order, of dicts with ``name``, ``size`` in bytes,
    ``shape`` (``[size]`` when the NEFF has none) and ``dtype`` (a name, or
    ``"unknown"``)), ``subgraphs`` (their names), ``emulator_program``
    (whether the emulator can execute it) and ``files`` (the archive's
    members).

    The NEFF is read by the emulator's own reader, with the limits
    ``nrt_load`` applies (bounded decompression, entry count, JSON depth),
    so a hostile file costs no more here than there.

    Raises:
        FileNotFoundError: no file at ``path``.
        OSError: not a regular file (a directory, FIFO or device).
        ValueError: the file is not a valid NEFF.
    """
    return json.loads(_nrtpy.neff_describe(os.fspath(path)))
