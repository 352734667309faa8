"""python -m nrtpy run when the world cannot start: a world larger than the
instance, and a rank that fails while the others wait in a collective.
(The launcher's working runs are in test_collectives.py.)"""

import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import nrtpy.neff as nn
from support import child_env, namespace


def launch(neff, ranks, *extra, **env):
    machine = namespace(f"launcher-{uuid.uuid4().hex[:12]}")
    env = child_env(NRTPY_EMU_NAMESPACE=machine,
                    NEURON_RT_ROOT_COMM_ID=None, **env)
    return subprocess.run(
        [sys.executable, "-m", "nrtpy", "run", str(neff), "--ranks",
         str(ranks), *extra], env=env, capture_output=True, text=True,
        timeout=120)


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
    assert ("rank(s) 1 failed; stopped rank(s) 0" in proc.stderr
            or "rank(s) 0, 1 failed" in proc.stderr), proc.stderr
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
