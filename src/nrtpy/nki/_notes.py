"""What each op of a kernel's program was made for: its instruction.

Every public function of ``nki.isa`` and ``nki.language`` is wrapped
(:func:`instrument`, at the end of each module) so that the ops one call
appends, its nested calls included, get the instruction's description (its
name, its engine, its tensor operands and the kernel's source line) as
their ``note`` (docs/neff-emulator-format.md); a trace of the NEFF
(``save_trace``, ``nrt_profile_start``) shows one event per instruction
named by it::

    tensor_tensor [vector] add.py:12 dst=float32[128,512]@sbuf data1=... -> 2 ops

(The description is made at once: keeping the instruction's arguments
until the NEFF is written would cost more, in garbage collection, than
describing them.)
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Any, Callable

from nrtpy import _dtypes
from nrtpy.nki import _core

# Frames in these files are nrtpy's; the first other one is the kernel's.
_NRTPY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Engines of the instructions that are not the vector engine's.
ENGINES: dict[str, str] = {
    **dict.fromkeys(("nc_matmul", "nc_matmul_mx", "matmul", "nc_transpose",
                     "transpose", "quantize_mx"), "tensor"),
    **dict.fromkeys(("activation", "activation_reduce", "activate2", "exp",
                     "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu",
                     "gelu_dx", "gelu_apprx_tanh", "gelu_apprx_sigmoid",
                     "gelu_apprx_sigmoid_dx", "silu", "silu_dx", "sin", "cos",
                     "tan", "arctan", "erf", "erf_dx", "softplus", "mish",
                     "square", "softmax", "rms_norm"), "scalar"),
    **dict.fromkeys(("iota", "affine_select", "local_gather", "rand",
                     "dropout", "sequence_bounds", "nc_stream_shuffle",
                     "shared_identity_matrix", "gather_flattened",
                     "nonzero_with_count", "topk", "tensor_partition_reduce"),
                    "gpsimd"),
    **dict.fromkeys(("load", "store", "dma_copy", "dma_transpose",
                     "load_transpose2d", "dma_compute"), "dma"),
}

_depth = 0


def _engine(name: str, kwargs: dict[str, Any]) -> str:
    e = kwargs.get("engine")
    value = getattr(e, "name", None)
    if isinstance(value, str) and value not in ("unknown", ""):
        return value
    return ENGINES.get(name, "vector")


def _wrap(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def instruction(*args: Any, **kwargs: Any) -> Any:
        global _depth
        if _depth or not _core._stack:
            return fn(*args, **kwargs)
        trace = _core._stack[-1]
        ops = trace.program.ops
        start = trace.rewound = len(ops)
        _depth += 1
        try:
            result = fn(*args, **kwargs)
        finally:
            _depth -= 1
        start = min(start, trace.rewound)
        end = len(ops)
        if end > start:
            f = sys._getframe(1)
            while f is not None and f.f_code.co_filename.startswith(_NRTPY_DIR):
                f = f.f_back
            where = (f.f_code.co_filename, f.f_lineno) if f is not None else None
            note = describe(name, fn, args, kwargs, where, end - start)
            for k in range(start, end):
                ops[k]["note"] = note
        return result
    instruction.__wrapped__ = fn  # type: ignore[attr-defined]
    return instruction


def instrument(namespace: dict[str, Any], names: tuple[str, ...]) -> None:
    """Wrap the functions of ``names`` defined in ``namespace`` (a module's
    globals) as instructions."""
    module = namespace["__name__"]
    for name in names:
        fn = namespace.get(name)
        if inspect.isfunction(fn) and fn.__module__ == module:
            namespace[name] = _wrap(fn, name)


_operand_text: dict[tuple, str] = {}


def _operand(value: Any) -> str | None:
    if not isinstance(value, (_core.NkiTensor, _core.View)):
        return None
    key = (value.dtype, value.shape, value.buffer)
    text = _operand_text.get(key)
    if text is None:
        buf = getattr(value.buffer, "value", value.buffer)
        text = f"{_dtypes.name_of(value.dtype)}[{','.join(map(str, value.shape))}]@{buf}"
        _operand_text[key] = text
    return text


def _params(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The names of ``fn``'s positional parameters."""
    code = fn.__code__
    return code.co_varnames[:code.co_argcount]


def describe(name: str, fn: Callable[..., Any], args: tuple, kwargs: dict,
             where: tuple[str, int] | None, n_ops: int) -> str:
    """``name [engine] file:line operand=dtype[shape]@memory ... -> n ops``."""
    parts = [f"{name} [{_engine(name, kwargs)}]"]
    if where is not None:
        parts.append(f"{os.path.basename(where[0])}:{where[1]}")
    names = _params(fn)
    for k, value in enumerate(args):
        d = _operand(value)
        if d is not None:
            parts.append(f"{names[k] if k < len(names) else f'arg{k}'}={d}")
    for pname, value in kwargs.items():
        d = _operand(value)
        if d is not None:
            parts.append(f"{pname}={d}")
    parts.append(f"-> {n_ops} op{'s' if n_ops != 1 else ''}")
    return " ".join(parts)
