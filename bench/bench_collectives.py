"""All-reduce across ranks of one process against this machine's memcpy.

Ranks are threads of this process, one core each of an emulated
trn1.32xlarge, each executing a NEFF that is one float32 all_reduce (sum)
of SIZE bytes.  The result is checked once against NumPy.  The time of one
all-reduce is the wall time of ITER executions on every rank at once,
divided by ITER.

Above 256 KiB each rank reduces 1/N of the array (reading N parts, writing
one) and then copies the N-1 parts the others reduced; the bytes moved per
rank are size * (N + 1) / N read-and-written for the reduction plus
2 * size * (N - 1) / N for the copies, all ranks in parallel.  That is
compared with memcpy's bandwidth (np.copyto of SIZE bytes: 2 * SIZE bytes
moved) on one core, and with N cores copying at once (N threads).

With --processes the ranks are processes instead (python -m nrtpy run,
meeting through NEURON_RT_ROOT_COMM_ID on loopback, data over TCP): the
median time of one all-reduce at 4 KiB, 1 MiB and SIZE.

Usage: python bench/bench_collectives.py [--ranks N] [--mib SIZE] [--iter K]
                                         [--processes]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("NRTPY_EMU_INSTANCE", "trn1.32xlarge")
os.environ.setdefault("NRTPY_EMU_NAMESPACE", f"bench-coll-{os.getpid()}")

import nrtpy  # noqa: E402
import nrtpy.neff  # noqa: E402
from nrtpy import NrtpyModel, NrtpyTensor  # noqa: E402


def in_threads(n: int, fn) -> float:
    """Seconds for n threads running fn(rank) once each, started together."""
    start = threading.Barrier(n + 1)
    errors: list[BaseException] = []

    def work(r: int) -> None:
        start.wait()
        try:
            fn(r)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - t0


def memcpy_gbps(size: int, n: int, iters: int) -> float:
    """GB/s moved (read + written) by n threads each copying `size` bytes."""
    srcs = [np.ones(size // 4, np.float32) for _ in range(n)]
    dsts = [np.empty_like(s) for s in srcs]

    def copy(r: int) -> None:
        for _ in range(iters):
            np.copyto(dsts[r], srcs[r])

    copy_all = in_threads(n, copy)  # warm-up: page faults
    copy_all = min(in_threads(n, copy) for _ in range(3))
    return 2 * size * n * iters / copy_all / 1e9


def processes(n: int, mib: int, iters: int) -> int:
    """All-reduce across n processes through the launcher: its p50."""
    print(f"all_reduce float32 across {n} processes (TCP on loopback), "
          f"{os.cpu_count()} CPUs")
    for size in (4 << 10, 1 << 20, mib << 20):
        x = np.ones(size // 4, np.float32)
        with tempfile.TemporaryDirectory() as work:
            path = nrtpy.neff.compile(lambda x: nrtpy.neff.all_reduce(x), x,
                                      path=Path(work) / "ar.neff",
                                      world_size=n)
            count = iters if size > (1 << 20) else 50 * iters
            proc = subprocess.run(
                [sys.executable, "-m", "nrtpy", "run", str(path), "--ranks",
                 str(n), "--output-dir", str(Path(work) / "out"),
                 "--benchmark", str(count)],
                capture_output=True, text=True,
                env=dict(os.environ, NEURON_RT_EXEC_TIMEOUT="120"))
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr, file=sys.stderr)
            return 1
        p50 = [float(v) for v in re.findall(r"p50 ([0-9.]+) ms", proc.stdout)]
        t = max(p50) / 1e3
        print(f"  {size / 1024:10.0f} KiB  {t * 1e3:9.3f} ms  "
              f"{size / t / 1e9:7.2f} GB/s of buffer")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--iter", type=int, default=5)
    ap.add_argument("--processes", action="store_true")
    args = ap.parse_args()
    n, size, iters = args.ranks, args.mib << 20, args.iter
    if args.processes:
        return processes(n, args.mib, iters)

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(size // 4).astype(np.float32) for _ in range(n)]
    with tempfile.TemporaryDirectory() as work:
        path = nrtpy.neff.compile(lambda x: nrtpy.neff.all_reduce(x), xs[0],
                                  path=Path(work) / "all_reduce.neff",
                                  world_size=n)
        models = [NrtpyModel.load_from_neff(path, core_id=r, cc_enabled=True,
                                            rank_id=r, world_size=n)
                  for r in range(n)]
    rt = nrtpy.get_nrtpy_singleton()
    ins = [{"x": NrtpyTensor.from_numpy(xs[r], name="x", core_id=r).tensor_ref}
           for r in range(n)]
    outs = [{t.name: t for t in m.allocate_output_tensors()} for m in models]
    refs = [{k: v.tensor_ref for k, v in o.items()} for o in outs]

    def run(r: int, count: int = 1) -> None:
        for _ in range(count):
            rt.execute(models[r].model_ref, ins[r], refs[r])

    in_threads(n, run)
    want = np.zeros_like(xs[0])
    for x in xs:
        want += x
    for r in range(n):
        got = outs[r]["output_0"].numpy()
        if not np.array_equal(got, want):
            print(f"rank {r}: wrong all-reduce result", file=sys.stderr)
            return 1

    t = min(in_threads(n, lambda r: run(r, iters)) for _ in range(3)) / iters
    moved = n * (size * (n + 1) / n + 2 * size * (n - 1) / n)
    one = memcpy_gbps(size, 1, iters)
    many = memcpy_gbps(size, n, iters)
    print(f"all_reduce float32 {args.mib} MiB, {n} ranks (threads) on "
          f"{os.cpu_count()} CPUs")
    print(f"  time per all-reduce      {t * 1e3:8.2f} ms")
    print(f"  algorithm bytes moved    {moved / t / 1e9:8.2f} GB/s")
    print(f"  memcpy, 1 thread         {one:8.2f} GB/s")
    print(f"  memcpy, {n} threads        {many:8.2f} GB/s")
    print(f"  all-reduce / memcpy({n})   {moved / t / 1e9 / many:8.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
