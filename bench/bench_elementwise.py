"""pow, sin and cos of the emulator against NumPy, one op per model.

Each expression is compiled with nrtpy.neff.compile, loaded, and executed
with preallocated inputs and outputs on a 2048x2048 input, float32 and
bfloat16; NumPy evaluates the same expression on the same array in the
same run.  Both are timed in alternating phases after warm-up; the
figures are medians.  Printed: time per execution and the ratio
NumPy time / nrtpy time (above 1 = faster than NumPy).

Usage: python bench/bench_elementwise.py [--quick]
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
    ("a ** 2", lambda a: a ** 2),
    ("a ** 3", lambda a: a ** 3),
    ("a ** 0.5", lambda a: a ** 0.5),
    ("a ** -1", lambda a: a ** -1),
    ("a ** 1.5", lambda a: a ** 1.5),
    ("abs(a) ** 2.2", lambda a: np.abs(a) ** 2.2),
    ("np.sin(a)", np.sin),
    ("np.cos(a)", np.cos),
]


def prepared(work: Path, name: str, fn, a: np.ndarray):
    """A zero-argument callable executing the compiled `fn` on `a`."""
    model, inputs, outputs, run = compiled(work, name, fn, a)
    run()  # check once, so that the benchmark times real work
    got = next(iter(outputs.values())).numpy().astype(np.float32)
    want = np.asarray(fn(a)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)
    return model, inputs, outputs, run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    phases = 3 if args.quick else 7
    number = 3
    work = Path(tempfile.mkdtemp(prefix="nrtpy-bench-"))
    rng = np.random.default_rng(0)
    n = 2048
    base = rng.uniform(0.1, 10.0, (n, n)).astype(np.float32)
    base[::2] *= -1  # half negative: pow of a negative base is NaN or real
    print(f"nrtpy {nrtpy.__version__}, emulated={nrtpy.runtime_info()['emulated']}, "
          f"numpy {np.__version__}; input {n}x{n}, median of {phases} phases\n")
    print("| op | dtype | nrtpy | NumPy | NumPy time / nrtpy time |")
    print("|---|---|---:|---:|---:|")
    with np.errstate(all="ignore"):
        for dt in (np.float32, ml_dtypes.bfloat16):
            a = base.astype(dt)
            for i, (label, fn) in enumerate(CASES):
                *_, run = prepared(work, f"k{i}_{np.dtype(dt).name}", fn, a)

                def theirs(fn=fn, a=a):
                    fn(a)

                for _ in range(2):  # warm-up
                    run()
                    theirs()
                t_ours, t_np = [], []
                for _ in range(phases):  # interleaved
                    t_np.append(per_call(theirs, number))
                    t_ours.append(per_call(run, number))
                o, t = statistics.median(t_ours), statistics.median(t_np)
                print(f"| `{label}` | {np.dtype(dt).name} | {o * 1e3:.2f} ms | "
                      f"{t * 1e3:.2f} ms | {t / o:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
