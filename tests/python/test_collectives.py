"""Collective ops across ranks: threads of this process, one core each,
and processes meeting through NEURON_RT_ROOT_COMM_ID.

Every rank loads the same NEFF with cc_enabled=True on its own core of an
emulated trn1.32xlarge and executes it; the results are checked against
NumPy computed from all ranks' inputs (16- and 8-bit floats reduced in
float32 in group order and rounded once, so exactly).  Failures (a rank
missing, dead, claimed twice, running another NEFF; a bad rendezvous
address) end in a clear error on the others within the timeout.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import nrtpy.neff as nn
from nrtpy import NrtError, NrtpyModel, NrtpyTensor, SystemTraceSession
from support import child_env, namespace

_counter = itertools.count()
NRT_INVALID, NRT_TIMEOUT, NRT_EXEC_HW_ERR_COLLECTIVES = 2, 5, 1200


@pytest.fixture
def machine(fresh_runtime):
    """A runtime on an emulated trn1.32xlarge (32 cores)."""
    fresh_runtime.setenv("NRTPY_EMU_INSTANCE", "trn1.32xlarge")
    return fresh_runtime


def compile_for(tmp_path, fn, x, world):
    return nn.compile(fn, x, path=tmp_path / f"c{next(_counter)}.neff",
                      world_size=world)


def load(path, world):
    return [NrtpyModel.load_from_neff(path, core_id=r, cc_enabled=True,
                                      rank_id=r, world_size=world)
            for r in range(world)]


def run_ranks(models, xs, ranks=None):
    """Execute rank r's model on xs[r] from a thread per rank: each rank's
    outputs (a list of arrays) or the exception it raised."""
    ranks = range(len(models)) if ranks is None else ranks
    results: dict[int, object] = {}

    def work(r):
        try:
            x = NrtpyTensor.from_numpy(xs[r], name="x", core_id=r)
            out = models[r](inputs={"x": x})
            results[r] = [v.numpy() for v in out.values()]
        except Exception as e:  # reported to the test
            results[r] = e

    threads = [threading.Thread(target=work, args=(r,), daemon=True)
               for r in ranks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a rank hung"
    return results


def rank_inputs(world, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return [rng.integers(-50, 50, shape).astype(dtype) for _ in range(world)]
    return [rng.standard_normal(shape).astype(np.float32).astype(dtype)
            for _ in range(world)]


def reduce_ref(parts, op, dtype):
    """The reduction of `parts` in order, in the kernel type, rounded once."""
    kt = np.float32 if np.dtype(dtype).kind == "f" or dtype in (
        ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn) else np.int64
    if np.dtype(dtype) == np.float64:
        kt = np.float64
    fn = {"sum": np.add, "prod": np.multiply, "max": np.maximum,
          "min": np.minimum}[op]
    acc = parts[0].astype(kt)
    for p in parts[1:]:
        acc = fn(acc, p.astype(kt))
    return acc.astype(dtype)


DTYPES = [np.float32, ml_dtypes.bfloat16, np.float16, np.int32,
          ml_dtypes.float8_e4m3fn]


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_op_against_numpy(machine, tmp_path, world, dtype):
    ring = [(r, (r + 1) % world) for r in range(world)]

    def kernel(x):
        return (nn.all_reduce(x), nn.all_reduce(x, op="max"),
                nn.all_reduce(x, op="min"), nn.all_reduce(x, op="prod"),
                nn.all_gather(x, 1), nn.reduce_scatter(x, 0, op="sum"),
                nn.all_to_all(x, 0, 1), nn.collective_permute(x, ring[:-1]))

    shape = (4 * world, 6)
    xs = rank_inputs(world, shape, dtype)
    models = load(compile_for(tmp_path, kernel, xs[0], world), world)
    results = run_ranks(models, xs)
    for r in range(world):
        ar, amax, amin, aprod, ag, rs, a2a, perm = results[r]
        np.testing.assert_array_equal(ar, reduce_ref(xs, "sum", dtype))
        np.testing.assert_array_equal(amax, reduce_ref(xs, "max", dtype))
        np.testing.assert_array_equal(amin, reduce_ref(xs, "min", dtype))
        np.testing.assert_array_equal(aprod, reduce_ref(xs, "prod", dtype))
        np.testing.assert_array_equal(ag, np.concatenate(xs, axis=1))
        blk = shape[0] // world
        np.testing.assert_array_equal(
            rs, reduce_ref(xs, "sum", dtype)[r * blk:(r + 1) * blk])
        np.testing.assert_array_equal(
            a2a, np.concatenate([x[r * blk:(r + 1) * blk] for x in xs], axis=1))
        want = xs[r - 1] if r > 0 else np.zeros(shape, dtype)
        np.testing.assert_array_equal(perm, want)
        assert ar.dtype == np.dtype(dtype)


def test_uneven_and_reordered_groups(machine, tmp_path):
    world = 4

    def kernel(x):
        return (nn.all_reduce(x, replica_groups=[[0], [1, 2, 3]]),
                nn.all_reduce(x, op="max", replica_groups=[[2, 0, 3], [1]]),
                nn.all_gather(x, 0, replica_groups=[[3, 1], [0, 2]]),
                nn.reduce_scatter(x, 1, replica_groups=[[2, 3], [1, 0]]),
                nn.all_to_all(x, 1, 1, replica_groups=[[1, 0], [2, 3]]))

    xs = rank_inputs(world, (3, 4), np.float32, seed=3)
    models = load(compile_for(tmp_path, kernel, xs[0], world), world)
    results = run_ranks(models, xs)
    gather_groups = [[3, 1], [0, 2]]
    scatter_groups = [[2, 3], [1, 0]]
    a2a_groups = [[1, 0], [2, 3]]
    for r in range(world):
        ar, amax, ag, rs, a2a = results[r]
        np.testing.assert_array_equal(
            ar, xs[0] if r == 0 else reduce_ref([xs[1], xs[2], xs[3]], "sum",
                                                np.float32))
        np.testing.assert_array_equal(
            amax, xs[1] if r == 1 else np.maximum(np.maximum(xs[2], xs[0]), xs[3]))
        (g,) = [g for g in gather_groups if r in g]
        np.testing.assert_array_equal(ag, np.concatenate([xs[k] for k in g], 0))
        (g,) = [g for g in scatter_groups if r in g]
        pos = g.index(r)
        np.testing.assert_array_equal(
            rs, reduce_ref([xs[k] for k in g], "sum", np.float32)[:, 2 * pos:2 * pos + 2])
        (g,) = [g for g in a2a_groups if r in g]
        pos = g.index(r)
        np.testing.assert_array_equal(
            a2a, np.concatenate([xs[k][:, 2 * pos:2 * pos + 2] for k in g], 1))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_large_all_reduce(machine, tmp_path, dtype):
    """Over 256 KiB each rank reduces one part and copies the others':
    an odd count checks the part boundaries."""
    world, n = 2, 300_001
    xs = rank_inputs(world, (n,), dtype, seed=5)
    models = load(compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0],
                              world), world)
    for _ in range(2):  # the second execution reuses the communicator
        results = run_ranks(models, xs)
        for r in range(world):
            np.testing.assert_array_equal(results[r][0],
                                          reduce_ref(xs, "sum", dtype))


def test_world_of_one_is_identity(machine, tmp_path):
    def kernel(x):
        return (nn.all_reduce(x, op="prod"), nn.all_gather(x, 0),
                nn.reduce_scatter(x, 1), nn.all_to_all(x, 0, 1),
                nn.collective_permute(x, [(0, 0)]),
                nn.collective_permute(x, []))

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = nn.compile(kernel, x, path=tmp_path / "one.neff")
    for model in (NrtpyModel.load_from_neff(path),
                  NrtpyModel.load_from_neff(path, cc_enabled=True)):
        outs = [v.numpy() for v in model(
            inputs={"x": NrtpyTensor.from_numpy(x, name="x")}).values()]
        for o in outs[:5]:
            np.testing.assert_array_equal(o, x)
        np.testing.assert_array_equal(outs[5], np.zeros_like(x))


def test_sys_trace_shows_collective_time(machine, tmp_path):
    """Rank 0's system trace holds a cc_running pair per collective op,
    inside its nc_exec_running: the time it spent in the collective,
    waiting for rank 1 (which starts 300 ms late) included."""
    x = np.ones(16, np.float32)
    path = compile_for(tmp_path, lambda x: nn.all_gather(nn.all_reduce(x) * 2,
                                                         0), x, 2)
    models = load(path, 2)
    with SystemTraceSession(0) as trace:
        def late(r):
            time.sleep(0.3 * r)
            return models[r](inputs={"x": NrtpyTensor.from_numpy(
                x, name="x", core_id=r)})

        threads = [threading.Thread(target=late, args=(r,)) for r in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        events = json.loads(trace.fetch_events_json())["events"]

    def spans(kind):
        ev = [e for e in events if e["event_type"] == kind and e["nc_idx"] == 0]
        assert [e["phase"] for e in ev] == ["start", "stop"] * (len(ev) // 2)
        return [(a["data"]["nc_timestamp_ns"], b["data"]["nc_timestamp_ns"])
                for a, b in zip(ev[0::2], ev[1::2])]

    (run,) = spans("nc_exec_running")
    cc = spans("cc_running")
    assert len(cc) == 2  # all_reduce, all_gather (not the multiply)
    assert run[0] <= cc[0][0] < cc[0][1] <= cc[1][0] < cc[1][1] <= run[1]
    assert cc[0][1] - cc[0][0] >= 0.2e9  # rank 1 was late
    assert cc[1][1] - cc[1][0] < 0.2e9


def test_missing_rank_times_out(machine, tmp_path):
    """Rank 1 never executes: ranks 0 and 2 fail after the timeout with
    NRT_TIMEOUT naming it; later collectives fail at once."""
    machine.setenv("NEURON_RT_EXEC_TIMEOUT", "1")
    world = 3
    xs = rank_inputs(world, (8,), np.float32)
    models = load(compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0],
                              world), world)
    start = time.monotonic()
    results = run_ranks(models, xs, ranks=[0, 2])
    assert time.monotonic() - start < 10
    for r in (0, 2):
        e = results[r]
        assert isinstance(e, NrtError) and e.status_code == NRT_TIMEOUT, e
        assert "rank 1 did not reach" in str(e)
    late = run_ranks(models, xs, ranks=[1])[1]
    assert isinstance(late, NrtError)
    assert late.status_code == NRT_EXEC_HW_ERR_COLLECTIVES
    assert "communicator failed" in str(late)
    # Loading again makes a new communicator that works.
    del models
    gc.collect()
    models = load(compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0],
                              world), world)
    results = run_ranks(models, xs)
    np.testing.assert_array_equal(results[1][0], reduce_ref(xs, "sum", np.float32))


def test_unloaded_rank_fails_the_waiting_ones(machine, tmp_path):
    machine.setenv("NEURON_RT_EXEC_TIMEOUT", "30")
    xs = rank_inputs(2, (8,), np.float32)
    models = load(compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 2), 2)
    results: dict[int, object] = {}
    t = threading.Thread(target=lambda: results.update(run_ranks(models, xs, [0])))
    start = time.monotonic()
    t.start()
    time.sleep(0.5)
    del models[1]
    gc.collect()
    t.join(20)
    assert not t.is_alive()
    assert time.monotonic() - start < 15
    e = results[0]
    assert isinstance(e, NrtError), e
    assert e.status_code == NRT_EXEC_HW_ERR_COLLECTIVES
    assert "rank 1 left" in str(e)


def test_load_errors(machine, tmp_path):
    x = np.zeros((2, 4), np.float32)
    gather2 = compile_for(tmp_path, lambda x: nn.all_gather(x, 0), x, 2)
    # The shapes gather from 2 ranks, the world has 4.
    with pytest.raises(NrtError, match="shapes imply groups of 2") as e:
        load(gather2, 4)
    assert e.value.status_code == NRT_INVALID
    with pytest.raises(NrtError, match="shapes imply groups of 2"):
        NrtpyModel.load_from_neff(gather2)
    # Groups that do not cover the world.
    grouped = compile_for(tmp_path, lambda x: nn.all_reduce(
        x, replica_groups=[[0, 1]]), x, 2)
    with pytest.raises(NrtError, match="hold 2 of the world's 3 ranks"):
        NrtpyModel.load_from_neff(grouped, core_id=0, cc_enabled=True,
                                  rank_id=0, world_size=3)
    with pytest.raises(NrtError, match="names rank 1"):
        NrtpyModel.load_from_neff(grouped)
    with pytest.raises(NrtError):
        NrtpyModel.load_from_neff(grouped, cc_enabled=True, rank_id=2,
                                  world_size=2)
    # Two ranks of one world on one core.
    m = NrtpyModel.load_from_neff(grouped, core_id=0, cc_enabled=True,
                                  rank_id=0, world_size=2)
    with pytest.raises(NrtError, match="already on vnc 0"):
        NrtpyModel.load_from_neff(grouped, core_id=0, cc_enabled=True,
                                  rank_id=1, world_size=2)
    del m


def test_tracer_checks_arguments(tmp_path):
    x = np.zeros((4, 6), np.float32)

    def trace(fn, world=4):
        return nn.compile(fn, x, path=tmp_path / f"t{next(_counter)}.neff",
                          world_size=world)

    with pytest.raises(TypeError, match="being traced"):
        nn.all_reduce(x)
    with pytest.raises(ValueError, match="op must be one of"):
        trace(lambda x: nn.all_reduce(x, op="mean"))
    with pytest.raises(ValueError, match="twice"):
        trace(lambda x: nn.all_reduce(x, replica_groups=[[0, 1], [1, 2, 3]]))
    with pytest.raises(ValueError, match="each rank must be in one"):
        trace(lambda x: nn.all_reduce(x, replica_groups=[[0, 1]]))
    with pytest.raises(ValueError, match="same size"):
        trace(lambda x: nn.all_gather(x, 0, replica_groups=[[0], [1, 2, 3]]))
    with pytest.raises(ValueError, match="does not split"):
        trace(lambda x: nn.reduce_scatter(x, 1))
    with pytest.raises(ValueError, match="out of range"):
        trace(lambda x: nn.all_to_all(x, 2, 0))
    with pytest.raises(ValueError, match="target of two pairs"):
        trace(lambda x: nn.collective_permute(x, [(0, 1), (2, 1)]))
    with pytest.raises(ValueError, match="world_size 4"):
        trace(lambda x: nn.collective_permute(x, [(0, 4)]))
    with pytest.raises(ValueError, match="world_size must be"):
        trace(lambda x: nn.all_reduce(x), world=0)
    with pytest.raises(TypeError, match="world_size must be an int"):
        trace(lambda x: nn.all_reduce(x), world=2.0)


# ------------------------------------------------------------- processes

RANK_SCRIPT = Path(__file__).with_name("collective_rank.py")


def machine_name(tag: str) -> str:
    """An emulated machine's name (NRTPY_EMU_NAMESPACE) of this test alone:
    test names repeat across worktrees and runs on one host, so the name
    also holds this session's (and so this process's id) and a random
    part."""
    return namespace(f"cc-{secrets.token_hex(4)}-{tag}")


def elapsed(out: str) -> float:
    """The seconds a failed rank says it took, from the start of its load
    (collective_rank.py)."""
    found = re.findall(r"^elapsed ([0-9.]+)$", out, re.M)
    assert found, out
    return float(found[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(tmp_path, neff, xs, world, *, machines, ranks=None, root=None,
           timeout="10", executions=None, extra=None):
    """Start one process per rank (ranks[i] for the i-th process): with
    `machines`, each on an emulated machine of its own (namespace); else
    all on one machine, each claiming the core of its rank
    (NEURON_RT_VISIBLE_CORES).  Outputs go to tmp_path/out<i>_<k>.npy."""
    root = root or f"127.0.0.1:{free_port()}"
    ranks = list(range(world)) if ranks is None else ranks
    names = [machine_name(f"m{i}") for i in range(len(ranks))]
    procs = []
    for i, r in enumerate(ranks):
        np.save(tmp_path / f"in{i}.npy", xs[r])
        env = child_env(NEURON_RT_ROOT_COMM_ID=root,
                        NEURON_RT_EXEC_TIMEOUT=timeout,
                        NRTPY_EMU_INSTANCE="trn1.32xlarge",
                        NEURON_RT_VISIBLE_CORES=None if machines else str(r),
                        NRTPY_EMU_NAMESPACE=names[i if machines else 0],
                        **(extra or {}))
        core = 0
        args = [sys.executable, str(RANK_SCRIPT), str(neff), str(r),
                str(world), str(tmp_path / f"in{i}.npy"),
                str(tmp_path / f"out{i}_"), str(core)]
        if executions is not None:
            args.append(str(executions[i]))
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    return procs


def finish(procs, limit=60):
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=limit)
        outs.append((p.returncode, out))
    return outs


def outputs(tmp_path, i, n, dtype):
    return [np.load(tmp_path / f"out{i}_{k}.npy").view(dtype)
            for k in range(n)]


@pytest.mark.parametrize("world, machines", [(2, True), (4, False)])
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16],
                         ids=lambda d: np.dtype(d).name)
def test_processes(tmp_path, world, machines, dtype):
    """Ranks as processes over TCP: on two emulated machines (a namespace
    each) or on one machine, a core each."""
    ring = [(r, (r + 1) % world) for r in range(world)]

    def kernel(x):
        return (nn.all_reduce(x), nn.all_reduce(x, op="max",
                                                replica_groups=[[0], list(range(1, world))]),
                nn.all_gather(x, 1), nn.reduce_scatter(x, 0, op="sum"),
                nn.all_to_all(x, 0, 1), nn.collective_permute(x, ring))

    shape = (2 * world, 3)
    xs = rank_inputs(world, shape, dtype, seed=7)
    neff = compile_for(tmp_path, kernel, xs[0], world)
    results = finish(launch(tmp_path, neff, xs, world, machines=machines))
    blk = shape[0] // world
    for r in range(world):
        assert results[r][0] == 0, results[r][1]
        ar, amax, ag, rs, a2a, perm = outputs(tmp_path, r, 6, dtype)
        np.testing.assert_array_equal(ar, reduce_ref(xs, "sum", dtype))
        np.testing.assert_array_equal(
            amax, xs[0] if r == 0 else reduce_ref(xs[1:], "max", dtype))
        np.testing.assert_array_equal(ag, np.concatenate(xs, axis=1))
        np.testing.assert_array_equal(
            rs, reduce_ref(xs, "sum", dtype)[r * blk:(r + 1) * blk])
        np.testing.assert_array_equal(
            a2a, np.concatenate([x[r * blk:(r + 1) * blk] for x in xs], axis=1))
        np.testing.assert_array_equal(perm, xs[(r - 1) % world])


@pytest.mark.parametrize("world, machines, count", [
    (2, True, 200_003), (3, True, 200_003), (2, False, 200_003),
    (3, False, 2_600_003)], ids=["2-tcp", "3-tcp", "2-shared", "3-shared"])
def test_large_all_reduce_across_processes(tmp_path, world, machines, count):
    """Over 256 KiB: reduce-scatter then all-gather between processes,
    through libfabric's tcp (two emulated machines) or the board's shared
    memory (one machine; 5 MB of bfloat16 across 3 ranks is 3 windows of
    its 4 MiB areas, so both halves are used and reused); an odd count
    checks the parts."""
    xs = rank_inputs(world, (count,), ml_dtypes.bfloat16, seed=13)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x, op="sum"), xs[0],
                       world)
    results = finish(launch(tmp_path, neff, xs, world, machines=machines))
    for r in range(world):
        assert results[r][0] == 0, results[r][1]
        (got,) = outputs(tmp_path, r, 1, ml_dtypes.bfloat16)
        np.testing.assert_array_equal(got, reduce_ref(xs, "sum",
                                                      ml_dtypes.bfloat16))


def test_shared_memory_all_reduces_in_sequence(tmp_path):
    """Processes of one machine: all-reduces of every size class, op and
    group pattern one after another (a small one's half of the shared
    areas must not be overwritten by the large one that follows while a
    slower rank still reads it), against NumPy."""
    world = 4
    xs = rank_inputs(world, (700_003,), np.float32, seed=5)

    def kernel(x):
        return (nn.all_reduce(x),
                nn.all_reduce(x[:1000], replica_groups=[[0, 2], [1, 3]]),
                nn.all_reduce(x, op="max", replica_groups=[[1, 0], [3, 2]]),
                nn.all_reduce(x[:5], op="min"),
                nn.all_reduce(x[:300_000], op="prod",
                              replica_groups=[[0], [1, 2, 3]]),
                nn.all_reduce(x[:7]))

    neff = compile_for(tmp_path, kernel, xs[0], world)
    results = finish(launch(tmp_path, neff, xs, world, machines=False,
                            executions=[3] * world,
                            extra={"NEURON_RT_LOG_LEVEL": "INFO"}))
    for r in range(world):
        assert results[r][0] == 0, results[r][1]
        assert "all_reduce through shared memory" in results[r][1]
        got = outputs(tmp_path, r, 6, np.float32)
        mate = r ^ 2
        pair = [xs[min(r, mate)], xs[max(r, mate)]]
        group = [xs[r]] if r == 0 else xs[1:]
        first = [xs[1], xs[0]] if r < 2 else [xs[3], xs[2]]
        want = [reduce_ref(xs, "sum", np.float32),
                reduce_ref([p[:1000] for p in pair], "sum", np.float32),
                reduce_ref(first, "max", np.float32),
                reduce_ref([x[:5] for x in xs], "min", np.float32),
                reduce_ref([x[:300_000] for x in group], "prod", np.float32),
                reduce_ref([x[:7] for x in xs], "sum", np.float32)]
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_array_equal(g, w, err_msg=f"rank {r} op {k}")


def libfabric_missing() -> str | None:
    """Why libfabric cannot carry collectives here, or None."""
    try:
        ctypes.CDLL("libfabric.so.1")
    except OSError as e:
        return f"libfabric.so.1 is not installed (Debian libfabric1): {e}"
    return None


SHARED = "; all_reduce through shared memory"


@pytest.mark.parametrize("transport, machines, want", [
    ("auto", False, "through libfabric, provider shm" + SHARED),
    ("libfabric", False, "through libfabric, provider shm\n"),
    ("auto", True, "through libfabric, provider tcp;ofi_rxm\n"),
    ("libfabric", True, "through libfabric, provider tcp;ofi_rxm\n"),
    ("tcp", False, "through TCP\n"),
], ids=["shm", "shm-forced", "tcp-loopback", "forced", "own-tcp"])
def test_transports(tmp_path, transport, machines, want):
    """Between processes of one machine libfabric's shm provider carries
    the data, and all_reduce goes through the runtime's shared memory
    unless NRTPY_EMU_CC_TRANSPORT names a transport; between (emulated)
    machines libfabric's tcp provider (here on loopback), unless
    NRTPY_EMU_CC_TRANSPORT=tcp; every rank logs which.  5 MiB per rank: a
    transfer in several messages."""
    if transport != "tcp" and (why := libfabric_missing()):
        pytest.skip(why)
    world = 2
    xs = rank_inputs(world, (1_300_000,), np.float32, seed=3)
    neff = compile_for(tmp_path, lambda x: (nn.all_reduce(x),
                                            nn.all_gather(x, 0)), xs[0],
                       world)
    results = finish(launch(tmp_path, neff, xs, world, machines=machines,
                            extra={"NRTPY_EMU_CC_TRANSPORT": transport,
                                 "NEURON_RT_LOG_LEVEL": "INFO",
                                 "FI_TCP_IFACE": "lo", "FI_PROVIDER": None}))
    for r in range(world):
        assert results[r][0] == 0, results[r][1]
        assert f"rank {r} of 2: collective data between processes {want}" \
            in results[r][1], results[r][1]
        ar, ag = outputs(tmp_path, r, 2, np.float32)
        np.testing.assert_array_equal(ar, xs[0] + xs[1])
        np.testing.assert_array_equal(ag, np.concatenate(xs))


def test_fi_provider_and_bad_transport(tmp_path):
    """FI_PROVIDER names the provider (tcp on one machine here); a
    transport that is not auto, libfabric or tcp fails the load."""
    if why := libfabric_missing():
        pytest.skip(why)
    xs = rank_inputs(2, (8,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 2)
    results = finish(launch(tmp_path, neff, xs, 2, machines=False,
                            extra={"FI_PROVIDER": "tcp", "FI_TCP_IFACE": "lo",
                                 "NEURON_RT_LOG_LEVEL": "INFO"}))
    for r in range(2):
        assert results[r][0] == 0, results[r][1]
        assert "through libfabric, provider tcp;ofi_rxm" in results[r][1]
    (rc, out), = finish(launch(tmp_path, neff, xs, 2, machines=False,
                               ranks=[0],
                               extra={"NRTPY_EMU_CC_TRANSPORT": "rdma"}))
    assert rc == 3 and f"NrtError {NRT_INVALID}" in out, out
    assert "NRTPY_EMU_CC_TRANSPORT='rdma' is not auto, libfabric or tcp" \
        in out


# A failed rank's own time (from the start of its load) against the
# timeout: the timeout, and this much slack for a loaded machine.
SLACK = 15


def test_process_that_never_starts(tmp_path):
    xs = rank_inputs(3, (4,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 3)
    results = finish(launch(tmp_path, neff, xs, 3, machines=True,
                            ranks=[0, 2], timeout="2"))
    (rc0, out0), (rc2, out2) = results
    assert 2 <= elapsed(out0) < 2 + SLACK
    assert elapsed(out2) < 2 + SLACK
    assert rc0 == 3 and f"NrtError {NRT_TIMEOUT}" in out0, out0
    assert "rank 1 did not join the rendezvous" in out0
    assert rc2 == 3 and f"NrtError {NRT_TIMEOUT}" in out2, out2
    # Rank 2 hears rank 0's reason, unless its own deadline passes first
    # (both wait the same timeout): then it names the missing world.
    assert ("rank 0 says: rank 1 did not join" in out2
            or "the world of 3 did not assemble" in out2), out2


@pytest.mark.parametrize("machines, count", [
    (True, 4), (False, 4), (False, 300_000)],
    ids=["tcp", "shared-small", "shared-large"])
def test_process_that_dies(tmp_path, machines, count):
    """Rank 1 ends after one execution; rank 0's second one fails long
    before the timeout (60 s), naming it: over libfabric, and on the
    shared-memory board, small or large."""
    xs = rank_inputs(2, (count,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 2)
    results = finish(launch(tmp_path, neff, xs, 2, machines=machines,
                            timeout="60", executions=[2, 1]))
    (rc0, out0), (rc1, out1) = results
    assert rc1 == 0, out1
    assert rc0 == 3 and f"NrtError {NRT_EXEC_HW_ERR_COLLECTIVES}" in out0, out0
    assert "rank 1 closed its connection" in out0
    assert elapsed(out0) < 60 / 2


@pytest.mark.parametrize("machines, count", [
    (True, 4), (False, 4), (False, 300_000)],
    ids=["tcp", "shared-small", "shared-large"])
def test_process_that_stops_calling(tmp_path, machines, count):
    """Rank 1 executes once and stays alive without executing again: rank
    0's second execution fails with NRT_TIMEOUT naming it, after the
    timeout (2 s)."""
    xs = rank_inputs(2, (count,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 2)
    results = finish(launch(tmp_path, neff, xs, 2, machines=machines,
                            timeout="2", executions=[2, 1],
                            extra={"RANK_LINGER": "8"}))
    (rc0, out0), (rc1, out1) = results
    assert rc1 == 0, out1
    assert rc0 == 3 and f"NrtError {NRT_TIMEOUT}" in out0, out0
    assert "rank(s) 1 did not reach" in out0
    assert 2 <= elapsed(out0) < 2 + SLACK


def test_rank_claimed_twice(tmp_path):
    """Two processes say they are rank 1 while rank 0 still waits for
    rank 2: the second is refused, naming the rank; the world of the
    others completes."""
    xs = rank_inputs(3, (4,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 3)
    root = f"127.0.0.1:{free_port()}"
    procs = launch(tmp_path, neff, xs, 3, machines=True, ranks=[0, 1, 1],
                   root=root, timeout="15")
    time.sleep(1.5)
    (tmp_path / "r2").mkdir()
    procs += launch(tmp_path / "r2", neff, xs, 3, machines=True, ranks=[2],
                    root=root, timeout="15")
    results = finish(procs)
    codes = sorted(rc for rc, _ in results)
    assert codes == [0, 0, 0, 3], results
    refused = [out for rc, out in results if rc == 3][0]
    assert f"NrtError {NRT_EXEC_HW_ERR_COLLECTIVES}" in refused
    assert "rank id 1 is claimed twice" in refused


def test_rank_claimed_after_the_world_assembled(tmp_path):
    """A process says it is rank 1 after ranks 0 and 1 have met: rank 0,
    still loaded, tells it why it is refused, long before its timeout."""
    xs = rank_inputs(2, (4,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 2)
    root = f"127.0.0.1:{free_port()}"
    procs = launch(tmp_path, neff, xs, 2, machines=True, root=root,
                   timeout="60", extra={"RANK_LINGER": "60"})
    try:
        while not (tmp_path / "out1_0.npy").exists():  # (it executed)
            assert all(p.poll() is None for p in procs), finish(procs)
            time.sleep(0.05)
        (tmp_path / "late").mkdir()
        ((rc, out),) = finish(launch(tmp_path / "late", neff, xs, 2,
                                     machines=True, ranks=[1], root=root,
                                     timeout="60"))
    finally:
        for p in procs:
            p.kill()
            p.communicate()
    assert rc == 3 and f"NrtError {NRT_EXEC_HW_ERR_COLLECTIVES}" in out, out
    assert ("rank id 1 is claimed twice in the world of 2 (the world "
            "assembled without this one)") in out, out
    assert elapsed(out) < 60 / 2


def test_neff_mismatch_fails_both_ranks(tmp_path):
    """Rank 0 executes one NEFF, rank 1 another: they meet (a rank's models
    share its communicator), and the first exchange fails on both at once,
    naming both models, long before the timeout."""
    xs = rank_inputs(2, (4,), np.float32)

    def sum_of(x):
        return nn.all_reduce(x)

    def max_of(x):
        return nn.all_reduce(x, op="max")

    a = compile_for(tmp_path, sum_of, xs[0], 2)
    b = compile_for(tmp_path, max_of, xs[0], 2)
    root = f"127.0.0.1:{free_port()}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    procs = (launch(tmp_path / "a", a, xs, 2, machines=True, ranks=[0],
                    root=root, timeout="60") +
             launch(tmp_path / "b", b, xs, 2, machines=True, ranks=[1],
                    root=root, timeout="60"))
    for rc, out in finish(procs):
        assert rc == 3 and f"NrtError {NRT_EXEC_HW_ERR_COLLECTIVES}" in out, out
        assert "model 'sum_of'" in out and "model 'max_of'" in out, out
        assert elapsed(out) < 60 / 2


@pytest.mark.parametrize("root, text", [
    ("nohost", "is not <host>:<port>"),
    ("127.0.0.1:0", "the port must be 1 to 65535"),
    ("no-such-host.invalid:5000", "cannot resolve host"),
])
def test_bad_root_comm_id(tmp_path, root, text):
    xs = rank_inputs(2, (4,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 2)
    ((rc, out),) = finish(launch(tmp_path, neff, xs, 2, machines=True,
                                 ranks=[0], root=root))
    assert rc == 3 and f"NrtError {NRT_INVALID}" in out and text in out, out


def test_root_address_in_use(tmp_path):
    xs = rank_inputs(2, (4,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 2)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        root = f"127.0.0.1:{busy.getsockname()[1]}"
        ((rc, out),) = finish(launch(tmp_path, neff, xs, 2, machines=True,
                                     ranks=[0], root=root))
    assert rc == 3 and "rank 0 cannot listen" in out, out


# -------------------------------------------------------------- launcher

def test_launcher_runs_ranks(tmp_path):
    """python -m nrtpy run: N processes, {rank} inputs, .npy outputs."""
    world = 2
    xs = rank_inputs(world, (3, 4), np.float32, seed=11)
    neff = compile_for(tmp_path, lambda x: (nn.all_reduce(x),
                                            nn.all_gather(x, 0)), xs[0], world)
    for r in range(world):
        (tmp_path / f"in{r}").mkdir()
        np.save(tmp_path / f"in{r}" / "x.npy", xs[r])
    env = child_env(NRTPY_EMU_INSTANCE="trn1.32xlarge",
                    NRTPY_EMU_NAMESPACE=machine_name("launch"),
                    NEURON_RT_ROOT_COMM_ID=None, NEURON_RT_EXEC_TIMEOUT="20")
    proc = subprocess.run(
        [sys.executable, "-m", "nrtpy", "run", str(neff), "--ranks",
         str(world), "--inputs", str(tmp_path / "in{rank}"), "--output-dir",
         str(tmp_path / "out"), "--benchmark", "5"],
        env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for r in range(world):
        assert f"[rank {r}] ok in" in proc.stdout
        assert "benchmark 5 iterations" in proc.stdout
        got = np.load(tmp_path / "out" / f"rank{r}" / "output_0.npy")
        np.testing.assert_array_equal(got, xs[0] + xs[1])
        got = np.load(tmp_path / "out" / f"rank{r}" / "output_1.npy")
        np.testing.assert_array_equal(got, np.concatenate(xs, 0))


def test_launcher_stops_when_a_rank_fails(tmp_path):
    """The NEFF gathers from 4 ranks: launched as 2, every rank's load
    fails and the launcher says so (nothing waits for the timeout)."""
    x = np.zeros((2,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_gather(x, 0), x, 4)
    env = child_env(NRTPY_EMU_INSTANCE="trn1.32xlarge",
                    NRTPY_EMU_NAMESPACE=machine_name("launch"),
                    NEURON_RT_ROOT_COMM_ID=None, NEURON_RT_EXEC_TIMEOUT="600")
    # (bounded by a fifth of the timeout: the start of 3 Pythons on a
    # loaded machine fits, a wait for the timeout does not)
    proc = subprocess.run(
        [sys.executable, "-m", "nrtpy", "run", str(neff), "--ranks", "2",
         "--output-dir", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=600 / 5)
    assert proc.returncode == 1
    assert "shapes imply groups of 4 ranks" in proc.stdout
    assert "failed" in proc.stderr


@pytest.mark.parametrize("op, fn", [("max", np.maximum), ("min", np.minimum)])
def test_max_min_of_signed_zeros_and_nan_are_numpys(machine, tmp_path, op, fn):
    # The ranks' operands combined in group order by np.maximum's rule:
    # of +0 and -0 the first, NaN wins (the kernels' one rule, kernel.h).
    a = np.array([0.0, -0.0, np.nan, 1.0, -0.0], np.float32)
    b = np.array([-0.0, 0.0, 2.0, np.nan, -0.0], np.float32)
    path = compile_for(tmp_path, lambda x: nn.all_reduce(x, op=op), a, 2)
    results = run_ranks(load(path, 2), [a, b])
    want = fn(a, b)
    for r in range(2):
        got = results[r][0]
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want)), (r, got, want)
