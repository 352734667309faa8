"""``nki.framework``: how a framework compiles an ``@nki.jit`` kernel into
its own module (``nki.framework.kernel`` and ``nki.framework.compiled``).

nkipy, tracing a NumPy function that calls a kernel, copies the kernel's
fields into a :class:`CompileKernel`, compiles it for the arguments'
shapes (``_cached_compile_to_bir``) and emits ``custom-call
AwsNeuronCustomNativeKernel`` with the result's
``build_config().backend_config_b64``.  Here that compile is nrtpy.nki's
trace, and the config the kernel's NEFF (:mod:`nrtpy.nki._embed`), which
``nrtpy-cc`` inlines.  Allocation and scheduling options (the compile
modes, pipeline options) are accepted and have nothing to change: the
emulator allocates its own buffers.
"""

from __future__ import annotations

import builtins
import dataclasses
import types
from typing import Any, Callable

import numpy as np

from nrtpy.nki import Kernel
from nrtpy.nki._core import MemoryRegion

__all__ = ["Kernel", "CompileKernel", "CompileOptions", "FrameworkConfig",
           "OutputSpec", "NirResult"]


class _ImplicitMemory:
    """``sbuf``, ``psum`` or ``hbm`` as kernels of NKI's beta 2 frontend
    use them without importing them: ``sbuf.view(dtype=..., shape=...)``
    allocates a tensor there."""

    def __init__(self, region: MemoryRegion) -> None:
        self.region = region

    def view(self, dtype: Any, shape: Any, name: str = "") -> Any:
        from nrtpy.nki import language
        return language.ndarray(tuple(shape), dtype, buffer=self.region, name=name)

    def __repr__(self) -> str:
        return f"<{self.region.value}>"


_IMPLICIT = {"sbuf": MemoryRegion.sbuf, "psum": MemoryRegion.psum,
             "hbm": MemoryRegion.shared_hbm}


def with_implicit_memories(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, or a copy whose globals also hold the memories the beta 2
    frontend provides (``sbuf``, ``psum``, ``hbm``) that it names without
    defining them."""
    code = getattr(fn, "__code__", None)
    glob = getattr(fn, "__globals__", None)
    if code is None or glob is None:
        return fn
    missing = [n for n in _IMPLICIT if n in code.co_names and n not in glob
               and not hasattr(builtins, n)]
    if not missing:
        return fn
    g = dict(glob)
    g.update({n: _ImplicitMemory(_IMPLICIT[n]) for n in missing})
    copy = types.FunctionType(code, g, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """Compile options; the pipeline options are kept, and change nothing."""

    pipeline_options: tuple[str, ...] = ()
    backend_optimizations: bool = True

    def disable_backend_optimizations(self) -> CompileOptions:
        return dataclasses.replace(self, backend_optimizations=False)

    def set_pipeline_options(self, *options: str) -> CompileOptions:
        for o in options:
            if not isinstance(o, str):
                raise TypeError(f"a pipeline option must be a str, got "
                                f"{type(o).__name__}")
        return dataclasses.replace(self, pipeline_options=self.pipeline_options + options)


@dataclasses.dataclass(frozen=True)
class OutputSpec:
    """One result of a compiled kernel."""

    shape: tuple[int, ...]
    dtype: np.dtype


@dataclasses.dataclass(frozen=True)
class FrameworkConfig:
    """What a framework puts in its custom call."""

    backend_config_b64: str
    output_specs: list[OutputSpec]
    operand_output_aliases: dict[int, int]
    input_names: list[str]
    has_collectives: bool = False


class NirResult:
    """A compiled kernel: its config and whether it returns a tuple."""

    def __init__(self, dump: Any) -> None:
        self._dump = dump
        self.is_tuple_return = dump.is_tuple

    def build_config(self) -> FrameworkConfig:
        d = self._dump
        return FrameworkConfig(d.backend_config,
                               [OutputSpec(shape, dtype) for dtype, shape in d.outputs],
                               dict(d.aliases), list(d.input_names))


class _Frontend:
    def __init__(self, enable_backend_opt: bool = False) -> None:
        self.enable_backend_opt = enable_backend_opt


@dataclasses.dataclass(frozen=True)
class CompileKernel:
    """A kernel with what it is compiled for: a target and a folder for
    artifacts (the kernel's fields, as :class:`nrtpy.nki.Kernel` has them,
    and ``lnc``)."""

    func: Callable[..., Any]
    grid: tuple[int, ...] = ()
    platform_target: str | None = None
    mode: str = "auto"
    lnc: int | None = 1
    target: str | None = None
    artifacts_dir: str | None = None
    _enable_backend_opt: bool = False

    _frontend_cls = _Frontend

    def __post_init__(self) -> None:
        if not callable(self.func):
            raise TypeError(f"CompileKernel needs a function, got "
                            f"{type(self.func).__name__}")
        if self.lnc not in (None, 1, 2):
            raise ValueError(f"lnc must be 1 or 2, got {self.lnc!r}")

    def _compile_opts(self) -> CompileOptions:
        opts = CompileOptions()
        return opts if self._enable_backend_opt else opts.disable_backend_optimizations()

    def _kernel(self) -> Kernel:
        fn = self.func.fn if isinstance(self.func, Kernel) else self.func
        return Kernel(fn, grid=tuple(self.grid),
                      platform_target=self.target or self.platform_target)

    def _cached_compile_to_bir(self, frontend: Any = None,
                               inputs: dict[str, Any] | None = None,
                               compile_opts: CompileOptions | None = None) -> NirResult:
        """Trace the kernel for ``inputs`` (parameter name -> a NumPy array
        standing for a tensor, or a constant argument)."""
        from nrtpy.nki import _embed
        if not isinstance(inputs, dict):
            raise TypeError(f"inputs must be a dict of the kernel's arguments, "
                            f"got {type(inputs).__name__}")
        return NirResult(_embed.dump(self._kernel(), (), inputs))

    def compile(self, inputs: dict[str, Any]) -> tuple[FrameworkConfig, str]:
        """``(config, a hash of it)`` for ``inputs``."""
        import hashlib
        config = self._cached_compile_to_bir(inputs=inputs).build_config()
        return config, hashlib.sha256(config.backend_config_b64.encode()).hexdigest()
