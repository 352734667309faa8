"""Emulated transposes against NumPy doing the same work, and against memcpy.

Each case is compiled with nrtpy.neff.compile, loaded, and executed with
preallocated inputs and outputs; NumPy writes the same permutation into a
preallocated array (`np.copyto(out, a.transpose(axes))`), and a copy of
the same number of bytes (`np.copyto` of a contiguous array: memcpy) is
the bandwidth reference.  The three are timed in the same run, in
alternating phases after warm-up (the machine is shared: interleaving
spreads the noise over all three), and the medians are reported.

Columns: time per execution of the emulator and of NumPy, the ratio NumPy
time / emulator time (above 1 = faster than NumPy), the emulator's
bandwidth (bytes read + written per second) and that bandwidth as a
fraction of memcpy's.

Usage: python bench/bench_layout.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np

import nrtpy
import nrtpy.neff

from _bench import compiled, per_call

DTYPES = [("float32", np.float32), ("bfloat16", ml_dtypes.bfloat16),
          ("int8", np.int8), ("float64", np.float64)]
CASES = [((2048, 2048), (1, 0)), ((64, 256, 256), (2, 0, 1)),
         ((64, 256, 256), (1, 0, 2)), ((32, 64, 64, 32), (3, 1, 0, 2))]


def prepared(work: Path, name: str, a: np.ndarray, axes):
    """A zero-argument callable running the compiled transpose of `a`,
    checked once against NumPy."""
    model, inputs, outputs, run = compiled(
        work, name, lambda x: np.transpose(x, axes), a)
    run()
    got = next(iter(outputs.values())).numpy()
    want = np.transpose(a, axes)
    if got.shape != want.shape or got.tobytes() != np.ascontiguousarray(want).tobytes():
        raise SystemExit(f"{name}: wrong result")
    return model, inputs, outputs, run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    phases = 3 if args.quick else 7
    number = 5
    work = Path(tempfile.mkdtemp(prefix="nrtpy-bench-layout-"))
    rng = np.random.default_rng(0)

    print(f"nrtpy {nrtpy.__version__}, emulated={nrtpy.runtime_info()['emulated']}, "
          f"numpy {np.__version__}; median of {phases} phases x {number} calls\n")
    print("| shape | axes | dtype | emulator | NumPy | NumPy / emulator "
          "| emulator GB/s | memcpy GB/s | of memcpy |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for shape, axes in CASES:
        for dname, dt in DTYPES:
            a = rng.integers(-100, 100, size=shape).astype(dt)
            keep = prepared(work, f"t{len(shape)}{dname}", a, axes)
            run = keep[3]
            out = np.empty(np.transpose(a, axes).shape, a.dtype)
            src = np.empty_like(a)
            dst = np.empty_like(a)

            def numpy_run(out=out, a=a, axes=axes):
                np.copyto(out, np.transpose(a, axes))

            def memcpy_run(dst=dst, src=src):
                np.copyto(dst, src)

            fns = [run, numpy_run, memcpy_run]
            for _ in range(2):  # warm-up: page faults, caches
                for fn in fns:
                    fn()
            times = [[], [], []]
            for _ in range(phases):
                for i, fn in enumerate(fns):
                    times[i].append(per_call(fn, number))
            t_ours, t_np, t_mem = (statistics.median(t) for t in times)
            nbytes = 2 * a.nbytes  # read once, written once
            print(f"| {'x'.join(map(str, shape))} | {axes} | {dname} | "
                  f"{t_ours * 1e3:.2f} ms | {t_np * 1e3:.2f} ms | {t_np / t_ours:.2f} | "
                  f"{nbytes / t_ours / 1e9:.1f} | {nbytes / t_mem / 1e9:.1f} | "
                  f"{t_mem / t_ours:.0%} |", flush=True)
            del keep
    return 0


if __name__ == "__main__":
    sys.exit(main())
