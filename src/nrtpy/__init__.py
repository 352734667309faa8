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

import ml_dtypes as _ml_dtypes  # noqa: F401  (registers bfloat16/fp8 names)

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
