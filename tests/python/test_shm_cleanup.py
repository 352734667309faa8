"""Shared memory that ranks killed with SIGKILL leave in /dev/shm.

Each rank's endpoint of libfabric's shm provider is a 16 MiB segment in
/dev/shm that libfabric removes when the endpoint closes, which a rank
killed with SIGKILL never does.  The ranks that remain remove it when
their world ends (the survivor of a world whose rank was killed), and the
ranks of the next world at their rendezvous; a segment whose creator
lives is never removed.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import time

import numpy as np
import pytest

import nrtpy.neff as nn
from test_collectives import (NRT_EXEC_HW_ERR_COLLECTIVES, compile_for,
                              finish, launch, libfabric_missing, rank_inputs)

SHM = "/dev/shm"
FABRIC = {"NRTPY_EMU_CC_TRANSPORT": "libfabric", "FI_PROVIDER": None}


@pytest.fixture(autouse=True)
def needs_libfabric():
    if why := libfabric_missing():
        pytest.skip(why)


def owner(name: str) -> int | None:
    """The pid a /dev/shm name carries: its first field (split at '-' and
    ':') of digits alone (libfabric's "<pid>:<uid>:<index>", the runtime's
    "nrtemu-fi-<pid>-..." and "nrtemu-cc-<pid>-...")."""
    for field in re.split(r"[-:]", name):
        if field.isdigit():
            return int(field)
    return None


def segments(pids) -> list[str]:
    """The names in /dev/shm of the processes `pids`."""
    pids = set(pids)
    return sorted(n for n in os.listdir(SHM) if owner(n) in pids)


def wait_for(path, procs, limit=60.0):
    """Until `path` exists (a rank saved its outputs), while every one of
    `procs` runs."""
    end = time.monotonic() + limit
    while not path.exists():
        assert all(p.poll() is None for p in procs), finish(procs)
        assert time.monotonic() < end, f"no {path.name}"
        time.sleep(0.05)


def remove_left(procs):
    """Kill and reap `procs`, then remove what they left in /dev/shm (a
    failed test leaves nothing behind: their pids are gone)."""
    for p in procs:
        if p.poll() is None:
            p.kill()
        if p.stdout is not None and not p.stdout.closed:
            p.communicate()
        p.wait()
    for name in segments(p.pid for p in procs):
        try:
            os.unlink(os.path.join(SHM, name))
        except FileNotFoundError:
            pass


def test_survivor_removes_the_segment_of_a_killed_rank(tmp_path):
    """Rank 1 executes once and waits; SIGKILL ends it while rank 0's
    second execution waits for it.  Rank 0 fails, naming it, and removes
    the dead rank's segment, although that is still a zombie (reaped only
    after rank 0 ended); its own goes with its endpoint."""
    xs = rank_inputs(2, (1024,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 2)
    procs = launch(tmp_path, neff, xs, 2, machines=False, timeout="60",
                   executions=[2, 1], extra={**FABRIC, "RANK_LINGER": "60"})
    try:
        wait_for(tmp_path / "out1_0.npy", procs)
        victim = procs[1]
        assert segments([victim.pid]), os.listdir(SHM)
        victim.kill()
        ((rc0, out0),) = finish(procs[:1])
        assert rc0 == 3, out0
        assert f"NrtError {NRT_EXEC_HW_ERR_COLLECTIVES}" in out0, out0
        assert victim.wait(timeout=10) == -9
        assert segments(p.pid for p in procs) == []
    finally:
        remove_left(procs)


def dead_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_next_rendezvous_removes_the_segments_of_a_killed_world(tmp_path):
    """Both ranks of a world are killed with SIGKILL after an execution:
    nobody of that world is left to remove their segments, so the ranks of
    the next world remove them at their rendezvous; that world, ending
    normally, leaves nothing either.  Of three files named for a dead pid,
    the rendezvous removes the one of the runtime's form, but not one that
    a live process holds a lock on (its creator's lock, which a process of
    another pid namespace, whose pid looks dead, would hold), nor one of
    another form."""
    xs = rank_inputs(2, (1024,), np.float32)
    neff = compile_for(tmp_path, lambda x: nn.all_reduce(x), xs[0], 2)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    killed = launch(tmp_path / "a", neff, xs, 2, machines=False,
                    timeout="60", extra={**FABRIC, "RANK_LINGER": "60"})
    later: list[subprocess.Popen] = []
    pid = dead_pid()
    stale, locked, other = (f"nrtemu-fi-{pid}-{tail}"
                            for tail in ("1-2-0", "3-4-0", "5-6-x"))
    lock = None
    try:
        for i in range(2):
            wait_for(tmp_path / "a" / f"out{i}_0.npy", killed)
        for p in killed:  # (alive: no other rank may remove these yet)
            assert segments([p.pid]), os.listdir(SHM)
        for p in killed:
            p.kill()
            p.communicate()
        for name in (stale, locked, other):
            with open(os.path.join(SHM, name), "wb") as f:
                f.write(b"\0" * 4096)
        lock = os.open(os.path.join(SHM, locked), os.O_RDONLY)
        fcntl.flock(lock, fcntl.LOCK_SH)
        later = launch(tmp_path / "b", neff, xs, 2, machines=False,
                       timeout="60", extra=FABRIC)
        for rc, out in finish(later):
            assert rc == 0, out
        assert segments(p.pid for p in killed + later) == []
        assert segments([pid]) == sorted([locked, other])
    finally:
        if lock is not None:
            os.close(lock)
        remove_left(killed + later)
        for name in (stale, locked, other):
            try:
                os.unlink(os.path.join(SHM, name))
            except FileNotFoundError:
                pass
