"""Spike's and neuronx-cc's Python names on nrtpy: the opt-in compat layer.

``python -m nrtpy compat install`` writes, into an environment's
site-packages, a ``spike`` package and a ``neuronxcc`` package whose modules
are three lines each: they call :func:`export`, which fills them from
:data:`SHIMS`.  So the names come from the installed nrtpy, whatever its
version, and the installed files never need rewriting.  See
``python -m nrtpy compat --help`` and :mod:`nrtpy.compat._install`.

Spike's classes are nrtpy's own (aliases, not subclasses): ``SpikeTensor``
*is* :class:`nrtpy.NrtpyTensor` and ``SpikeModel`` *is*
:class:`nrtpy.NrtpyModel`, so a tensor or model made through either name
passes every ``isinstance`` check written for the other, and code that
subclasses ``SpikeTensor``/``SpikeModel`` (as nkipy does) subclasses
nrtpy's.  ``SpikeProfiler`` is not provided: nrtpy has no profiler class.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Every module of the compat layer -> {its name: "nrtpy module:name"}.  A
#: module that is the prefix of another is written as a package.  This table
#: is the only place a mapping is written.
SHIMS: dict[str, dict[str, str]] = {
    "spike": {
        "SpikeModel": "nrtpy.model:NrtpyModel",
        "SpikeTensor": "nrtpy._nrtpy:NrtpyTensor",
        "configure": "nrtpy._singleton:configure",
        "reset": "nrtpy._singleton:reset",
        "get_spike_singleton": "nrtpy._singleton:get_nrtpy_singleton",
        "NrtError": "nrtpy._nrtpy:NrtError",
        "SpikeError": "nrtpy._nrtpy:NrtpyError",
        "SystemTraceSession": "nrtpy._nrtpy:SystemTraceSession",
        "BenchmarkResult": "nrtpy.model:BenchmarkResult",
        "ModelTensorInfo": "nrtpy._nrtpy:ModelTensorInfo",
        "NrtModel": "nrtpy._nrtpy:NrtModel",
        "NrtTensor": "nrtpy._nrtpy:NrtTensor",
        "TensorMetadata": "nrtpy._nrtpy:TensorMetadata",
    },
    "spike._spike": {
        "Spike": "nrtpy._nrtpy:Nrtpy",
        "SpikeRuntimeError": "nrtpy._nrtpy:NrtpyRuntimeError",
        "SpikeError": "nrtpy._nrtpy:NrtpyError",
        "NrtError": "nrtpy._nrtpy:NrtError",
        "SystemTraceSession": "nrtpy._nrtpy:SystemTraceSession",
        "ModelTensorInfo": "nrtpy._nrtpy:ModelTensorInfo",
        "NrtModel": "nrtpy._nrtpy:NrtModel",
        "NrtTensor": "nrtpy._nrtpy:NrtTensor",
        "TensorMetadata": "nrtpy._nrtpy:TensorMetadata",
    },
    "spike.spike_model": {
        "SpikeModel": "nrtpy.model:NrtpyModel",
        "BenchmarkResult": "nrtpy.model:BenchmarkResult",
    },
    "spike.spike_tensor": {
        "SpikeTensor": "nrtpy._nrtpy:NrtpyTensor",
    },
    "spike.spike_singleton": {
        "configure": "nrtpy._singleton:configure",
        "reset": "nrtpy._singleton:reset",
        "get_spike_singleton": "nrtpy._singleton:get_nrtpy_singleton",
    },
    "neuronxcc": {},
    "neuronxcc.driver": {},
    # main() reads sys.argv[1:] (what nkipy sets) or takes the arguments.
    "neuronxcc.driver.CommandDriver": {
        "main": "nrtpy.cc:main",
    },
}

#: The top-level packages the layer installs (never over anyone else's).
PACKAGES: tuple[str, ...] = tuple(m for m in SHIMS if "." not in m)


def export(module: str, namespace: dict[str, Any]) -> list[str]:
    """Fill ``namespace`` (a shim module's globals) with nrtpy's objects for
    ``module``'s names in :data:`SHIMS`; return the names (its ``__all__``).

    Raises:
        KeyError: ``module`` is not a module of the compat layer.
    """
    names = SHIMS[module]
    for name, target in names.items():
        source, attr = target.split(":")
        namespace[name] = getattr(importlib.import_module(source), attr)
    return list(names)
