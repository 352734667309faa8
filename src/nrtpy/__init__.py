"""nrtpy: the Python runtime for AWS Neuron, implemented in C.

Device tensors (:class:`NrtpyTensor`) live in a NeuronCore's HBM and move to
and from NumPy with one copy.  On a Trainium/Inferentia instance nrtpy drives
the Neuron runtime's ``libnrt.so.1``; everywhere else it drives the emulated
Neuron device that ships with it (see :func:`runtime_info`).

>>> import numpy as np
>>> from nrtpy import NrtpyTensor
>>> t = NrtpyTensor.from_numpy(np.arange(4, dtype=np.float32), name="x")
>>> t.numpy()
array([0., 1., 2., 3.], dtype=float32)
"""

import os as _os
import sys as _sys

import ml_dtypes as _ml_dtypes  # noqa: F401  (registers bfloat16/fp8 names)

from nrtpy import _nrtpy


def _tool_without_library() -> bool:
    """Whether this process is one of the command-line tools that need no
    libnrt: ``python -m nrtpy`` (while the package is imported for it,
    ``sys.argv[0]`` is ``"-m"``; its commands that use the runtime say so
    in one line) and ``nrtpy-cc``, which only compiles."""
    argv0 = _sys.argv[0] if _sys.argv else ""
    return argv0 == "-m" or _os.path.basename(argv0) == "nrtpy-cc"


if _nrtpy.LIBNRT_ERROR is not None and not _tool_without_library():
    # The extension loads without a library so that those tools work; for
    # everyone else a missing libnrt is an import error, as it always was.
    raise ImportError(_nrtpy.LIBNRT_ERROR)

if _nrtpy.LIBNRT_ERROR is None:
    from nrtpy._info import MemoryStats, memory_stats, runtime_info
    from nrtpy._nrtpy import (
        ModelTensorInfo,
        NrtError,
        NrtModel,
        Nrtpy,
        NrtpyError,
        NrtpyRuntimeError,
        NrtpyTensor,
        NrtTensor,
        SystemTraceSession,
        TensorMetadata,
    )
    from nrtpy._singleton import configure, get_nrtpy_singleton, reset
    from nrtpy.model import BenchmarkResult, NrtpyModel

__version__ = "0.1.0"


def __getattr__(name: str):
    # nrtpy.neff after a plain "import nrtpy", as numpy.linalg after
    # "import numpy"; imported on first use, since most programs never
    # compile a NEFF and its tracer is the bulk of the package.
    if name == "neff":
        import importlib

        return importlib.import_module("nrtpy.neff")
    if name in __all__ and _nrtpy.LIBNRT_ERROR is not None:
        raise ImportError(_nrtpy.LIBNRT_ERROR)
    raise AttributeError(f"module 'nrtpy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "neff"])

__all__ = [
    "BenchmarkResult",
    "MemoryStats",
    "ModelTensorInfo",
    "NrtModel",
    "NrtpyModel",
    "SystemTraceSession",
    "TensorMetadata",
    "NrtError",
    "NrtTensor",
    "Nrtpy",
    "NrtpyError",
    "NrtpyRuntimeError",
    "NrtpyTensor",
    "configure",
    "get_nrtpy_singleton",
    "memory_stats",
    "reset",
    "runtime_info",
]
