"""python -m nrtpy run when the world cannot start: a world larger than the
instance, a rank that fails while the others wait in a collective, a rank
stopped with SIGSTOP, and inputs that are not .npy or .npz files.
(The launcher's working runs are in test_collectives.py.)"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import nrtpy.neff as nn
from support import child_env, namespace


def launcher_env(**env):
    return child_env(NRTPY_EMU_NAMESPACE=namespace(f"launcher-{uuid.uuid4().hex[:12]}"),
                     NEURON_RT_ROOT_COMM_ID=None, **env)


def launch(neff, ranks, *extra, timeout=120, **env):
    return subprocess.run(
        [sys.executable, "-m", "nrtpy", "run", str(neff), "--ranks",
         str(ranks), *extra], env=launcher_env(**env), capture_output=True,
        text=True, timeout=timeout)


def test_more_ranks_than_cores_is_refused_before_any_rank_starts(tmp_path):
    x = np.zeros((4,), np.float32)
    neff = nn.compile(lambda x: nn.all_reduce(x), x, path=tmp_path / "a.neff",
                      world_size=3)
    proc = launch(neff, 3, "--output-dir", str(tmp_path / "out"),
                  NRTPY_EMU_INSTANCE="trn1.2xlarge")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert ("--ranks 3 needs 3 NeuronCores, one per rank, but the emulated "
            "instance trn1.2xlarge has 2") in proc.stderr
    assert "NRTPY_EMU_INSTANCE" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_failing_rank_stops_the_ranks_waiting_for_it(tmp_path):
    """Rank 1's input file is missing: rank 1 fails at once, rank 0 waits
    for it in the all-reduce (for up to 600 s) and must be stopped."""
    x = np.ones((4,), np.float32)
    neff = nn.compile(lambda x: nn.all_reduce(x), x, path=tmp_path / "a.neff",
                      world_size=2)
    np.save(tmp_path / "in0.npy", x)
    start = time.monotonic()
    proc = launch(neff, 2, "--inputs", str(tmp_path / "in{rank}.npy"),
                  "--output-dir", str(tmp_path / "out"),
                  NRTPY_EMU_INSTANCE="trn1.2xlarge",
                  NEURON_RT_EXEC_TIMEOUT="600")
    took = time.monotonic() - start
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[rank 1] failed: FileNotFoundError" in proc.stdout
    assert "in1.npy" in proc.stdout
    # Stopped by the launcher, or (on a loaded machine, where both exits
    # can fall in one poll) failed on its own on losing its peer.
    assert ("rank(s) 1 failed; ended rank(s) 0 (still running)"
            in proc.stderr or "rank(s) 0, 1 failed" in proc.stderr), \
        proc.stderr
    assert took < 100, took  # not the 600 s timeout


RANK_SCRIPT = r"""
import os, signal, sys
import numpy as np
import nrtpy
from nrtpy import NrtpyModel, NrtpyTensor
r = int(sys.argv[2])
model = NrtpyModel.load_from_neff(sys.argv[1], core_id=0, cc_enabled=True,
                                  rank_id=r, world_size=2)
x = NrtpyTensor.from_numpy(np.full((4,), r + 1, np.float32), name="x")
out = model(inputs={"x": x})
assert list(out.values())[0].numpy().tolist() == [3.0] * 4
try:
    os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends
    print("SIGINT ignored")
except KeyboardInterrupt:
    print("KeyboardInterrupt")
"""


def test_ctrl_c_still_raises_after_collectives_over_libfabric(tmp_path):
    """Loading libfabric (Debian's pulls in libinfinipath) must leave the
    application's signal handlers as they were."""
    if not any(Path(d, "libfabric.so.1").exists() for d in
               ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                "/usr/lib64", "/usr/lib", "/usr/local/lib")):
        pytest.skip("libfabric1 (libfabric.so.1) is not installed")
    x = np.zeros((4,), np.float32)
    neff = nn.compile(lambda x: nn.all_reduce(x), x, path=tmp_path / "a.neff",
                      world_size=2)
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs, machine = [], namespace(f"ctrlc-{uuid.uuid4().hex[:12]}")
    for r in range(2):  # two processes of one machine: libfabric's shm
        env = child_env(NRTPY_EMU_INSTANCE="trn1.2xlarge",
                        NRTPY_EMU_NAMESPACE=machine,
                        NEURON_RT_ROOT_COMM_ID=f"127.0.0.1:{port}",
                        NEURON_RT_VISIBLE_CORES=str(r),
                        NRTPY_EMU_CC_TRANSPORT="libfabric",
                        NEURON_RT_EXEC_TIMEOUT="60")
        procs.append(subprocess.Popen(
            [sys.executable, str(script), str(neff), str(r)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=120)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out
        assert out.strip().endswith("KeyboardInterrupt"), out


def test_bad_command_lines_are_refused(tmp_path):
    x = np.zeros((4,), np.float32)
    neff = nn.compile(lambda x: x + 1, x, path=tmp_path / "a.neff")
    for args, says in ((["--benchmark", "-1"], "--benchmark must be 0 or more"),
                       (["--ranks", "0"], "--ranks must be at least 1")):
        proc = launch(neff, 1, *args, "--output-dir", str(tmp_path / "o"))
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert says in proc.stderr
    proc = launch(tmp_path / "missing.neff", 1)
    assert proc.returncode == 2 and "no NEFF file at" in proc.stderr


# Rank 1 of a launch stops itself (SIGSTOP) as the hook says: the hook is a
# sitecustomize.py, which every Python of the launch imports at start-up.
STOP_HOOK = r"""
import os, signal
if os.environ.get("NEURON_RT_VISIBLE_CORES") == "1":  # rank 1 (not launcher)
    WHEN = {when!r}
    if WHEN == "at start":
        os.kill(os.getpid(), signal.SIGSTOP)
    else:  # before its second execution, where rank 0 waits for it
        # (and it survives SIGTERM, so that only a SIGCONT is seen: it
        # goes on, late, into the collective that rank 0 gave up on)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        from nrtpy import NrtpyModel
        first_call = NrtpyModel.__call__
        calls = []

        def call(self, *args, **kwargs):
            calls.append(1)
            if len(calls) == 2:
                os.kill(os.getpid(), signal.SIGSTOP)
            return first_call(self, *args, **kwargs)

        NrtpyModel.__call__ = call
"""


def launch_with_rank_1_stopped(tmp_path, when, *extra):
    """A launch of 2 ranks of an all-reduce in which rank 1 stops itself
    (`when`: "at start", or "before its second execution"), and rank 0
    times out (2 s) waiting for it.  Returns the launcher's stdout, its
    stderr, its exit status, and the seconds from rank 0's failure to the
    launcher's end."""
    x = np.ones((4,), np.float32)
    neff = nn.compile(lambda x: nn.all_reduce(x), x, path=tmp_path / "a.neff",
                      world_size=2)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(STOP_HOOK.format(when=when))
    path = os.pathsep.join(filter(None, [str(hook),
                                         os.environ.get("PYTHONPATH")]))
    env = launcher_env(NRTPY_EMU_INSTANCE="trn1.2xlarge",
                       NEURON_RT_EXEC_TIMEOUT="2", PYTHONPATH=path)
    # (a session of its own: the launcher and its ranks, a stopped one
    # included, can all be killed if the launch outlives the test's limit)
    proc = subprocess.Popen(
        [sys.executable, "-m", "nrtpy", "run", str(neff), "--ranks", "2",
         "--output-dir", str(tmp_path / "out"), *extra], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    watchdog = threading.Timer(120, os.killpg, (proc.pid, signal.SIGKILL))
    watchdog.start()
    lines, failed_at = [], None
    try:
        for line in proc.stdout:
            lines.append(line)
            if failed_at is None and line.startswith("[rank 0] failed"):
                failed_at = time.monotonic()
        proc.wait()
        took = time.monotonic() - failed_at if failed_at else None
        return "".join(lines), proc.stderr.read(), proc.returncode, took
    finally:
        watchdog.cancel()
        if proc.returncode is None:  # (the launch, if this test broke off)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_a_stopped_rank_is_ended_at_once(tmp_path):
    """Rank 1 is stopped (SIGSTOP) before it joins: rank 0 times out, and
    the launcher ends rank 1 then, not after the 10 s it gives a rank that
    outlives SIGTERM (a stopped process holds SIGTERM until continued)."""
    out, err, rc, took = launch_with_rank_1_stopped(tmp_path, "at start")
    assert rc == 1, out + err
    assert "rank 1 did not join the rendezvous" in out, out
    assert ("rank(s) 0 failed; ended rank(s) 1 (still running; rank(s) 1 "
            "had been stopped, as by SIGSTOP)") in err, err
    assert took < 8, took  # (10 s and more when it waits for SIGKILL)


def test_a_rank_stopped_then_continued_is_named_truthfully(tmp_path):
    """Rank 1 stops before its second all-reduce; rank 0 gives up on it
    after 2 s and fails.  Ending rank 1, the launcher continues it (it
    ignores SIGTERM here): rank 1 reaches the all-reduce late and fails on
    rank 0's failure, which it must not state as its own verdict on itself
    ("rank 1: rank(s) 1 did not reach ..."); and, since it ended of itself,
    the launcher counts it among the ranks that failed, not the ones it
    ended."""
    out, err, rc, took = launch_with_rank_1_stopped(
        tmp_path, "before its second execution", "--benchmark", "1")
    assert rc == 1, out + err
    assert ("[rank 0] failed: NRT Error NRT_TIMEOUT(5): Failed to execute "
            "model: nrt_execute: rank 0: rank(s) 1 did not reach") in out, out
    assert ("[rank 1] failed: NRT Error NRT_TIMEOUT(5): Failed to execute "
            "model: nrt_execute: rank 1: the collective failed on rank 0: "
            "rank(s) 1 did not reach") in out, out
    assert "python -m nrtpy run: rank(s) 0, 1 failed\n" == err, err
    assert took < 8, took


def test_the_summary_names_ranks_by_how_they_ended():
    """The launcher's last line, from the ranks' exit statuses: a rank it
    signalled counts as ended by it only when its signal ended it before
    the rank said it failed (as a rank failing with its peer can, while it
    exits)."""
    from nrtpy._launch import _summary

    assert _summary([0, 0], {}, set()) == ""
    assert _summary([1, -15], {1: False}, set()) == (
        "rank(s) 0 failed; ended rank(s) 1 (still running)")
    assert _summary([1, -15], {1: False}, {1}) == "rank(s) 0, 1 failed"
    assert _summary([1, 1], {1: False}, {0, 1}) == "rank(s) 0, 1 failed"
    assert _summary([1, 0], {1: False}, set()) == "rank(s) 0 failed"
    assert _summary([1, -9, -15], {1: True, 2: False}, set()) == (
        "rank(s) 0 failed; ended rank(s) 1, 2 (still running; rank(s) 1 had "
        "been stopped, as by SIGSTOP; rank(s) 1 outlived SIGTERM by 10 s "
        "and were killed)")
    assert _summary([-11, -15], {1: False}, set()) == (
        "rank 0 was killed by SIGSEGV; ended rank(s) 1 (still running)")


@pytest.mark.parametrize("where, what", [
    ("fifo", "a FIFO"), ("in/x.npy", "a FIFO"), ("in/x.npy", "a folder")])
def test_inputs_that_are_not_regular_files_are_refused(tmp_path, where,
                                                       what):
    """--inputs naming a FIFO, or a folder whose x.npy (the model's input)
    is a FIFO or a folder: refused at once, naming it (an open of a FIFO
    would wait for a writer; a folder's entry that is there must not pass
    for a missing one, zeros)."""
    x = np.zeros((4,), np.float32)
    neff = nn.compile(lambda x: x + 1, x, path=tmp_path / "a.neff")
    bad = tmp_path / where
    bad.parent.mkdir(exist_ok=True)
    if what == "a FIFO":
        os.mkfifo(bad)
    else:
        bad.mkdir()
    try:
        proc = launch(neff, 1, "--inputs", str(tmp_path / where.split("/")[0]),
                      "--output-dir", str(tmp_path / "out"), timeout=60)
    finally:
        if what == "a FIFO":  # (a rank left waiting for a writer: EOF to it)
            try:
                os.close(os.open(bad, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == (f"[rank 0] failed: ValueError: {bad} is not a "
                           f"regular file (it is {what})\n"), proc.stdout
    assert proc.stderr == "python -m nrtpy run: rank(s) 0 failed\n"
    assert not (tmp_path / "out" / "rank0").exists()


def test_inputs_neither_npy_nor_npz_are_refused_by_what_they_are(tmp_path):
    """--inputs naming the NEFF: NumPy would say the file holds pickled
    data; the rank says it is neither a .npy nor an .npz.  An .npz keyed by
    input name still loads."""
    x = np.arange(4, dtype=np.float32)
    neff = nn.compile(lambda x: x + 1, x, path=tmp_path / "a.neff")
    proc = launch(neff, 1, "--inputs", str(neff), "--output-dir",
                  str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (f"[rank 0] failed: ValueError: {neff} is neither a .npy nor an "
            f".npz file (it starts with ") in proc.stdout, proc.stdout
    assert "pickle" not in proc.stdout
    np.savez(tmp_path / "in.npz", x=x)
    proc = launch(neff, 1, "--inputs", str(tmp_path / "in.npz"),
                  "--output-dir", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_array_equal(
        np.load(tmp_path / "out" / "rank0" / "output_0.npy"), x + 1)
