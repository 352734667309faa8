"""Spike's, neuronx-cc's and NKI's Python names on nrtpy: the opt-in compat
layer.

``python -m nrtpy compat install`` writes, into an environment's
site-packages, ``spike``, ``neuronxcc`` and ``nki`` packages whose modules
are three lines each: they call :func:`export`, which fills them from
:data:`SHIMS`, or :func:`alias`, which makes them an nrtpy module
(:data:`ALIASES`: ``nki`` is :mod:`nrtpy.nki`, ``neuronxcc.nki``
:mod:`nrtpy.nki.legacy`).  So the names come from the installed nrtpy, whatever its
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
import sys
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

#: Modules of the compat layer that are an nrtpy module under another name:
#: NKI's two namespaces.  A leaf module becomes the nrtpy module itself (in
#: ``sys.modules``), so that classes and state are one; a package copies its
#: nrtpy package's names and forwards the rest, keeping its own ``__path__``
#: (where the leaves' three-line files are found).
ALIASES: dict[str, str] = {
    "nki": "nrtpy.nki",
    "nki.language": "nrtpy.nki.language",
    "nki.isa": "nrtpy.nki.isa",
    "nki.typing": "nrtpy.nki.legacy.typing",
    "nki.framework": "nrtpy.nki.framework",
    "nki.framework.kernel": "nrtpy.nki.framework",
    "nki.framework.compiled": "nrtpy.nki.framework",
    # NKI's beta 2 frontend's kernel classes: the older namespace's
    "nki.compile": "nrtpy.nki.legacy.compile",
    "nki.compiler": "nrtpy.nki.legacy.compile",
    "nki.compiler.backends": "nrtpy.nki.legacy.compile",
    "nki.compiler.backends.neuron": "nrtpy.nki.legacy.compile",
    "nki.compiler.backends.neuron.FrameworkKernel": "nrtpy.nki.legacy.compile",
    "neuronxcc.nki": "nrtpy.nki.legacy",
    "neuronxcc.nki.language": "nrtpy.nki.legacy.language",
    "neuronxcc.nki.isa": "nrtpy.nki.legacy.isa",
    "neuronxcc.nki.isa.constants": "nrtpy.nki.legacy.isa.constants",
    "neuronxcc.nki.typing": "nrtpy.nki.legacy.typing",
    "neuronxcc.nki.compiler": "nrtpy.nki.legacy.compiler",
    "neuronxcc.nki.compile": "nrtpy.nki.legacy.compile",
    # where frameworks find the class they subclass (UnifiedKernel)
    "neuronxcc.nki.compiler.backends": "nrtpy.nki.legacy.compile",
    "neuronxcc.nki.compiler.backends.neuron": "nrtpy.nki.legacy.compile",
    "neuronxcc.nki.compiler.backends.neuron.FrameworkKernel": "nrtpy.nki.legacy.compile",
}

#: Every module of the layer.
MODULES: tuple[str, ...] = tuple(SHIMS) + tuple(ALIASES)

#: The top-level packages the layer installs (never over anyone else's).
PACKAGES: tuple[str, ...] = tuple(m for m in MODULES if "." not in m)


def is_package(module: str) -> bool:
    """A module of the layer that is the prefix of another is a package."""
    return any(m.startswith(module + ".") for m in MODULES)


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


def alias(module: str, namespace: dict[str, Any]) -> list[str] | None:
    """Make the compat module ``module`` (``namespace`` its globals) the
    nrtpy module :data:`ALIASES` names: a leaf is replaced by it in
    ``sys.modules`` (returns None); a package gets its names and forwards
    any other (returns its public names, for ``__all__``).

    Raises:
        KeyError: ``module`` is not an alias of the compat layer.
    """
    target = importlib.import_module(ALIASES[module])
    if not is_package(module):
        sys.modules[module] = target
        return None
    names = [n for n in vars(target) if not n.startswith("__")]
    namespace.update({n: getattr(target, n) for n in names})

    def __getattr__(name: str) -> Any:
        return getattr(target, name)
    namespace["__getattr__"] = __getattr__
    return [n for n in names if not n.startswith("_")]
