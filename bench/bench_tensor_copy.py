"""Host <-> device copy benchmark: nrtpy against NumPy doing the same work.

Each nrtpy operation is timed beside the NumPy operation that does the same
work, in the same run, interleaved so both see the same machine state:

  from_numpy(a)            new device memory + one copy   vs  a.copy()
  t.numpy()                new host array + one copy      vs  a.copy()
  t.write_from_numpy(a)    copy into an existing tensor   vs  np.copyto(b, a)
  t.numpy(out=b)           copy into an existing array    vs  np.copyto(b, a)

Reported per size: time per call (median of repeats), throughput, and
ratio = NumPy time / nrtpy time (1.0 = as fast as NumPy, > 1 faster).
Then the time to allocate and free a 1 GiB tensor.

Floor: at 256 MiB and 1 GiB, where a copy runs at memory bandwidth on both
sides, every operation at >= FLOOR of NumPy's time; a row below it is
measured again once (a neighbour's burst on a shared machine), and a row
still below makes the exit status 1, unless --report.

Usage: python bench/bench_tensor_copy.py [--quick] [--json] [--report]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time

import os

import numpy as np

# A machine of its own (unless one is named), as bench_ops.py: another
# process holding the default emulated cores would stop the run.
os.environ.setdefault("NRTPY_EMU_NAMESPACE", f"bench-copy-{os.getpid()}")

import nrtpy  # noqa: E402
from nrtpy import NrtpyTensor  # noqa: E402

SIZES = [40, 4 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30]
# The sizes with a floor, and the floor (NumPy time / nrtpy time).
FLOOR_SIZES, FLOOR = (256 << 20, 1 << 30), 0.9


def label(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def time_per_call(fn, number: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(number):
        fn()
    return (time.perf_counter_ns() - t0) / number / 1e9


def calibrate(fn, budget_s: float) -> int:
    """Calls per repeat so that one repeat takes about budget_s."""
    fn()
    number = 1
    while True:
        t = time_per_call(fn, number) * number
        if t >= budget_s / 4 or number >= 1 << 22:
            return max(1, int(number * budget_s / max(t, 1e-9)))
        number *= 4


def compare(ours, theirs, repeats: int, budget_s: float):
    """Median seconds per call of each, measured alternately."""
    n_ours = calibrate(ours, budget_s)
    n_theirs = calibrate(theirs, budget_s)
    t_ours, t_theirs = [], []
    for _ in range(repeats):
        t_ours.append(time_per_call(ours, n_ours))
        t_theirs.append(time_per_call(theirs, n_theirs))
    return statistics.median(t_ours), statistics.median(t_theirs)


def bench_copies(repeats: int, budget_s: float):
    rows = []
    for size in SIZES:
        a = np.random.default_rng(0).integers(0, 255, size, dtype=np.uint8)
        b = np.empty_like(a)
        t = NrtpyTensor.from_numpy(a)
        cases = [
            ("from_numpy", lambda: NrtpyTensor.from_numpy(a), "a.copy()",
             a.copy),
            ("numpy()", t.numpy, "a.copy()", a.copy),
            ("write_from_numpy", lambda: t.write_from_numpy(a),
             "np.copyto(b, a)", lambda: np.copyto(b, a)),
            ("numpy(out=b)", lambda: t.numpy(out=b), "np.copyto(b, a)",
             lambda: np.copyto(b, a)),
        ]
        for name, ours, ref_name, theirs in cases:
            # Warm up: first touches of fresh memory are slow on both sides.
            for _ in range(3):
                ours()
                theirs()
            gc.collect()
            t_ours, t_ref = compare(ours, theirs, repeats, budget_s)
            if size in FLOOR_SIZES and t_ref / t_ours < FLOOR:
                t_ours, t_ref = compare(ours, theirs, repeats, budget_s)
            rows.append({
                "size": size, "op": name, "reference": ref_name,
                "nrtpy_s": t_ours, "numpy_s": t_ref,
                "nrtpy_gbps": size / t_ours / 1e9,
                "numpy_gbps": size / t_ref / 1e9,
                "ratio": t_ref / t_ours,
            })
        del t
        gc.collect()
    return rows


def bench_alloc_free(repeats: int):
    rt = nrtpy.get_nrtpy_singleton()
    size = 1 << 30
    alloc, free = [], []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        ref = rt.allocate_tensor(size)
        t1 = time.perf_counter_ns()
        rt.free_tensor(ref)
        t2 = time.perf_counter_ns()
        alloc.append((t1 - t0) / 1e9)
        free.append((t2 - t1) / 1e9)
    return statistics.median(alloc), statistics.median(free)


def fmt_time(s: float) -> str:
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    return f"{s * 1e3:.2f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--json", action="store_true", help="print JSON rows")
    ap.add_argument("--report", action="store_true",
                    help="exit 0 even when a row is below its floor")
    args = ap.parse_args()
    repeats, budget = (3, 0.05) if args.quick else (7, 0.2)

    info = nrtpy.runtime_info()
    rows = bench_copies(repeats, budget)
    alloc_s, free_s = bench_alloc_free(repeats * 3)
    if args.json:
        print(json.dumps({"runtime": info, "copies": rows,
                          "alloc_1gib_s": alloc_s, "free_1gib_s": free_s}))
        return 0

    print(f"nrtpy {nrtpy.__version__} on {info['library']} "
          f"(emulated={info['emulated']}, instance={info['instance']}); "
          f"numpy {np.__version__}")
    print()
    print("| size | nrtpy op | NumPy reference | nrtpy | NumPy | "
          "nrtpy GB/s | NumPy GB/s | NumPy time / nrtpy time |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {label(r['size'])} | `{r['op']}` | `{r['reference']}` | "
              f"{fmt_time(r['nrtpy_s'])} | {fmt_time(r['numpy_s'])} | "
              f"{r['nrtpy_gbps']:.2f} | {r['numpy_gbps']:.2f} | "
              f"{r['ratio']:.2f} |")
    print()
    print(f"allocate 1 GiB: {fmt_time(alloc_s)}   free 1 GiB: {fmt_time(free_s)}"
          f"   (median of {repeats * 3})")
    below = [r for r in rows if r["size"] in FLOOR_SIZES and r["ratio"] < FLOOR]
    for r in below:
        print(f"below the floor of {FLOOR}x NumPy: {label(r['size'])} "
              f"{r['op']} at {r['ratio']:.2f}x", file=sys.stderr)
    return 1 if below and not args.report else 0


if __name__ == "__main__":
    sys.exit(main())
