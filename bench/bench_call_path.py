"""The model call path: NrtpyModel.__call__ against Nrtpy.execute against
the emulated device time, on a 4-float model.

Targets (issue "one table per fact", section 6): __call__ within 1.5x of
Nrtpy.execute, and Nrtpy.execute within 3x of the emulated device time.
All three are measured in the same run, after warm-up, as the median of
several phases.  Exits non-zero when a target is missed, unless --report.

Usage: python bench/bench_call_path.py [--quick] [--report]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

import nrtpy
import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor

from _bench import per_call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls")
    parser.add_argument("--report", action="store_true",
                        help="print the figures; never fail")
    args = parser.parse_args()
    number, phases = (2000, 5) if args.quick else (20000, 9)

    s = np.ones(4, np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = nrtpy.neff.compile(lambda a, b: a + b, s, s,
                                  path=Path(tmp) / "tiny.neff")
        model = NrtpyModel.load_from_neff(path)
    inputs = {"a": NrtpyTensor.from_numpy(s), "b": NrtpyTensor.from_numpy(s)}
    outputs = {"output_0": NrtpyTensor.from_numpy(s)}
    rt = nrtpy.get_nrtpy_singleton()
    refs_in = {k: v.tensor_ref for k, v in inputs.items()}
    refs_out = {k: v.tensor_ref for k, v in outputs.items()}

    def call():
        model(inputs, outputs)

    def call_auto():
        model(inputs)

    def execute():
        rt.execute(model.model_ref, refs_in, refs_out)

    for fn in (call, call_auto, execute):
        for _ in range(500):
            fn()
    t_call, t_auto, t_exec = [], [], []
    for _ in range(phases):  # interleaved, so that drift hits all three
        t_exec.append(per_call(execute, number))
        t_call.append(per_call(call, number))
        t_auto.append(per_call(call_auto, number // 4))
    call_s, auto_s, exec_s = (statistics.median(t) for t in (t_call, t_auto, t_exec))
    dev = model.benchmark(inputs, outputs, warmup_iter=200, benchmark_iter=2000)
    dev_s = dev.p50_ms / 1e3
    r_call, r_exec = call_s / exec_s, exec_s / dev_s
    print(f"4-float add model: NrtpyModel.__call__ {call_s * 1e6:.2f} us "
          f"(auto outputs {auto_s * 1e6:.2f} us), Nrtpy.execute {exec_s * 1e6:.2f} us, "
          f"emulated device time {dev_s * 1e6:.2f} us (median)")
    print(f"__call__ / execute = {r_call:.2f} (target <= 1.5); "
          f"execute / device = {r_exec:.2f} (target <= 3)")
    if args.report:
        return 0
    return 0 if r_call <= 1.5 and r_exec <= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
