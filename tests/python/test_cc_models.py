"""Several collective models per rank, as tensor-parallel models keep their
kernels loaded: a rank's models share its one communicator (one rendezvous
at NEURON_RT_ROOT_COMM_ID per process), in any interleaving, with models
unloaded while the others go on; ranks that execute different models, or
the same ones in another order, fail at once on every rank, naming both.

Ranks are processes (tests/python/cc_models_rank.py), on one emulated
machine (the shared-memory board and libfabric's shm, or the runtime's own
TCP) or on two (libfabric's tcp), or threads of this process on a core
each.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import cc_models_rank as cr
from nrtpy import NrtError
from support import child_env, run_python
from test_collectives import (NRT_EXEC_HW_ERR_COLLECTIVES, elapsed,
                              free_port, machine_name)

RANK_SCRIPT = Path(cr.__file__)
# Long enough that a failure reported well before it cannot be the timeout.
TIMEOUT = 60


@pytest.fixture
def machine(fresh_runtime):
    """A runtime on an emulated trn1.32xlarge (32 cores)."""
    fresh_runtime.setenv("NRTPY_EMU_INSTANCE", "trn1.32xlarge")
    fresh_runtime.setenv("NEURON_RT_EXEC_TIMEOUT", str(TIMEOUT))
    return fresh_runtime


def ranks_as_processes(neff_dir, world, mode, *, machines=False,
                       transport=None, cores_per_rank=1):
    """Run cc_models_rank.py MODE as `world` processes: (exit code,
    output) of each."""
    root = f"127.0.0.1:{free_port()}"
    names = [machine_name(f"m{r}") for r in range(world)]
    procs = []
    for r in range(world):
        cores = range(r * cores_per_rank, (r + 1) * cores_per_rank)
        env = child_env(
            NEURON_RT_ROOT_COMM_ID=root,
            NEURON_RT_EXEC_TIMEOUT=str(TIMEOUT),
            NRTPY_EMU_INSTANCE="trn1.32xlarge",
            NEURON_RT_VISIBLE_CORES=(
                None if machines else ",".join(map(str, cores))),
            NRTPY_EMU_NAMESPACE=names[r if machines else 0],
            NRTPY_EMU_CC_TRANSPORT=transport, FI_TCP_IFACE="lo")
        procs.append(subprocess.Popen(
            [sys.executable, str(RANK_SCRIPT), str(neff_dir), str(r),
             str(world), mode], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True))
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=TIMEOUT * 2)
        results.append((p.returncode, out))
    return results


def assert_mismatch(out: str) -> None:
    """The error of a rank of the mismatch: the status, both models, long
    before the timeout."""
    assert f"NrtError {NRT_EXEC_HW_ERR_COLLECTIVES}" in out, out
    assert "model 'cc_all_reduce'" in out and "model 'cc_all_gather'" in out, out
    assert "the ranks executed different collective models" in out, out
    assert elapsed(out) < TIMEOUT / 4, out


TRANSPORTS = [
    pytest.param(2, True, None, id="2-machines"),
    pytest.param(4, False, None, id="4-one-machine"),
    pytest.param(2, False, "tcp", id="2-own-tcp"),
]


@pytest.mark.parametrize("world, machines, transport", TRANSPORTS)
def test_processes_keep_several_models(tmp_path, world, machines, transport):
    """Each rank process keeps 4 collective models loaded (all-reduce,
    all-gather, reduce-scatter, a tensor-parallel matmul) and executes them
    in an interleaved loop, unloading the all-gather half-way: one
    rendezvous per process, every output right."""
    neff_dir = cr.compile_all(tmp_path, world)
    for rc, out in ranks_as_processes(neff_dir, world, "loop",
                                      machines=machines, transport=transport):
        assert rc == 0 and "ok" in out, out


@pytest.mark.parametrize("world, machines, transport", TRANSPORTS)
def test_processes_that_run_other_models_fail(tmp_path, world, machines,
                                              transport):
    """Rank 0 executes the all-reduce while the others execute the
    all-gather (both loaded on every rank): every rank fails at once with
    NRT_EXEC_HW_ERR_COLLECTIVES naming both models, whatever carries the
    data."""
    neff_dir = cr.compile_all(tmp_path, world)
    for rc, out in ranks_as_processes(neff_dir, world, "mismatch",
                                      machines=machines, transport=transport):
        assert rc == 3, out
        assert_mismatch(out)


def test_two_threads_of_a_rank_take_turns(tmp_path):
    """Two threads of each rank process execute a model each (the same NEFF
    on two cores) at once: the rank's executions take turns on its one
    communicator, and every result is right."""
    neff_dir = cr.compile_all(tmp_path, 2)
    for rc, out in ranks_as_processes(neff_dir, 2, "threads",
                                      cores_per_rank=2):
        assert rc == 0 and "ok" in out, out


def threads_as_ranks(world, target, *args):
    """target(rank, ...) on a thread per rank: the exception each raised,
    or None."""
    errors: dict[int, BaseException | None] = {}

    def work(r):
        try:
            target(r, *args)
            errors[r] = None
        except BaseException as e:  # reported to the test
            errors[r] = e

    ts = [threading.Thread(target=work, args=(r,), daemon=True)
          for r in range(world)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(TIMEOUT * 2)
        assert not t.is_alive(), "a rank hung"
    gc.collect()
    return errors


@pytest.mark.parametrize("world", [2, 4])
def test_threads_keep_several_models(machine, tmp_path, world):
    """The same loop with the ranks as threads of this process, a core
    each: each loads its 4 models, interleaves them, unloads one half-way."""
    neff_dir = cr.compile_all(tmp_path, world)
    errors = threads_as_ranks(
        world, lambda r: cr.loop(neff_dir, r, world, core=r))
    assert errors == {r: None for r in range(world)}, errors


def test_threads_that_run_other_models_fail(machine, tmp_path):
    """Threads as ranks: rank 0 executes the all-reduce, rank 1 the
    all-gather: both fail at once, naming both models."""
    neff_dir = cr.compile_all(tmp_path, 2)
    start = time.monotonic()
    errors = threads_as_ranks(
        2, lambda r: cr.mismatch(neff_dir, r, 2, core=r))
    assert time.monotonic() - start < TIMEOUT / 4
    for r in range(2):
        e = errors[r]
        assert isinstance(e, NrtError), e
        assert e.status_code == NRT_EXEC_HW_ERR_COLLECTIVES
        assert "model 'cc_all_reduce'" in str(e), e
        assert "model 'cc_all_gather'" in str(e), e


FORK_SCRIPT = textwrap.dedent(
    """
    import os, sys, tempfile, threading
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    import nrtpy
    import cc_models_rank as cr
    from nrtpy import NrtError, NrtpyModel

    nrtpy.configure([0, 1])
    neffs = cr.compile_all(Path(tempfile.mkdtemp()), 2)
    ar = neffs / "cc_all_reduce.neff"

    def world_runs():
        # ranks 0 and 1 as threads of this process, meeting at the address
        # (a Rank keeps the models: loaded once, the communicators stay)
        errors = []
        def work(r):
            try:
                for it in range(3):
                    ranks[r].run("cc_all_reduce", it)
            except BaseException as e:
                errors.append(e)
        ts = [threading.Thread(target=work, args=(r,)) for r in (0, 1)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert not errors, errors

    ranks = [cr.Rank(neffs, r, 2, core=r) for r in (0, 1)]
    world_runs()
    pid = os.fork()
    if pid == 0:
        # The child inherits no communicator: a load of its own is a new
        # rank 0 at the address, which the parent's holds.
        nrtpy.reset()
        nrtpy.configure([2, 3])
        try:
            NrtpyModel.load_from_neff(ar, core_id=0, cc_enabled=True,
                                      rank_id=0, world_size=2)
        except NrtError as e:
            os._exit(0 if "rank 0 cannot listen" in str(e) else 2)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    # The parent's communicators are untouched by the child's.
    world_runs()
    print("ok")
    """)


def test_forked_child_inherits_no_communicator(tmp_path):
    """A process with ranks 0 and 1 (threads) at NEURON_RT_ROOT_COMM_ID
    forks: the child's load does not reuse the parent's communicator (it
    is refused: the parent's rank 0 holds the address), and the parent's
    ranks go on."""
    proc = run_python(
        FORK_SCRIPT.format(tests=str(RANK_SCRIPT.parent)), timeout=TIMEOUT,
        NEURON_RT_ROOT_COMM_ID=f"127.0.0.1:{free_port()}",
        NEURON_RT_EXEC_TIMEOUT=str(TIMEOUT),
        NRTPY_EMU_INSTANCE="trn1.32xlarge",
        NRTPY_EMU_NAMESPACE=machine_name("fork"))
    assert proc.returncode == 0 and "ok" in proc.stdout, \
        proc.stdout + proc.stderr
