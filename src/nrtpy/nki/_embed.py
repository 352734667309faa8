"""A kernel dumped for a framework's HLO module: what both namespaces'
framework classes (:mod:`nrtpy.nki.framework`,
:mod:`nrtpy.nki.legacy.compile`) hand to nkipy and its like.

A framework traces an ``@nki.jit`` kernel while it builds its own module
and emits ``custom-call AwsNeuronCustomNativeKernel`` with the NKI
compiler's dump as ``backend_config``.  Here the dump is the kernel's NEFF
(traced for the arguments' shapes and dtypes, its constant arguments
fixed), base64 in a small JSON record; ``nrtpy-cc`` inlines that NEFF's
program where the custom call is (:mod:`nrtpy.hlo._lower_nki`).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

from nrtpy import _dtypes
from nrtpy.hlo._lower_nki import PREFIX

# (nrtpy.nki imports this module lazily: no import cycle)


class Dump:
    """One kernel traced for one signature, as a framework needs it.

    ``backend_config`` is the custom call's; ``outputs`` the (dtype, shape)
    of each result; ``aliases`` maps an argument tensor's index (among the
    array arguments, in parameter order) to the result that is that
    argument after the kernel wrote it; ``is_tuple`` says whether the kernel
    returned a tuple (or has several results).
    """

    def __init__(self, backend_config: str, outputs: list[tuple[np.dtype, tuple[int, ...]]],
                 aliases: dict[int, int], is_tuple: bool, input_names: list[str]) -> None:
        self.backend_config = backend_config
        self.outputs = outputs
        self.aliases = aliases
        self.is_tuple = is_tuple
        self.input_names = input_names


def dump(kernel: Any, args: tuple, kwargs: dict) -> Dump:
    """Trace ``kernel`` (an :class:`nrtpy.nki.Kernel`) for these arguments
    (NumPy arrays stand for tensors, only their shapes and dtypes count)
    and dump it."""
    from nrtpy import neff

    compiled = kernel.specialize(*args, **kwargs)
    info = neff.inspect(compiled.path)
    by_name = {o["name"]: o for o in info["outputs"]}
    names = list(compiled.output_names)
    returned = list(compiled.returned)
    # An argument the kernel wrote without returning it is a result too
    # (aliased to the argument), after those it returns.
    for pname in compiled.written_inputs:
        if pname not in returned:
            names.append(f"{pname}.out")
            returned.append(pname)
    outputs = [(_dtypes.to_numpy(by_name[n]["dtype"]), tuple(by_name[n]["shape"]))
               for n in names]
    aliases = {compiled.input_names.index(p): i
               for i, p in enumerate(returned) if p is not None}
    record = {"kernel": getattr(kernel.fn, "__name__", "kernel"),
              "outputs": names,
              "neff": base64.b64encode(compiled.path.read_bytes()).decode("ascii")}
    return Dump(PREFIX + json.dumps(record, separators=(",", ":")), outputs,
                aliases, not compiled.single or len(names) > 1,
                list(compiled.input_names))
