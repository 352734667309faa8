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

With --processes the ranks are processes instead (one core each, meeting
through NEURON_RT_ROOT_COMM_ID on loopback, as python -m nrtpy run starts
them), at 4 KiB and each of --sizes-mib, for each NRTPY_EMU_CC_TRANSPORT
of --transports: auto (all_reduce through the runtime's shared memory),
libfabric (its shm provider), tcp (the runtime's own sockets).  Each rank
executes the NEFF back to back; the figures are the slowest rank's p50 of
  call  the whole Python model() call, what a user's loop sees;
  cc    the collective op alone, from the sys-trace's cc_running events
        (waiting for the other ranks included);
  one   model() of the same op compiled for a world of one: the call's
        own overhead (Python, runtime, the copy into the result).
Open MPI's MPI_Allreduce runs on buffers of the same size in the same run
(Debian openmpi-bin, pip mpi4py; benchmark-only), timed back to back and
with a barrier before each call; the faster of the two is compared with
our whole call.  Sizes are interleaved and the whole repeated --reps
times: the machine may be shared, so each figure is a range over the
reps, and each ratio is taken within one rep.

Usage: python bench/bench_collectives.py [--ranks N] [--mib SIZE] [--iter K]
                                         [--processes [--sizes-mib 1,64]
                                          [--reps R] [--transports auto,tcp]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
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


# One rank of the Open MPI comparison (run under mpirun): MPI_Allreduce
# (sum) of float32 buffers of each size, timed two ways: back to back (as
# the nrtpy ranks below) and with a barrier before each call (the skew
# between the ranks left out).  Prints the slowest rank's p50 of each.
MPI_RANK = """
import sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
for size, count in zip(*[map(int, a.split(",")) for a in sys.argv[1:3]]):
    x = np.ones(size // 4, np.float32)
    y = np.empty_like(x)
    for _ in range(min(count, 10)):
        comm.Allreduce(x, y)
    p50 = []
    for barrier in (False, True):
        times = []
        comm.Barrier()
        for _ in range(count):
            if barrier:
                comm.Barrier()
            t0 = time.perf_counter()
            comm.Allreduce(x, y)
            times.append(time.perf_counter() - t0)
        p50.append(comm.reduce(float(np.median(times)), op=MPI.MAX))
    if comm.rank == 0:
        print(f"mpi {size} {p50[0]} {p50[1]}", flush=True)
"""


def mpi_time(n: int, size: int, count: int) -> tuple[float, float] | str:
    """Open MPI's p50 (back to back, with barriers) across n processes, or
    why it cannot run."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install mpi4py)"
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        return "mpirun is not installed (Debian openmpi-bin)"
    proc = subprocess.run(
        [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(n),
         sys.executable, "-c", MPI_RANK, str(size), str(count)],
        capture_output=True, text=True)
    got = re.findall(r"^mpi \d+ ([0-9.e-]+) ([0-9.e-]+)$", proc.stdout, re.M)
    if proc.returncode != 0 or len(got) != 1:
        return f"mpirun failed: {(proc.stdout + proc.stderr)[-300:]}"
    return float(got[0][0]), float(got[0][1])


# One nrtpy rank (a process, as python -m nrtpy run starts them): the
# all-reduce NEFF executed back to back; per call, p50 of
#   call: the Python model() call (what a user's loop sees),
#   cc:   the collective op alone, from the system trace's cc_running
#         events (waiting for the other ranks included),
#   one:  model() of the same op compiled for a world of one: the call's
#         own overhead (Python, runtime, the copy of the result).
RANK = """
import json, os, sys, time
import numpy as np
from nrtpy import NrtpyModel, NrtpyTensor, SystemTraceSession
neff, one, rank, world, size, count, bind = sys.argv[1:8]
rank, world, size, count = int(rank), int(world), int(size), int(count)
if bind == "1":
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[
        rank % len(os.sched_getaffinity(0))]})
x = NrtpyTensor.from_numpy(np.full(size // 4, rank + 1, np.float32), name="x")
def loop(model, trace=False):
    outputs = dict(model(inputs={"x": x}))
    for _ in range(min(count, 10)):
        model(inputs={"x": x}, outputs=outputs)
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        model(inputs={"x": x}, outputs=outputs)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), outputs
m = NrtpyModel.load_from_neff(neff, core_id=0, cc_enabled=True,
                              rank_id=rank, world_size=world)
call, outputs = loop(m)
want = world * (world + 1) / 2
assert np.all(outputs["output_0"].numpy() == want), "wrong all-reduce result"
with SystemTraceSession() as trace:
    loop(m)
    events = json.loads(trace.fetch_events_json())["events"]
ev = [e for e in events if e["event_type"] == "cc_running"]
spans = [b["data"]["nc_timestamp_ns"] - a["data"]["nc_timestamp_ns"]
         for a, b in zip(ev[0::2], ev[1::2])]
del m
one_call, _ = loop(NrtpyModel.load_from_neff(one, core_id=0))
print(json.dumps({"call": call, "cc": float(np.median(spans)) / 1e9,
                  "one": one_call}), flush=True)
"""


def nrtpy_time(n: int, size: int, count: int, transport: str,
               work: Path, bind: bool) -> dict[str, float]:
    """The slowest rank's p50s (RANK above) across n processes meeting
    through NEURON_RT_ROOT_COMM_ID on loopback, NRTPY_EMU_CC_TRANSPORT=
    transport; with `bind`, rank r on the r-th CPU (modulo their number),
    as mpirun binds its ranks."""
    x = np.ones(size // 4, np.float32)
    neff = work / f"ar{n}_{size}.neff"
    one = work / f"one_{size}.neff"
    if not neff.exists():
        nrtpy.neff.compile(lambda x: nrtpy.neff.all_reduce(x), x, path=neff,
                           world_size=n)
        nrtpy.neff.compile(lambda x: nrtpy.neff.all_reduce(x), x, path=one)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        root = f"127.0.0.1:{s.getsockname()[1]}"
    procs = [subprocess.Popen(
        [sys.executable, "-c", RANK, str(neff), str(one), str(r), str(n),
         str(size), str(count), "1" if bind else "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, NEURON_RT_EXEC_TIMEOUT="120",
                 NEURON_RT_ROOT_COMM_ID=root, NEURON_RT_VISIBLE_CORES=str(r),
                 NRTPY_EMU_CC_TRANSPORT=transport)) for r in range(n)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode != 0 for p in procs):
        raise RuntimeError("\n".join(outs))
    got = [json.loads(o.strip().splitlines()[-1]) for o in outs]
    return {k: max(g[k] for g in got) for k in got[0]}


def fmt_ms(lo: float, hi: float) -> str:
    if lo == hi:
        return f"{lo * 1e3:.3f}"
    return f"{lo * 1e3:.3f}-{hi * 1e3:.3f}"


TRANSPORTS = {"auto": "shared mem", "libfabric": "libfabric shm",
              "tcp": "own TCP"}


def processes(n: int, mib: list[float], iters: int, reps: int,
              transports: list[str], bind: bool) -> int:
    """All-reduce across n processes of this machine, each transport
    against Open MPI, interleaved size by size and repeated `reps` times
    (the machine may be shared: each figure is a range over the reps, and
    the ratio to MPI is taken within each rep)."""
    sizes = [4 << 10] + [int(m * (1 << 20)) for m in mib]
    rows: dict[int, dict[str, list]] = {s: {} for s in sizes}
    why_no_mpi = None
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            for size in sizes:
                count = iters * (100 if size <= (1 << 20) else 1)
                row = rows[size]
                mpi = mpi_time(n, size, count)
                if isinstance(mpi, str):
                    why_no_mpi = mpi
                else:
                    row.setdefault("mpi", []).append(min(mpi))
                    row.setdefault("mpi b2b", []).append(mpi[0])
                for t in transports:
                    got = nrtpy_time(n, size, count, t, Path(tmp), bind)
                    row.setdefault(t, []).append(got["call"])
                    row.setdefault(t + " cc", []).append(got["cc"])
                    row.setdefault(t + " one", []).append(got["one"])
                    if not isinstance(mpi, str):
                        row.setdefault(t + " ratio", []).append(
                            min(mpi) / got["call"])
    print(f"all_reduce float32 across {n} processes of this machine "
          f"({os.cpu_count()} CPUs), {reps} rep(s), ms: range of the "
          f"slowest rank's p50 over the reps")
    print("  our ranks " + ("bound to CPUs, rank r on CPU r mod N, as mpirun "
                            "binds 2 ranks" if bind else
                            "not bound to CPUs, as python -m nrtpy run starts "
                            "them (mpirun binds 2 ranks; --bind: ours too)"))
    print("  call: a whole model() call, back to back; cc: the collective "
          "alone (sys-trace cc_running);")
    print("  one: model() of a world-of-one NEFF (the call's own overhead); "
          "MPI: MPI_Allreduce, the faster of back-to-back and barrier-first;")
    print("  vs MPI: MPI's time / our call's, per rep (> 1: we are faster)")
    for t in transports:
        print(f"  {TRANSPORTS[t]:>14}: {'size':>8} {'call':>15} {'cc':>15} "
              f"{'one':>13} {'Open MPI':>15} {'vs MPI':>11}")
        for size in sizes:
            row = rows[size]
            label = (f"{size >> 10} KiB" if size < (1 << 20)
                     else f"{size / (1 << 20):g} MiB")
            line = f"  {'':>14}  {label:>8}"
            for k in (t, t + " cc", t + " one"):
                line += f" {fmt_ms(min(row[k]), max(row[k])):>15}"
            if "mpi" in row:
                r = row[t + " ratio"]
                line += (f" {fmt_ms(min(row['mpi']), max(row['mpi'])):>15}"
                         f" {min(r):5.2f}-{max(r):.2f}x")
            print(line)
    if why_no_mpi:
        print(f"  (no Open MPI comparison: {why_no_mpi})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--iter", type=int, default=5)
    ap.add_argument("--processes", action="store_true")
    ap.add_argument("--sizes-mib", default="1,64",
                    help="with --processes: sizes after 4 KiB (MiB, commas)")
    ap.add_argument("--reps", type=int, default=1,
                    help="with --processes: repetitions, interleaved")
    ap.add_argument("--transports", default="auto,libfabric",
                    help="with --processes: NRTPY_EMU_CC_TRANSPORT values")
    ap.add_argument("--bind", action="store_true",
                    help="with --processes: bind our ranks to CPUs too")
    args = ap.parse_args()
    n, size, iters = args.ranks, args.mib << 20, args.iter
    if args.processes:
        return processes(n, [float(v) for v in args.sizes_mib.split(",")],
                         iters, args.reps, args.transports.split(","),
                         args.bind)

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
