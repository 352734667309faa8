"""NKI kernels embedded in an HLO module: ``custom-call
AwsNeuronCustomNativeKernel`` whose ``backend_config`` nrtpy.nki wrote.

nkipy (and any framework that follows the NKI framework protocol) traces an
``@nki.jit`` kernel once, at the module's trace, and puts what the NKI
compiler dumped into the custom call.  ``nrtpy.nki``'s dump
(:mod:`nrtpy.nki._embed`) is the kernel's NEFF itself: the lowering here
reads its emulator program and inlines it, the kernel's inputs being the
custom call's operands and its outputs the call's results.  A
``backend_config`` from AWS's NKI compiler (a kernel compiled for
Trainium's engines) is not something the emulator can run.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import tarfile
from typing import Any

import numpy as np

from nrtpy import _dtypes
from nrtpy.hlo._lower import Lowering, Value
from nrtpy.hlo._module import Instruction
from nrtpy.neff._trace import Traced

#: How nrtpy.nki's backend_config begins (the rest is JSON).
PREFIX = "nrtpy-nki-kernel;"

_HEADER_SIZE = 1024  # a NEFF's header; the tar payload follows
_MAX_MEMBERS = 4096


def is_nrtpy_kernel(config: str) -> bool:
    return config.startswith(PREFIX)


def _read_neff(ctx: Lowering, ins: Instruction, data: bytes) -> dict[str, Any]:
    """def.json, program.json and the constants of an embedded NEFF."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data[_HEADER_SIZE:]), mode="r:*")
    except (tarfile.TarError, EOFError, OSError) as e:
        raise ctx.malformed(ins, f"the embedded NKI kernel is not a NEFF "
                                 f"({e})") from None
    files: dict[str, bytes] = {}
    with tar:
        for k, member in enumerate(tar):
            if k >= _MAX_MEMBERS:
                raise ctx.malformed(ins, "the embedded NKI kernel has too "
                                         "many files")
            if member.isfile():
                f = tar.extractfile(member)
                if f is not None:
                    files[member.name] = f.read()
    try:
        definition = json.loads(files["sg00/def.json"])
        program = json.loads(files["sg00/program.json"])
    except (KeyError, ValueError) as e:
        raise ctx.malformed(ins, f"the embedded NKI kernel has no emulator "
                                 f"program ({e})") from None
    return {"def": definition, "program": program, "files": files}


def inline_kernel(ctx: Lowering, ins: Instruction) -> Value:
    """Lower ``ins``, a custom call carrying nrtpy.nki's dump: the kernel's
    program inlined, its buffers renamed into the module's program."""
    try:
        header = json.loads(ins.backend_config[len(PREFIX):])
        neff = base64.b64decode(header["neff"], validate=True)
        out_names = [str(n) for n in header["outputs"]]
    except (ValueError, KeyError, TypeError, binascii.Error) as e:
        raise ctx.malformed(ins, f"backend_config of an nrtpy NKI kernel "
                                 f"cannot be read ({e})") from None
    kernel = header.get("kernel", "kernel")
    parts = _read_neff(ctx, ins, neff)
    var = parts["def"].get("var", {})
    buffers = parts["program"].get("buffers", {})
    inputs = [n for n, v in var.items() if v.get("type") == "input"]
    if len(inputs) != len(ins.operand_ids):
        raise ctx.malformed(ins, f"NKI kernel {kernel!r} takes {len(inputs)} "
                                 f"tensors, the custom call passes "
                                 f"{len(ins.operand_ids)}")
    rename: dict[str, str] = {}
    for k, name in enumerate(inputs):
        arg = ctx.operand(ins, k)
        want = buffers[name]
        if list(arg.shape) != list(want["shape"]) or \
                _dtypes.name_of(arg.dtype) != want["dtype"]:
            raise ctx.malformed(ins, f"NKI kernel {kernel!r}: operand {k} "
                                     f"({name}) is {_dtypes.name_of(arg.dtype)}"
                                     f"{list(arg.shape)}, the kernel was traced "
                                     f"for {want['dtype']}{want['shape']}")
        rename[name] = arg.name
    for name, b in buffers.items():
        if name in rename:
            continue
        shape = tuple(int(d) for d in b["shape"])
        if b["kind"] == "const":
            raw = parts["files"].get(f"sg00/{var[b['var']]['file_name']}")
            if raw is None:
                raise ctx.malformed(ins, f"NKI kernel {kernel!r}: constant "
                                         f"{name!r} is missing")
            rename[name] = ctx.const(np.load(io.BytesIO(raw),
                                             allow_pickle=False)).name
        else:  # temp or output: a temporary of the module
            rename[name] = ctx.temp(shape, _dtypes.to_numpy(b["dtype"])).name
    for op in parts["program"].get("ops", []):
        ctx.emit_raw(_renamed(op, rename))
    results = []
    for name in out_names:
        b = buffers.get(name)
        if b is None or b["kind"] != "output":
            raise ctx.malformed(ins, f"NKI kernel {kernel!r} has no output "
                                     f"{name!r}")
        results.append(Traced(ctx.program, rename[name],
                              tuple(int(d) for d in b["shape"]),
                              _dtypes.to_numpy(b["dtype"])))
    leaves = ins.shape.leaves()
    if len(leaves) != len(results) or any(
            tuple(leaf.dims) != r.shape or leaf.dtype != r.dtype
            for leaf, r in zip(leaves, results)):
        got = ", ".join(f"{_dtypes.name_of(r.dtype)}{list(r.shape)}" for r in results)
        raise ctx.malformed(ins, f"NKI kernel {kernel!r} returns {got}, the "
                                 f"custom call's shape is {ins.shape}")
    return tuple(results) if ins.shape.is_tuple else results[0]


def _renamed(op: dict[str, Any], rename: dict[str, str]) -> dict[str, Any]:
    """A copy of ``op`` naming the module's buffers (nested op lists too)."""
    rec: dict[str, Any] = {}
    for key, value in op.items():
        if key == "in":
            rec[key] = [rename[n] for n in value]
        elif key in ("out", "pred"):
            rec[key] = rename[value]
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            rec[key] = [_renamed(o, rename) for o in value]
        elif isinstance(value, list) and value and isinstance(value[0], list) \
                and all(not v or isinstance(v[0], dict) for v in value):
            rec[key] = [[_renamed(o, rename) for o in v] for v in value]
        else:
            rec[key] = value
    return rec
