"""fork(): the child's copy of the parent's runtime is unusable, names fork,
and gives way to a runtime of the child's own after nrtpy.reset(); the
parent is unaffected.

Each scenario runs in a subprocess with a timeout (a hang fails, it never
blocks pytest), on a trn1.32xlarge whose cores 0-1 the parent holds and
2-3 the child claims.  The forked children arm alarm() too, so a hung
grandchild cannot outlive the test.
"""

from __future__ import annotations

import os
import textwrap

import pytest

from support import run_python

TIMEOUT = 180

pytestmark = pytest.mark.usefixtures("fresh_runtime")

# Shared by the scenarios: models, and the checks of an inherited object.
PRELUDE = textwrap.dedent(
    """
    import json, os, signal, subprocess, sys, tempfile, threading, time
    from pathlib import Path
    import numpy as np
    import nrtpy, nrtpy.neff
    from nrtpy import (NrtError, NrtpyError, NrtpyModel, NrtpyTensor,
                       SystemTraceSession)
    from nrtpy.neff import _container

    TMP = Path(tempfile.mkdtemp())
    # (1024: the 4000 products of slow_model take tens of seconds, well past
    # NEURON_RT_EXEC_TIMEOUT on any machine; 512 took under 4 s on a Zen 5)
    SIZE = 1024

    def add_model():
        path = nrtpy.neff.compile(lambda a, b: a + b, np.ones(4, np.float32),
                                  np.ones(4, np.float32), path=TMP / "add.neff",
                                  name="add")
        return NrtpyModel.load_from_neff(path)

    def run_add(model):
        a = np.arange(4, dtype=np.float32)
        b = np.full(4, 10, np.float32)
        ins = {n: NrtpyTensor.from_numpy(v, name=n)
               for n, v in zip(model.input_tensors_info, (a, b))}
        (out,) = model(inputs=ins).values()
        assert out.numpy().tolist() == [10.0, 11.0, 12.0, 13.0], out.numpy()

    def slow_model():
        # Matmuls ping-ponging between two outputs: seconds, no scratch.
        shape = [SIZE, SIZE]
        io = {"x": "input", "a": "output", "b": "output"}
        buffers = {k: {"kind": v, "dtype": "float32", "shape": shape}
                   for k, v in io.items()}
        var = {k: {"type": v, "size": SIZE * SIZE * 4, "shape": shape,
                   "dtype": "float32"} for k, v in io.items()}
        ops = [{"op": "matmul", "in": ["x", "x"], "out": "a"}]
        for i in range(1, 4000):
            src, dst = ("a", "b") if i % 2 else ("b", "a")
            ops.append({"op": "matmul", "in": [src, "x"], "out": dst})
        files = {
            "sg00/def.json": json.dumps(
                {"var": var, "emulator_program": "program.json"}).encode(),
            "sg00/program.json": json.dumps(
                {"format": "nrtpy-emulator-program", "version": 1,
                 "buffers": buffers, "ops": ops}).encode(),
        }
        path = _container.write(TMP / "slow.neff", files, name="slow")
        return NrtpyModel.load_from_neff(path)

    def expect_fork_error(fn, parent):
        try:
            fn()
        except NrtpyError as e:
            text = str(e)
            assert "forked" in text and f"process {parent}" in text, text
            assert "nrtpy.reset()" in text, text
        else:
            raise AssertionError(f"{fn} did not raise")

    def traced_add(session, model):
        run_add(model)
        events = json.loads(session.fetch_events_json())["events"]
        assert any(e["event_type"] == "nrt_execute"
                   and e["data"].get("model_name") == "add"
                   for e in events), events

    def check_child(parent, tensor, model, session):
        # Everything of the parent's runtime refuses, naming fork.
        expect_fork_error(session.fetch_events_json, parent)
        expect_fork_error(tensor.numpy, parent)
        expect_fork_error(lambda: tensor.write_from_numpy(
            np.zeros(4, np.float32)), parent)
        expect_fork_error(lambda: model(inputs=dict(
            zip(model.input_tensors_info, (tensor, tensor)))), parent)
        # Nothing starts a new runtime behind the old objects' back.
        expect_fork_error(nrtpy.get_nrtpy_singleton, parent)
        expect_fork_error(lambda: NrtpyTensor.from_numpy(np.ones(2)), parent)
        # After reset(), a runtime of our own on free cores.
        nrtpy.reset()
        nrtpy.configure([2, 3])
        nrtpy.get_nrtpy_singleton()
        with SystemTraceSession(0) as own:
            traced_add(own, add_model())
        assert nrtpy.get_nrtpy_singleton().get_visible_neuron_core_count() == 2
        expect_fork_error(tensor.numpy, parent)
        # The parent's cores stay the parent's, under its PID.
        probe = subprocess.run(
            [sys.executable, "-c", "import nrtpy; nrtpy.Nrtpy()"],
            env=dict(os.environ, NEURON_RT_VISIBLE_CORES="0"),
            capture_output=True, text=True, timeout=60)
        assert f"Held by PID {parent}" in probe.stderr, probe.stderr

    def parent_checks(tensor, model, session):
        assert tensor.numpy().tolist() == [1.0, 2.0, 3.0, 4.0]
        traced_add(session, model)
        probe = subprocess.run(
            [sys.executable, "-c", "import nrtpy; nrtpy.Nrtpy()"],
            env=dict(os.environ, NEURON_RT_VISIBLE_CORES="0"),
            capture_output=True, text=True, timeout=60)
        assert f"Held by PID {os.getpid()}" in probe.stderr, probe.stderr

    nrtpy.configure([0, 1])
    TENSOR = NrtpyTensor.from_numpy(np.array([1, 2, 3, 4], np.float32))
    ADD = add_model()
    SESSION = SystemTraceSession(0)
    traced_add(SESSION, ADD)
    """
)


def run_scenario(code: str, ns: str):
    proc = run_python(
        PRELUDE + textwrap.dedent(code),
        timeout=TIMEOUT,
        NRTPY_EMU_INSTANCE="trn1.32xlarge",
        NRTPY_EMU_HBM_PER_CORE="256MiB",
        NRTPY_EMU_NAMESPACE=f"{os.environ['NRTPY_EMU_NAMESPACE']}-{ns}",
        NEURON_RT_VISIBLE_CORES=None,
        NEURON_RT_EXEC_TIMEOUT="4",
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.stdout.splitlines()[-1] == "parent ok", proc.stdout


def test_os_fork_while_another_thread_executes():
    run_scenario(
        """
        slow = slow_model()
        x = NrtpyTensor.from_numpy(np.full((SIZE, SIZE), 1 / SIZE, np.float32))
        result = {}
        started = threading.Event()

        def execute():
            started.set()
            try:
                slow(inputs={"x": x})
            except NrtError as e:
                result["status"] = e.status_name

        thread = threading.Thread(target=execute)
        thread.start()
        started.wait()
        time.sleep(0.3)  # well inside the execution (core 0 is busy)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            signal.alarm(120)
            try:
                check_child(parent, TENSOR, ADD, SESSION)
            except BaseException:
                import traceback
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        thread.join()
        assert result == {"status": "NRT_TIMEOUT"}, result
        parent_checks(TENSOR, ADD, SESSION)
        print("parent ok")
        """,
        "osfork",
    )


def test_multiprocessing_fork_start_method():
    run_scenario(
        """
        import multiprocessing

        def child(parent, queue):
            signal.alarm(120)
            try:
                check_child(parent, TENSOR, ADD, SESSION)
                queue.put("child ok")
            except BaseException as e:
                queue.put(f"child failed: {e!r}")

        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        proc = ctx.Process(target=child, args=(os.getpid(), queue))
        proc.start()
        print(queue.get(timeout=150))
        proc.join(timeout=60)
        assert proc.exitcode == 0, proc.exitcode
        parent_checks(TENSOR, ADD, SESSION)
        print("parent ok")
        """,
        "mp",
    )


def test_fork_without_a_runtime_starts_one_normally():
    # Forked before any runtime started: nothing is inherited, nothing
    # refused, and the child's first use starts its runtime.
    proc = run_python(
        textwrap.dedent(
            """
            import os
            import numpy as np
            import nrtpy
            from nrtpy import NrtpyTensor
            pid = os.fork()
            if pid == 0:
                t = NrtpyTensor.from_numpy(np.arange(3, dtype=np.float32))
                os._exit(0 if t.numpy().tolist() == [0.0, 1.0, 2.0] else 1)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            print("ok")
            """
        ),
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr
