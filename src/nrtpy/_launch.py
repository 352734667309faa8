"""``python -m nrtpy run MODEL.neff --ranks N``: run a collective NEFF as N
ranks, one process per rank, one core each of this emulated machine.

The launch contract is the hardware's: every rank loads the same NEFF with
``cc_enabled=True, rank_id=r, world_size=N`` and the ranks meet at
``NEURON_RT_ROOT_COMM_ID`` (set here to a free loopback port unless the
caller set it).  Rank r claims core r (``NEURON_RT_VISIBLE_CORES``).

Inputs: ``--inputs`` names a folder of ``<input name>.npy`` files, an
``.npz`` archive keyed by input name, or (for a model of one input) one
``.npy``; ``{rank}`` in the path is replaced by the rank, so each rank can
read its own.  Without it every input is zeros; an input path that is not
a regular file (a FIFO, a device) or a file that is neither a .npy nor an
.npz is refused.  Outputs:
``OUTPUT_DIR/rank<r>/<output name>.npy``.  Each rank prints one summary
line (and, for long benchmarks, progress lines).  The first rank that fails
ends the others that are still running (SIGTERM, and SIGCONT so that a
rank stopped with SIGSTOP ends too; SIGKILL for one still there 10 s
later); the last line names the ranks that failed and those ended so, and
the exit status is 0 when every rank succeeded, else 1.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from nrtpy import _files


def add_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="run a NEFF as N collective ranks "
                       "(one process per rank)",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("neff", help="the NEFF every rank loads")
    p.add_argument("--ranks", type=int, default=1, help="number of ranks")
    p.add_argument("--inputs", help="folder of .npy or .npz ({rank} is "
                   "replaced by the rank)")
    p.add_argument("--output-dir", default="outputs",
                   help="where rank<r>/<output>.npy go (default: outputs)")
    p.add_argument("--benchmark", type=int, metavar="ITER", default=0,
                   help="also time ITER executions per rank")
    p.add_argument("--save-trace", action="store_true",
                   help="save each rank's trace as OUTPUT_DIR/rank<r>.ntff")
    p.add_argument("--rank", type=int, help=argparse.SUPPRESS)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(args: argparse.Namespace) -> int:
    if args.rank is not None:
        return _rank_main(args)
    if args.ranks < 1:
        print("python -m nrtpy run: --ranks must be at least 1",
              file=sys.stderr)
        return 2
    if args.benchmark < 0:
        print(f"python -m nrtpy run: --benchmark must be 0 or more, not "
              f"{args.benchmark}", file=sys.stderr)
        return 2
    if not Path(args.neff).is_file():
        print(f"python -m nrtpy run: no NEFF file at {args.neff}",
              file=sys.stderr)
        return 2
    # One core per rank: a world larger than the instance would fail in
    # its last ranks' nrt_init while the first ones wait for them.
    from nrtpy._info import runtime_info

    info = runtime_info()
    if args.ranks > info["total_cores"]:
        where = (f"the emulated instance {info['instance']}"
                 if info["emulated"] else "this instance")
        hint = ("; set NRTPY_EMU_INSTANCE to a larger profile (for example "
                "trn1.32xlarge, 32 cores)" if info["emulated"] else "")
        print(f"python -m nrtpy run: --ranks {args.ranks} needs "
              f"{args.ranks} NeuronCores, one per rank, but {where} has "
              f"{info['total_cores']}{hint}", file=sys.stderr)
        return 2
    root = os.environ.get("NEURON_RT_ROOT_COMM_ID") or f"127.0.0.1:{_free_port()}"
    procs = []
    for r in range(args.ranks):
        env = dict(os.environ, NEURON_RT_ROOT_COMM_ID=root,
                   NEURON_RT_VISIBLE_CORES=str(r))
        cmd = [sys.executable, "-m", "nrtpy", "run", args.neff,
               "--ranks", str(args.ranks), "--rank", str(r),
               "--output-dir", args.output_dir,
               "--benchmark", str(args.benchmark)]
        if args.inputs:
            cmd += ["--inputs", args.inputs]
        if args.save_trace:
            cmd.append("--save-trace")
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))

    # The ranks that said they failed (_rank_main's "failed: ..." line): a
    # rank that fails as another does can get the launcher's SIGTERM while
    # it exits, and is still one that failed, not one ended by it.
    said_failed: set[int] = set()

    def relay(r: int, p: subprocess.Popen) -> None:
        assert p.stdout is not None
        for line in p.stdout:
            if line.startswith("failed: "):
                said_failed.add(r)
            sys.stdout.write(f"[rank {r}] {line}")
            sys.stdout.flush()

    relays = [threading.Thread(target=relay, args=(r, p), daemon=True)
              for r, p in enumerate(procs)]
    for t in relays:
        t.start()
    # A rank that fails ends the others: they would wait for it until
    # NEURON_RT_EXEC_TIMEOUT.  (signalled: the ranks the launcher ends ->
    # whether each was stopped, as by SIGSTOP, when it did)
    signalled: dict[int, bool] = {}
    while True:
        codes = [p.poll() for p in procs]  # every rank, not the first few
        if all(c is not None for c in codes):
            break
        if any(c not in (None, 0) for c in codes):
            for r, p in enumerate(procs):
                if p.poll() is None:
                    signalled[r] = _is_stopped(p.pid)
                    _end(p)
            break
        time.sleep(0.05)
    codes = [_wait(p) for p in procs]
    for t in relays:
        t.join()
    summary = _summary(codes, signalled, said_failed)
    if summary:
        print(f"python -m nrtpy run: {summary}", file=sys.stderr)
        return 1
    return 0


# How long a rank may outlive the launcher's SIGTERM before SIGKILL (a
# library that catches SIGTERM can keep it from ending).
_TERM_GRACE_S = 10


def _end(p: subprocess.Popen) -> None:
    """Ask a rank to end: SIGTERM, then SIGCONT, since a stopped process
    (SIGSTOP, SIGTSTP) holds SIGTERM pending until it is continued and
    would otherwise wait out the SIGKILL grace."""
    p.terminate()
    p.send_signal(signal.SIGCONT)  # (a no-op on one that ended since)


def _is_stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (state T in Linux's
    /proc/<pid>/stat; False where that cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read()
    except OSError:
        return False
    # (the command name, in parentheses, may hold spaces and parentheses)
    state = fields[fields.rfind(b")") + 2:][:1]
    return state in (b"T", b"t")


def _wait(p: subprocess.Popen) -> int:
    """The exit status of a rank, killing it if it outlives a SIGTERM by
    _TERM_GRACE_S."""
    try:
        return (p.wait(timeout=_TERM_GRACE_S) if p.returncode is None
                else p.returncode)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def _summary(codes: list[int], signalled: dict[int, bool],
             said_failed: set[int]) -> str:
    """What went wrong, by rank, from each rank's exit status: empty when
    every rank succeeded.  A rank the launcher signalled counts as ended
    by it only if that signal is what ended it, before the rank said it
    failed: one that exited on its own first failed, and one that ended
    well succeeded."""
    ours = (-signal.SIGTERM, -signal.SIGKILL)
    by_us = {r for r, c in enumerate(codes) if r in signalled and c in ours}
    failed = [r for r, c in enumerate(codes)
              if c > 0 or (r in by_us and r in said_failed)]
    killed = {r: c for r, c in enumerate(codes) if c < 0 and r not in by_us}
    ended = [r for r in sorted(by_us) if r not in said_failed]
    parts = []
    if failed:
        parts.append(f"rank(s) {_ranks(failed)} failed")
    for r, c in killed.items():
        parts.append(f"rank {r} was killed by {_signal_name(-c)}")
    if ended:
        notes = ["still running"]
        was_stopped = [r for r in ended if signalled[r]]
        if was_stopped:
            notes.append(f"rank(s) {_ranks(was_stopped)} had been stopped, "
                         f"as by SIGSTOP")
        outlived = [r for r in ended if codes[r] == -signal.SIGKILL]
        if outlived:
            notes.append(f"rank(s) {_ranks(outlived)} outlived SIGTERM by "
                         f"{_TERM_GRACE_S} s and were killed")
        parts.append(f"ended rank(s) {_ranks(ended)} ({'; '.join(notes)})")
    return "; ".join(parts)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks))


def _inputs(model: Any, spec: str | None, rank: int) -> dict[str, Any]:
    import numpy as np

    from nrtpy import _dtypes

    arrays: dict[str, Any] = {}
    if spec:
        path = Path(spec.replace("{rank}", str(rank)))
        if path.is_dir():
            for name in model.input_tensors_info:
                f = path / f"{name}.npy"
                # A missing file means zeros; one that is there (a FIFO, a
                # folder, a broken link included) must be a .npy.
                if os.path.lexists(f):
                    with _open_regular(f) as fp:
                        if _array_format(fp, f) != "npy":
                            raise ValueError(f"{f} is an .npz archive, not "
                                             f"a .npy file")
                        arrays[name] = np.load(fp)
        else:
            with _open_regular(path) as fp:
                if _array_format(fp, path) == "npy":  # the one input
                    if len(model.input_tensors_info) != 1:
                        raise ValueError(
                            f"{path} is one array, but the model has "
                            f"{len(model.input_tensors_info)} inputs: give "
                            f"a folder or an .npz")
                    arrays = {next(iter(model.input_tensors_info)):
                              np.load(fp)}
                else:
                    with np.load(fp) as npz:
                        arrays = {k: npz[k] for k in npz.files}
    out = {}
    for name, meta in model.input_tensors_info.items():
        dtype = _dtypes.to_numpy(meta.dtype)
        a = arrays.get(name)
        if a is None:
            a = np.zeros(tuple(meta.shape), dtype)
        elif a.dtype != dtype and a.dtype.itemsize == dtype.itemsize and \
                a.dtype.kind == "V":
            a = a.view(dtype)  # ml_dtypes types saved as raw bytes
        out[name] = a
    return out


def _open_regular(path: Path) -> Any:
    """The file at `path`, open for binary reading, or ValueError when it
    is not a regular file (nrtpy._files: never blocking on a FIFO)."""
    try:
        return _files.open_regular(path)
    except OSError as e:
        kind = getattr(e, "kind", None)
        if kind is None:
            raise
        raise ValueError(f"{path} is not a regular file (it is {kind})") from None


_NPY_MAGIC = b"\x93NUMPY"
# A zip's first local file header, or the end record of an empty zip (an
# .npz saved with no arrays).
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")


def _array_format(fp: Any, path: Path) -> str:
    """The file's format, "npy" or "npz", from its first bytes (left
    unread), else ValueError: np.load would take any other file for a
    pickle and say only that pickled data is not allowed."""
    head = fp.read(len(_NPY_MAGIC))
    fp.seek(0)
    if head.startswith(_NPY_MAGIC):
        return "npy"
    if head.startswith(_ZIP_MAGICS):
        return "npz"
    what = f"it starts with {head!r}" if head else "it is empty"
    raise ValueError(f"{path} is neither a .npy nor an .npz file ({what})")


def _rank_main(args: argparse.Namespace) -> int:
    import numpy as np

    from nrtpy import NrtError, NrtpyModel, NrtpyTensor

    r, n = args.rank, args.ranks
    outdir = Path(args.output_dir) / f"rank{r}"
    try:
        model = NrtpyModel.load_from_neff(args.neff, core_id=0,
                                          cc_enabled=n > 1, rank_id=r,
                                          world_size=n)
        arrays = _inputs(model, args.inputs, r)
        inputs = {k: NrtpyTensor.from_numpy(a, name=k) for k, a in arrays.items()}
        outdir.mkdir(parents=True, exist_ok=True)
        ntff = str(Path(args.output_dir) / f"rank{r}.ntff")
        t0 = time.perf_counter()
        out = model(inputs=inputs, save_trace=args.save_trace,
                    ntff_name=ntff if args.save_trace else None)
        took = (time.perf_counter() - t0) * 1e3
        for name, t in out.items():
            np.save(outdir / f"{name}.npy", t.numpy())
        summary = f"ok in {took:.2f} ms, outputs in {outdir}/"
        if args.benchmark > 0:
            outputs = dict(out)
            done = 0
            last = time.monotonic()
            times = []
            while done < args.benchmark:
                t1 = time.perf_counter()
                model(inputs=inputs, outputs=outputs)
                times.append((time.perf_counter() - t1) * 1e3)
                done += 1
                if time.monotonic() - last > 1.0:
                    print(f"benchmark {done}/{args.benchmark}", flush=True)
                    last = time.monotonic()
            times.sort()
            summary += (f"; benchmark {args.benchmark} iterations: mean "
                        f"{sum(times) / len(times):.3f} ms, p50 "
                        f"{times[len(times) // 2]:.3f} ms")
        print(summary, flush=True)
    except NrtError as e:
        print(f"failed: {e}", flush=True)
        return 1
    except (OSError, ValueError, KeyError) as e:
        print(f"failed: {type(e).__name__}: {e}", flush=True)
        return 1
    return 0
