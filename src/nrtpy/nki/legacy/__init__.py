"""The older NKI namespace, ``neuronxcc.nki``, on the same tracer.

``nki.jit(mode="simulation"|"baremetal"|"benchmark"|"auto")``,
``simulate_kernel``, ``baremetal``, ``benchmark``, ``nl.mgrid``,
``nl.par_dim`` and ISA calls that return a new tile: each maps onto
:mod:`nrtpy.nki` (its ``language`` is the current one plus the older
names; its ``isa`` wraps the same implementations with the older
signatures).  ``python -m nrtpy compat install`` makes this importable as
``neuronxcc.nki``.
"""

from __future__ import annotations

from typing import Any, Callable

from nrtpy.nki import Kernel, NkiCompileError, jit as _jit
from nrtpy.nki.legacy import compile, compiler, isa, language, typing  # noqa: F401,A004
from nrtpy.nki.legacy.compile import GenericKernel

__all__ = ["jit", "trace", "simulate_kernel", "baremetal", "benchmark",
           "language", "isa", "typing", "compiler", "NkiCompileError"]


def _generic(made: Any) -> Any:
    """``nrtpy.nki.jit``'s result as this namespace's kernel class."""
    if isinstance(made, Kernel):
        return GenericKernel(made.fn, grid=made.grid,
                             platform_target=made.platform_target,
                             mode=made.mode, options=made.options)
    return lambda f: _generic(made(f))


def jit(func: Callable[..., Any] | None = None, mode: str = "auto",
        **kwargs: Any) -> Any:
    """Make ``func`` a kernel (a :class:`GenericKernel`); every mode runs it
    on the emulated device when called with NumPy arrays (``benchmark``
    keeps the latencies too)."""
    return _generic(_jit(func, mode=mode, **kwargs))


trace = jit


def simulate_kernel(kernel: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``kernel`` on NumPy arrays; returns what it returns."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    return k(*args, **kwargs)


def baremetal(kernel: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """``jit(mode="baremetal")``: compile to a NEFF and run it."""
    return _generic(_jit(kernel, mode="baremetal", **kwargs))


def benchmark(kernel: Callable[..., Any] | None = None, warmup: int = 5,
              iters: int = 10, **kwargs: Any) -> Any:
    """``jit(mode="benchmark")``: run ``warmup + iters`` times and keep the
    latencies in ``kernel.benchmark_result.nc_latency``."""
    kwargs.pop("save_neff_name", None)
    kwargs.pop("save_trace_name", None)
    return _generic(_jit(kernel, mode="benchmark", warmup=warmup, iters=iters,
                         **kwargs))


def __getattr__(name: str) -> Any:
    if name in ("profile", "tensor", "FrameworkKernel", "kernels"):
        raise NotImplementedError(f"nrtpy.nki: neuronxcc.nki.{name} is not "
                                  f"implemented")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
