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
meeting through NEURON_RT_ROOT_COMM_ID on loopback): the median time of one
all-reduce (the slowest rank's) at 4 KiB and each of --sizes-mib, with the
data through libfabric (shm provider) and through the runtime's own TCP
(NRTPY_EMU_CC_TRANSPORT=tcp), next to Open MPI's MPI_Allreduce on buffers
of the same size (when mpirun and mpi4py are installed: Debian openmpi-bin,
pip mpi4py; benchmark-only) and one memcpy of the buffer.

Usage: python bench/bench_collectives.py [--ranks N] [--mib SIZE] [--iter K]
                                         [--processes [--sizes-mib 1,64]]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
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


# One rank of the Open MPI comparison (run under mpirun): p50 of
# MPI_Allreduce (sum) of float32 buffers of each size, in seconds.
MPI_RANK = """
import sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
for size, count in zip(*[map(int, a.split(",")) for a in sys.argv[1:3]]):
    x = np.ones(size // 4, np.float32)
    y = np.empty_like(x)
    comm.Allreduce(x, y)
    times = []
    for _ in range(count):
        comm.Barrier()
        t0 = time.perf_counter()
        comm.Allreduce(x, y)
        times.append(time.perf_counter() - t0)
    worst = comm.reduce(float(np.median(times)), op=MPI.MAX)
    if comm.rank == 0:
        print(f"mpi {size} {worst}", flush=True)
"""


def mpi_times(n: int, sizes, counts) -> dict[int, float] | str:
    """Open MPI's p50 per size across n processes, or why it cannot run."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install mpi4py)"
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        return "mpirun is not installed (Debian openmpi-bin)"
    proc = subprocess.run(
        [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(n),
         sys.executable, "-c", MPI_RANK, ",".join(map(str, sizes)),
         ",".join(map(str, counts))], capture_output=True, text=True)
    got = {int(a): float(b) for a, b in
           re.findall(r"^mpi (\d+) ([0-9.e-]+)$", proc.stdout, re.M)}
    if proc.returncode != 0 or len(got) != len(sizes):
        return f"mpirun failed: {(proc.stdout + proc.stderr)[-300:]}"
    return got


def nrtpy_time(n: int, size: int, count: int, transport: str) -> float:
    """p50 of one all-reduce across n processes through the launcher (the
    slowest rank's), with NRTPY_EMU_CC_TRANSPORT=transport."""
    x = np.ones(size // 4, np.float32)
    with tempfile.TemporaryDirectory() as work:
        path = nrtpy.neff.compile(lambda x: nrtpy.neff.all_reduce(x), x,
                                  path=Path(work) / "ar.neff", world_size=n)
        proc = subprocess.run(
            [sys.executable, "-m", "nrtpy", "run", str(path), "--ranks",
             str(n), "--output-dir", str(Path(work) / "out"),
             "--benchmark", str(count)],
            capture_output=True, text=True,
            env=dict(os.environ, NEURON_RT_EXEC_TIMEOUT="120",
                     NRTPY_EMU_CC_TRANSPORT=transport))
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout + proc.stderr)
    p50 = [float(v) for v in re.findall(r"p50 ([0-9.]+) ms", proc.stdout)]
    return max(p50) / 1e3


def processes(n: int, mib: list[int], iters: int) -> int:
    """All-reduce across n processes of this machine: libfabric (shm), the
    runtime's own TCP, Open MPI's MPI_Allreduce, and memcpy for scale."""
    sizes = [4 << 10] + [m << 20 for m in mib]
    counts = [iters * (100 if s <= (1 << 20) else 1) for s in sizes]
    mpi = mpi_times(n, sizes, counts)
    print(f"all_reduce float32 across {n} processes of this machine "
          f"({os.cpu_count()} CPUs), p50 of the slowest rank")
    print(f"  {'size':>10}  {'libfabric shm':>14}  {'own TCP':>10}  "
          f"{'Open MPI':>10}  {'memcpy':>10}  vs MPI")
    for size, count in zip(sizes, counts):
        fab = nrtpy_time(n, size, count, "auto")
        tcp = nrtpy_time(n, size, count, "tcp")
        src = np.ones(size // 4, np.float32)
        dst = np.empty_like(src)
        np.copyto(dst, src)
        t0 = time.perf_counter()
        for _ in range(count):
            np.copyto(dst, src)
        copy = (time.perf_counter() - t0) / count
        ref = mpi.get(size) if isinstance(mpi, dict) else None
        label = (f"{size >> 10} KiB" if size < (1 << 20)
                 else f"{size >> 20} MiB")
        print(f"  {label:>10}  {fab * 1e3:11.3f} ms  {tcp * 1e3:7.3f} ms  "
              + (f"{ref * 1e3:7.3f} ms" if ref else f"{'-':>10}")
              + f"  {copy * 1e3:7.3f} ms  "
              + (f"{ref / fab:5.2f}x" if ref else ""))
    if isinstance(mpi, str):
        print(f"  (no Open MPI comparison: {mpi})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--iter", type=int, default=5)
    ap.add_argument("--processes", action="store_true")
    ap.add_argument("--sizes-mib", default="1,64",
                    help="with --processes: sizes after 4 KiB (MiB, commas)")
    args = ap.parse_args()
    n, size, iters = args.ranks, args.mib << 20, args.iter
    if args.processes:
        return processes(n, [int(v) for v in args.sizes_mib.split(",")],
                         iters)

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
