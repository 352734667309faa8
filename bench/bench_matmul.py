"""The emulator's matmul against OpenBLAS (numpy.matmul), issue 10.

Shapes (M x K x N): 1024^3, 64x4096x11008 (a batch of tokens through an
MLP projection), 1x4096x4096 (one token: matrix x vector) and, with
--big, 4096^3.  The emulator runs float32, bfloat16 and float16 operands
(the 16-bit ones accumulate in float32); NumPy runs float32 in a
subprocess whose OpenBLAS has as many threads as the emulator uses (the
CPUs this process may run on), so that neither side has more cores, and
OpenBLAS's spinning threads never share the machine with the emulator.

Figures are medians of repeated timed calls after a warm-up; the ratio is
NumPy float32 time / emulator time (above 1 = faster than OpenBLAS).  The
result of each emulator product is checked against float64 NumPy first.

Usage: python bench/bench_matmul.py [--big] [--repeat N] [--report]
Exit status 1 when a float32 ratio is below 1.0 (unless --report).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ml_dtypes
import numpy as np

from _bench import compiled

SHAPES = [(1024, 1024, 1024), (64, 4096, 11008), (1, 4096, 4096)]
BIG = (4096, 4096, 4096)
DTYPES = [np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16),
          np.dtype(np.float16)]

# Run by the NumPy subprocess: the median seconds of each shape.
NUMPY_CHILD = r"""
import json, statistics, sys, time
import numpy as np
shapes, repeat = json.loads(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
res = []
for m, k, n in shapes:
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    out = np.empty((m, n), np.float32)
    np.matmul(a, b, out=out)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        ts.append(time.perf_counter() - t0)
    res.append(statistics.median(ts))
print(json.dumps(res))
"""


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def numpy_times(shapes, repeat: int, threads: int) -> list[float]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads))
    out = subprocess.run(
        [sys.executable, "-c", NUMPY_CHILD, json.dumps(shapes), str(repeat)],
        env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def emulator_time(work: Path, shape, dtype: np.dtype, repeat: int) -> float:
    m, k, n = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(dtype)
    name = f"mm_{m}_{k}_{n}_{dtype.name}"
    model, _, outputs, run = compiled(work, name, np.matmul, a, b)
    run()
    got = next(iter(outputs.values())).numpy().astype(np.float64)
    want = a.astype(np.float64) @ b.astype(np.float64)
    # float32 accumulation over k terms, then rounding to the out dtype.
    tol = 1e-5 * k ** 0.5 * np.abs(a.astype(np.float64)) @ np.abs(
        b.astype(np.float64))
    if dtype != np.float32:
        tol += np.abs(want) * float(ml_dtypes.finfo(dtype).eps)
    if not np.all(np.abs(got - want) <= tol + 1e-30):
        sys.exit(f"{name}: wrong result")
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        ts.append(time.perf_counter() - t0)
    del model
    return statistics.median(ts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--big", action="store_true", help="also 4096^3")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--report", action="store_true",
                    help="exit 0 even when below 1.0x")
    args = ap.parse_args()
    shapes = SHAPES + ([BIG] if args.big else [])
    threads = cpu_count()
    reps = [max(3, args.repeat // (4 if s == BIG else 1)) for s in shapes]
    np_t = [numpy_times([s], r, threads)[0] for s, r in zip(shapes, reps)]
    print(f"matmul, {threads} thread(s) each side; NumPy float32 "
          f"(OpenBLAS, subprocess) / emulator; GFLOP/s of the emulator")
    print(f"{'M x K x N':>18} {'numpy f32':>10} " +
          " ".join(f"{d.name:>20}" for d in DTYPES))
    below = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape, t_np, r in zip(shapes, np_t, reps):
            flops = 2.0 * shape[0] * shape[1] * shape[2]
            cells = []
            for dt in DTYPES:
                t = emulator_time(Path(tmp), shape, dt, r)
                ratio = t_np / t
                cells.append(f"{t * 1e3:7.2f}ms {ratio:4.2f}x "
                             f"{flops / t / 1e9:5.0f}")
                if dt == np.float32 and ratio < 1.0:
                    below.append((shape, ratio))
            print(f"{'x'.join(map(str, shape)):>18} {t_np * 1e3:8.2f}ms " +
                  " ".join(f"{c:>20}" for c in cells))
    for shape, ratio in below:
        print(f"below 1.0x: float32 {shape}: {ratio:.2f}x")
    return 1 if below and not args.report else 0


if __name__ == "__main__":
    sys.exit(main())
