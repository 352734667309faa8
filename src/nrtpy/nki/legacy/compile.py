"""The older namespace's kernel classes, as frameworks use them:
``neuronxcc.nki.compile.GenericKernel`` (what ``nki.jit`` returns) and
``neuronxcc.nki.compiler.backends.neuron.FrameworkKernel.UnifiedKernel``
(a framework's subclass traces a kernel with ``trace(...)`` and dumps it
with ``dump_config(*args)``).

A dump (:class:`TraceConfig`) carries the kernel's NEFF as the custom
call's ``backend_config`` (:mod:`nrtpy.nki._embed`), which ``nrtpy-cc``
inlines; constant arguments are fixed in it, so ``constant_values`` is
empty.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from typing import Any, Callable, Iterator

import numpy as np

from nrtpy.nki import Kernel

__all__ = ["GenericKernel", "UnifiedKernel", "TraceConfig", "Options"]


@dataclasses.dataclass(frozen=True)
class Options:
    """Trace options a framework may set; they change nothing here."""

    enable_const_rewrite: bool = False
    experimental_flags: str = ""
    enable_cache: bool = True


@dataclasses.dataclass
class TraceConfig:
    """A kernel traced for one signature: what goes into the custom call."""

    dumped_config: str
    return_types: list[tuple[np.dtype, tuple[int, ...]]]
    operand_output_aliases: dict[int, int]
    result_is_sequence: bool
    input_names: list[str]
    constant_values: list[np.ndarray] = dataclasses.field(default_factory=list)
    has_collectives: bool = False


class GenericKernel(Kernel):
    """A jitted kernel of the older namespace: a :class:`nrtpy.nki.Kernel`
    that a framework can also dump."""

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        if isinstance(fn, Kernel):
            kwargs.setdefault("grid", fn.grid)
            kwargs.setdefault("platform_target", fn.platform_target)
            fn = fn.fn
        super().__init__(fn, **kwargs)
        self.opts = Options()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return super().__call__(*args, **kwargs)

    @contextlib.contextmanager
    def bind_arguments(self, *args: Any, **kwargs: Any) -> Iterator[inspect.BoundArguments]:
        """The arguments bound to the kernel's parameters (defaults applied)."""
        yield self._bind(args, kwargs)

    def dump_config_with_boundargs(self, bound: inspect.BoundArguments) -> TraceConfig:
        from nrtpy.nki import _embed
        d = _embed.dump(self, bound.args, bound.kwargs)
        return TraceConfig(d.backend_config, list(d.outputs), dict(d.aliases),
                           d.is_tuple, list(d.input_names))

    def dump_config(self, *args: Any, **kwargs: Any) -> TraceConfig:
        """Trace for these arguments and dump (arrays stand for tensors)."""
        with self.bind_arguments(*args, **kwargs) as bound:
            return self.dump_config_with_boundargs(bound)


class UnifiedKernel(GenericKernel):
    """The class a framework subclasses (overriding how it recognizes its
    tensors, which NumPy arrays stand for here)."""

    @classmethod
    def trace(cls, kernel: Callable[..., Any], grid: Any = (),
              kernel_return: bool = True, experimental_flags: str = "",
              enable_cache: bool = True, platform_target: str | None = None,
              **kwargs: Any) -> UnifiedKernel:
        """``kernel`` (a function or a jitted kernel) for a framework to
        dump, launched on ``grid``."""
        k = cls(kernel, platform_target=platform_target)
        if grid:
            k = k[grid]
        k.opts = dataclasses.replace(k.opts, experimental_flags=experimental_flags,
                                     enable_cache=enable_cache)
        return k

    def is_framework_tensor(self, t: Any) -> bool:
        return isinstance(t, np.ndarray)

    def map_framework_tensor(self, t: Any) -> tuple[tuple[int, ...], np.dtype]:
        return t.shape, t.dtype

    def translate_to_neuron_dtype(self, dtype: Any) -> Any:
        return dtype
