"""Emulated reductions against NumPy computing the same thing.

sum, max and argmax over each axis of a 2048x2048 array, float32 and
bfloat16.  Each expression is compiled with nrtpy.neff.compile, loaded and
executed with preallocated inputs and outputs; NumPy evaluates the same
expression on the same array in the same run.  After warm-up, the two are
timed in alternating phases (the machine may be shared) and the medians
compared: the last column is NumPy time / nrtpy time (above 1 = faster).

Usage: python bench/bench_reduce.py [--phases N]
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

CASES = [
    ("sum(a, axis=0)", lambda a: np.sum(a, axis=0)),
    ("sum(a, axis=1)", lambda a: np.sum(a, axis=1)),
    ("max(a, axis=0)", lambda a: np.max(a, axis=0)),
    ("argmax(a, axis=1)", lambda a: np.argmax(a, axis=1)),
    ("argmax(a, axis=0)", lambda a: np.argmax(a, axis=0)),
]


def prepared(work: Path, name: str, fn, a):
    """A zero-argument callable executing the compiled `fn` on `a`, after
    checking its result once against NumPy (in float32 for bfloat16, whose
    emulated sums accumulate in float32)."""
    model, inputs, outputs, run = compiled(work, name, fn, a)
    run()
    (got,) = [outputs[k].numpy() for k in model.output_tensors_info]
    want = fn(a.astype(np.float32))
    if want.dtype.kind == "i":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=0.5)
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phases", type=int, default=7)
    ap.add_argument("--number", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nrtpy-bench-reduce-"))
    rng = np.random.default_rng(0)
    n = 2048
    base = rng.standard_normal((n, n), dtype=np.float32)
    print(f"nrtpy {nrtpy.__version__}, numpy {np.__version__}; {n}x{n} inputs, "
          f"median of {args.phases} alternating phases of {args.number} calls\n")
    print("| op | dtype | nrtpy | NumPy | NumPy time / nrtpy time |")
    print("|---|---|---:|---:|---:|")
    for dtype in (np.float32, ml_dtypes.bfloat16):
        a = base.astype(dtype)
        for i, (label, fn) in enumerate(CASES):
            run = prepared(work, f"{np.dtype(dtype).name}{i}", fn, a)
            theirs = lambda fn=fn, a=a: fn(a)  # noqa: E731
            for _ in range(2):  # warm-up: page faults, caches
                run()
                theirs()
            t_ours, t_np = [], []
            for _ in range(args.phases):
                t_np.append(per_call(theirs, args.number))
                t_ours.append(per_call(run, args.number))
            ours, np_t = statistics.median(t_ours), statistics.median(t_np)
            print(f"| `{label}` | {np.dtype(dtype).name} | {ours * 1e3:.2f} ms | "
                  f"{np_t * 1e3:.2f} ms | {np_t / ours:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
