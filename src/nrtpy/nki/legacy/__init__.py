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
from nrtpy.nki.legacy import compiler, isa, language, typing  # noqa: F401

__all__ = ["jit", "trace", "simulate_kernel", "baremetal", "benchmark",
           "language", "isa", "typing", "compiler", "NkiCompileError"]


def jit(func: Callable[..., Any] | None = None, mode: str = "auto",
        **kwargs: Any) -> Any:
    """Make ``func`` a kernel; every mode but ``benchmark`` runs it on the
    emulated device when called with NumPy arrays."""
    return _jit(func, mode=mode, **kwargs)


trace = jit


def simulate_kernel(kernel: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``kernel`` on NumPy arrays; returns what it returns."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    return k(*args, **kwargs)


def baremetal(kernel: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """``jit(mode="baremetal")``: compile to a NEFF and run it."""
    return _jit(kernel, mode="baremetal", **kwargs)


def benchmark(kernel: Callable[..., Any] | None = None, warmup: int = 5,
              iters: int = 10, **kwargs: Any) -> Any:
    """``jit(mode="benchmark")``: run ``warmup + iters`` times and keep the
    latencies in ``kernel.benchmark_result.nc_latency``."""
    kwargs.pop("save_neff_name", None)
    kwargs.pop("save_trace_name", None)
    return _jit(kernel, mode="benchmark", warmup=warmup, iters=iters, **kwargs)


def __getattr__(name: str) -> Any:
    if name in ("profile", "tensor", "FrameworkKernel", "kernels"):
        raise NotImplementedError(f"nrtpy.nki: neuronxcc.nki.{name} is not "
                                  f"implemented")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
