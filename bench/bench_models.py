"""Emulated model execution against NumPy computing the same thing.

Each kernel is compiled with nrtpy.neff.compile, loaded, and executed with
preallocated inputs and outputs; NumPy evaluates the same expression on the
same arrays.  Both are timed in the same run, in alternating phases, after
warm-up; numpy.matmul runs in a subprocess of the run, because OpenBLAS's
spinning worker threads would otherwise take a core from what follows it.

Reported: time per execution (median), input throughput, the ratio
NumPy time / nrtpy time (1.0 = as fast as NumPy), matmul GFLOP/s, and the
per-call overhead of a tiny model in microseconds.

Usage: python bench/bench_models.py [--quick]
To compare against NumPy's fastest OpenBLAS kernels, run with
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (`env -u ... -u ...`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import nrtpy
import nrtpy.neff

from _bench import compiled, per_call


def compare(ours, theirs, number: int, phases: int):
    for _ in range(2):  # warm-up: page faults, caches, thread pools
        ours()
        theirs()
    t_ours, t_theirs = [], []
    for _ in range(phases):
        t_theirs.append(per_call(theirs, number))
        t_ours.append(per_call(ours, number))
    return statistics.median(t_ours), statistics.median(t_theirs)


_NUMPY_MATMUL = """
import statistics, sys, time
import numpy as np
m, phases = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
x = rng.standard_normal((m, m), dtype=np.float32)
y = rng.standard_normal((m, m), dtype=np.float32)
out = np.empty((m, m), np.float32)
for _ in range(2):
    np.matmul(x, y, out=out)
def once():
    t0 = time.perf_counter()
    for _ in range(5):
        np.matmul(x, y, out=out)
    return (time.perf_counter() - t0) / 5
print(statistics.median(once() for _ in range(phases)))
"""


def numpy_matmul_seconds(m: int, phases: int) -> float:
    """numpy.matmul's time in a process of its own: OpenBLAS's worker
    threads keep spinning for a long while after a call and would take a
    core from whatever runs next in the same process."""
    out = subprocess.run([sys.executable, "-c", _NUMPY_MATMUL, str(m), str(phases)],
                         check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def prepared(work: Path, name: str, fn, *arrays):
    """A zero-argument callable executing the compiled `fn` on `arrays`."""
    model, inputs, outputs, run = compiled(work, name, fn, *arrays)
    # Check the result against NumPy once, so the benchmark times real work.
    run()
    got = [outputs[k].numpy() for k in model.output_tensors_info]
    want = fn(*arrays)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=1e-3)
    return model, inputs, outputs, run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    phases = 3 if args.quick else 7
    work = Path(tempfile.mkdtemp(prefix="nrtpy-bench-"))
    rng = np.random.default_rng(0)
    n = 2048  # 2048 x 2048 float32 = 16 MiB per input
    a, b, c = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(3))

    cases = [
        ("maximum(a*b + c, 0)", lambda a, b, c: np.maximum(a * b + c, 0), (a, b, c)),
        ("exp(a - b) * a", lambda a, b: np.exp(a - b) * a, (a, b)),
        ("tanh(a) + a*a", lambda a: np.tanh(a) + a * a, (a,)),
        ("sum(a, axis=1)", lambda a: np.sum(a, axis=1), (a,)),
        ("max(a, axis=0)", lambda a: np.max(a, axis=0), (a,)),
        ("mean(a)", lambda a: np.mean(a), (a,)),
        ("softmax(a, axis=-1)", lambda a: nrtpy.neff.softmax(a, axis=-1), (a,)),
    ]
    print(f"nrtpy {nrtpy.__version__}, emulated={nrtpy.runtime_info()['emulated']}, "
          f"numpy {np.__version__}; inputs float32 {n}x{n} (16 MiB each)\n")
    print("| kernel | nrtpy | NumPy | nrtpy GB/s in | NumPy GB/s in | NumPy time / nrtpy time |")
    print("|---|---:|---:|---:|---:|---:|")
    for i, (label, fn, arrays) in enumerate(cases):
        _, _, _, run = prepared(work, f"k{i}", fn, *arrays)
        t_ours, t_np = compare(run, lambda fn=fn, arrays=arrays: fn(*arrays), 5, phases)
        nbytes = sum(x.nbytes for x in arrays)
        print(f"| `{label}` | {t_ours * 1e3:.2f} ms | {t_np * 1e3:.2f} ms | "
              f"{nbytes / t_ours / 1e9:.1f} | {nbytes / t_np / 1e9:.1f} | "
              f"{t_np / t_ours:.2f} |")

    m = 1024
    x = rng.standard_normal((m, m), dtype=np.float32)
    y = rng.standard_normal((m, m), dtype=np.float32)
    _, _, _, run = prepared(work, "matmul", lambda x, y: x @ y, x, y)
    for _ in range(2):
        run()
    t_ours = statistics.median(per_call(run, 5) for _ in range(phases))
    t_np = numpy_matmul_seconds(m, phases)
    flops = 2 * m ** 3
    print(f"\nmatmul float32 {m}x{m}x{m}: nrtpy {flops / t_ours / 1e9:.0f} GFLOP/s, "
          f"numpy.matmul {flops / t_np / 1e9:.0f} GFLOP/s, "
          f"ratio {t_np / t_ours:.2f}")

    # Per-call overhead of a tiny model with preallocated outputs.
    s = np.ones(4, np.float32)
    model, inputs, outputs, run = prepared(work, "tiny", lambda a, b: a + b, s, s)
    number = 2000 if args.quick else 20000
    for _ in range(200):
        model(inputs, outputs)
    call = statistics.median(per_call(lambda: model(inputs, outputs), number)
                             for _ in range(phases))
    low = statistics.median(per_call(run, number) for _ in range(phases))
    dev = model.benchmark(inputs, outputs, warmup_iter=100, benchmark_iter=1000)
    print(f"\ntiny model (4-float add), preallocated outputs: "
          f"NrtpyModel.__call__ {call * 1e6:.1f} us, Nrtpy.execute {low * 1e6:.1f} us, "
          f"emulated device time {dev.mean_ms * 1e3:.2f} us (p99 {dev.p99_ms * 1e3:.2f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
