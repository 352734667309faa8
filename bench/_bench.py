"""What the benchmarks share: timing a callable, and a compiled model
ready to execute with preallocated inputs and outputs.

Each benchmark checks the model's result once against NumPy, its own way,
before timing it, so that what is timed is real work.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

# Each benchmark on an emulated machine of its own (unless one is named):
# another process holding the default machine's cores would stop it.  Read
# when the runtime starts, so setting it here, on import, is early enough.
os.environ.setdefault("NRTPY_EMU_NAMESPACE",
                      f"bench-{Path(sys.argv[0]).stem}-{os.getpid()}")

import nrtpy
import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor


def per_call(fn: Callable[[], Any], number: int) -> float:
    """Seconds per call of `fn`, over `number` calls."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


class Memcpy:
    """np.copyto of 64 MiB, this machine's memcpy reference: call it to
    copy once; `bandwidth(seconds)` is the bytes it reads and writes per
    second for a time per copy, `measure(phases)` the median over phases
    of three copies each."""

    def __init__(self) -> None:
        self.src = np.ones(64 << 20, np.uint8)
        self.dst = np.empty_like(self.src)
        np.copyto(self.dst, self.src)

    def __call__(self) -> None:
        np.copyto(self.dst, self.src)

    def bandwidth(self, seconds: float) -> float:
        return 2 * self.src.nbytes / seconds

    def measure(self, phases: int) -> float:
        return self.bandwidth(statistics.median(
            per_call(self, 3) for _ in range(max(phases, 5))))


def compiled(work: Path, name: str, fn: Callable[..., Any], *arrays: np.ndarray):
    """`fn` compiled for `arrays`, loaded, with inputs holding them and
    outputs allocated: (model, inputs, outputs, run), where run() executes
    once through Nrtpy.execute (the lowest-overhead call)."""
    path = nrtpy.neff.compile(fn, *arrays, path=work / f"{name}.neff")
    model = NrtpyModel.load_from_neff(path)
    inputs = {k: NrtpyTensor.from_numpy(a, name=k)
              for k, a in zip(model.input_tensors_info, arrays)}
    outputs = {t.name: t for t in model.allocate_output_tensors()}
    rt = nrtpy.get_nrtpy_singleton()
    ins = {k: v.tensor_ref for k, v in inputs.items()}
    outs = {k: v.tensor_ref for k, v in outputs.items()}

    def run() -> None:
        rt.execute(model.model_ref, ins, outs)

    return model, inputs, outputs, run
