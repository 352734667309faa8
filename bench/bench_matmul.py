"""The emulator's matmul against OpenBLAS (numpy.matmul), issue 10.

Shapes (M x K x N): 1024^3, 64x4096x11008 (a batch of tokens through an
MLP projection), 1x4096x4096 (one token: matrix x vector) and, with
--big, 4096^3.  The emulator runs float32, bfloat16 and float16 operands
(the 16-bit ones accumulate in float32); NumPy runs float32 in a
subprocess whose OpenBLAS has as many threads as the emulator uses (the
CPUs this process may run on), so that neither side has more cores, and
OpenBLAS's spinning threads never share the machine with the emulator.

The two sides take turns: each round times NumPy (in a child process
that stays up between rounds), waits for OpenBLAS's threads to park (they
spin for a while after each call and would take the cores from the
emulator), then times the emulator on each dtype.  Each round gives a
ratio, NumPy float32 time / emulator time, from times taken moments apart,
so that a load that comes and goes on a shared machine moves both sides
alike; the table shows the median ratio over the rounds and their range
(above 1 = faster than OpenBLAS).  Times are medians of repeated calls
after a warm-up.  The result of each emulator product is checked against
float64 NumPy first.

Usage: python bench/bench_matmul.py [--big] [--repeat N] [--rounds N] [--report]
Exit status 1 when a ratio is below its floor of 1.0 (unless --report): every
float32 row, and the 16-bit rows of the matrix x vector shape (half the
bytes of float32 to stream, against OpenBLAS float32).
"""

from __future__ import annotations

import argparse
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
# The rows with a floor of 1.0x: float32 everywhere, 16-bit at these shapes.
FLOOR = 1.0
FLOOR_16BIT_SHAPES = [(1, 4096, 4096)]


def has_floor(shape, dtype: np.dtype) -> bool:
    return dtype == np.float32 or shape in FLOOR_16BIT_SHAPES

# The NumPy child: for each line "m k n repeat" on stdin, the median
# seconds of `repeat` products of that shape, on a line of its own.
NUMPY_CHILD = r"""
import statistics, sys, time
import numpy as np
rng = np.random.default_rng(0)
arrays = {}
for line in sys.stdin:
    m, k, n, repeat = map(int, line.split())
    if (m, k, n) not in arrays:
        arrays.clear()
        arrays[m, k, n] = (rng.standard_normal((m, k), dtype=np.float32),
                           rng.standard_normal((k, n), dtype=np.float32),
                           np.empty((m, n), np.float32))
    a, b, out = arrays[m, k, n]
    np.matmul(a, b, out=out)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        ts.append(time.perf_counter() - t0)
    print(statistics.median(ts), flush=True)
"""

# OpenBLAS's threads spin for up to 2^28 cycles after a call.
BLAS_PARK_SECONDS = 0.3


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class NumpyChild:
    """NumPy (OpenBLAS held to `threads`) in a process of its own."""

    def __init__(self, threads: int):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
                   OMP_NUM_THREADS=str(threads))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", NUMPY_CHILD], env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def time(self, shape, repeat: int) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{shape[0]} {shape[1]} {shape[2]} {repeat}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit("bench_matmul: the NumPy child process died")
        time.sleep(BLAS_PARK_SECONDS)
        return float(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def emulator_run(work: Path, shape, dtype: np.dtype):
    """The compiled product of `shape` on `dtype`, checked: (model, run)."""
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
    return model, run


def median_time(run, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--big", action="store_true", help="also 4096^3")
    ap.add_argument("--repeat", type=int, default=9,
                    help="timed calls per side and round (a quarter for 4096^3)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="turns of NumPy then the emulator per shape")
    ap.add_argument("--report", action="store_true",
                    help="exit 0 even when below 1.0x")
    args = ap.parse_args()
    shapes = SHAPES + ([BIG] if args.big else [])
    threads = cpu_count()
    print(f"matmul, {threads} thread(s) each side, {args.rounds} rounds of "
          f"NumPy float32 (OpenBLAS, child process) then the emulator; "
          f"time, median ratio NumPy / emulator [range over rounds], "
          f"GFLOP/s of the emulator")
    print(f"{'M x K x N':>18} {'numpy f32':>10} " +
          " ".join(f"{d.name:>30}" for d in DTYPES))
    below = []
    child = NumpyChild(threads)
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            rep = max(3, args.repeat // (4 if shape == BIG else 1))
            runs = [emulator_run(Path(tmp), shape, dt) for dt in DTYPES]
            t_np: list[float] = []
            t_em: list[list[float]] = [[] for _ in DTYPES]
            for _ in range(args.rounds):
                t_np.append(child.time(shape, rep))
                for i, (_, run) in enumerate(runs):
                    run()
                    t_em[i].append(median_time(run, rep))
            del runs
            flops = 2.0 * shape[0] * shape[1] * shape[2]
            cells = []
            for dt, ts in zip(DTYPES, t_em):
                ratios = sorted(a / b for a, b in zip(t_np, ts))
                ratio, t = statistics.median(ratios), statistics.median(ts)
                cells.append(f"{t * 1e3:7.2f}ms {ratio:4.2f}x "
                             f"[{ratios[0]:4.2f}-{ratios[-1]:4.2f}] "
                             f"{flops / t / 1e9:4.0f}")
                if has_floor(shape, dt) and ratio < FLOOR:
                    below.append((shape, dt, ratio))
            print(f"{'x'.join(map(str, shape)):>18} "
                  f"{statistics.median(t_np) * 1e3:8.2f}ms " +
                  " ".join(f"{c:>30}" for c in cells), flush=True)
    child.close()
    for shape, dt, ratio in below:
        print(f"below {FLOOR:.1f}x: {dt.name} {shape}: {ratio:.2f}x")
    return 1 if below and not args.report else 0


if __name__ == "__main__":
    sys.exit(main())
