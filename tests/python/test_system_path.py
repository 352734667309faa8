"""nrtpy over a libnrt that is not the emulator: the path that runs on hardware.

``tests/stub/stub_libnrt.c`` stands in for the Neuron runtime (its header
comment lists what it scripts).  The ``stub_libnrt`` fixture compiles it
once per session with the C compiler, into a directory of its own as
``libnrt.so.1``; building it here rather than in meson keeps it independent
of how nrtpy was installed.  The library is chosen when nrtpy is imported,
so every test runs nrtpy in a child process with ``NRTPY_LIBNRT`` naming the
stub, and reads the stub's call log (``STUB_NRT_LOG``) where the order of
calls matters.  Every run also checks that the log records no misuse
("VIOLATION": a call after nrt_close, a stale handle, a tensor freed under
its slices).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import nrtpy
import nrtpy.neff
from support import run_python

TIMEOUT = 60
ROOT = Path(__file__).resolve().parents[2]
STUB_SOURCE = ROOT / "tests" / "stub" / "stub_libnrt.c"
STUB_VERSION = "2.99.7.0"
STUB_VERSION_DETAIL = "nrtpy test stub"
SYSTEM_LIBNRT = Path("/opt/aws/neuron/lib/libnrt.so.1")

# Every test here starts with this process holding no cores.
pytestmark = pytest.mark.usefixtures("fresh_runtime")

PRELUDE = """\
import gc
import json
import os
import warnings

import ml_dtypes
import numpy as np

import nrtpy
from nrtpy import NrtError, NrtpyError, NrtpyModel, NrtpyTensor


def failure(fn):
    try:
        fn()
    except (NrtError, NrtpyError) as e:
        return {"type": type(e).__name__, "message": str(e),
                "code": getattr(e, "status_code", None),
                "name": getattr(e, "status_name", None)}
    return None

"""


@pytest.fixture(scope="session")
def stub_libnrt(tmp_path_factory) -> Path:
    """The stub, built from source as <dir>/libnrt.so.1."""
    cc = os.environ.get("CC") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) on PATH")
    out = tmp_path_factory.mktemp("stub_libnrt") / "libnrt.so.1"
    build = subprocess.run(
        [*cc.split(), "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1",
         "-fPIC", "-shared", "-Wl,-soname,libnrt.so.1",
         f"-I{ROOT / 'include'}", str(STUB_SOURCE), "-o", str(out),
         "-lpthread"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert build.returncode == 0, build.stderr
    return out


@dataclass
class StubRun:
    proc: subprocess.CompletedProcess
    calls: list[str]  # the stub's log: one line per libnrt call

    def result(self):
        """The JSON the child printed last."""
        assert self.proc.returncode == 0, self.describe()
        return json.loads(self.proc.stdout.splitlines()[-1])

    def describe(self) -> str:
        return (f"rc={self.proc.returncode}\nstdout:\n{self.proc.stdout}\n"
                f"stderr:\n{self.proc.stderr}")

    def count(self, function: str) -> int:
        """Calls of ``function`` (its failures add a "<function> -> <status>"
        line, not counted)."""
        return sum(1 for c in self.calls
                   if c.split()[0] == function and " -> " not in c)


def run_on_stub(stub: Path, tmp_path: Path, code: str,
                **env: str | None) -> StubRun:
    """Run PRELUDE + code in a child whose nrtpy loads the stub."""
    log = tmp_path / "calls.log"
    log.unlink(missing_ok=True)
    env.setdefault("NRTPY_LIBNRT", str(stub))
    proc = run_python(PRELUDE + textwrap.dedent(code), timeout=TIMEOUT,
                      STUB_NRT_LOG=str(log), **env)
    calls = log.read_text().splitlines() if log.exists() else []
    run = StubRun(proc, calls)
    assert not [c for c in calls if c.startswith("VIOLATION")], run.describe() + "\n".join(calls)
    return run


@pytest.fixture
def opaque_neff(tmp_path) -> Path:
    """A model file for the stub, which never reads the NEFF bytes (its
    models' I/O comes from STUB_NRT_MODEL)."""
    path = tmp_path / "opaque.neff"
    path.write_bytes(b"stub model\n")
    return path


# ------------------------------------------------------------- the stub


def test_stub_reports_misuse(stub_libnrt, tmp_path):
    # The VIOLATION check of every run is only worth something if misuse
    # is caught: a tensor freed after nrt_close, by plain ctypes.
    code = f"""
        import ctypes
        lib = ctypes.CDLL({str(stub_libnrt)!r})
        t = ctypes.c_void_p()
        assert lib.nrt_init(1, b"", b"") == 0
        assert lib.nrt_tensor_allocate(0, 0, 16, b"x", ctypes.byref(t)) == 0
        lib.nrt_close()
        lib.nrt_tensor_free(ctypes.byref(t))
    """
    log = tmp_path / "calls.log"
    proc = run_python(textwrap.dedent(code), timeout=TIMEOUT, STUB_NRT_LOG=str(log))
    assert proc.returncode == 0, proc.stderr
    assert "VIOLATION nrt_tensor_free: called after nrt_close" in log.read_text()
    assert "VIOLATION nrt_tensor_free: called after nrt_close" in proc.stderr


# ------------------------------------------------------- runtime and tensors


def test_runtime_info(stub_libnrt, tmp_path):
    run = run_on_stub(stub_libnrt, tmp_path, """
        print(json.dumps(nrtpy.runtime_info()))
    """, STUB_NRT_CORES="3")
    info = run.result()
    assert os.path.realpath(info.pop("library")) == os.path.realpath(stub_libnrt)
    # Host RAM is the host's, whatever the libnrt.
    assert info.pop("host_memory") >= info.pop("host_memory_available") > 0
    assert info == {
        "hbm_per_core": None,
        "emulated": False,
        "version": STUB_VERSION,
        "version_detail": STUB_VERSION_DETAIL,
        "instance": None,
        "total_cores": 3,
        "visible_cores": 3,
    }
    # Describing the library starts no runtime.
    assert run.count("nrt_init") == 0


def test_runtime_info_without_version(stub_libnrt, tmp_path):
    run = run_on_stub(stub_libnrt, tmp_path, """
        print(json.dumps(nrtpy.runtime_info()))
    """, STUB_NRT_FAIL_GET_VERSION="NRT_FAILURE")
    info = run.result()
    assert info["version"] is None
    assert info["version_detail"] == ""
    assert info["emulated"] is False


def test_tensor_round_trips(stub_libnrt, tmp_path):
    run = run_on_stub(stub_libnrt, tmp_path, """
        import ctypes
        out = {}
        for dtype in ("float32", "int64", "uint8", "bfloat16", "float8_e4m3fn",
                      "float8_e5m2", "float16"):
            a = (np.arange(24) % 7 - 3).astype(getattr(ml_dtypes, dtype, dtype))
            a = a.reshape(2, 3, 4)
            t = NrtpyTensor.from_numpy(a, name=dtype)
            back = t.numpy()
            out[dtype] = [str(back.dtype), list(back.shape),
                          back.tobytes() == a.tobytes()]
        # The tensor's memory is the runtime's own: its VA holds the bytes.
        a = np.arange(16, dtype=np.int32)
        t = NrtpyTensor.from_numpy(a, core_id=1)
        out["va"] = ctypes.string_at(t.tensor_ref.va, a.nbytes) == a.tobytes()
        out["core1_used"] = nrtpy.memory_stats(1).bytes_used
        # Partial reads and writes through the runtime object, and a slice.
        rt = nrtpy.get_nrtpy_singleton()
        rt.tensor_write(t.tensor_ref, bytes(range(8)), 8)
        out["read"] = list(rt.tensor_read(t.tensor_ref, 4, 12))
        s = rt.slice_from_tensor(t.tensor_ref, 8, 8, "s")
        out["slice"] = list(rt.tensor_read(s))
        print(json.dumps(out))
    """)
    out = run.result()
    for dtype in ("float32", "int64", "uint8", "bfloat16", "float8_e4m3fn",
                  "float8_e5m2", "float16"):
        assert out[dtype] == [dtype, [2, 3, 4], True]
    assert out["va"] is True
    assert out["core1_used"] == 64
    assert out["read"] == [1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7]
    assert out["slice"] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert run.count("nrt_tensor_allocate_slice") == 1


def test_memory_limit_and_cores(stub_libnrt, tmp_path):
    run = run_on_stub(stub_libnrt, tmp_path, """
        rt = nrtpy.get_nrtpy_singleton()
        half = 1 << 19
        a = rt.allocate_tensor(half, 3, "a")
        b = rt.allocate_tensor(half, 3, "b")
        full = tuple(nrtpy.memory_stats(3))
        c = failure(lambda: rt.allocate_tensor(1, 3, "c"))
        del a
        print(json.dumps({"full": full, "c": c,
                          "after_free": tuple(nrtpy.memory_stats(3)),
                          "cores": nrtpy.runtime_info()["visible_cores"]}))
    """, STUB_NRT_CORES="4", STUB_NRT_HBM_BYTES=str(1 << 20))
    out = run.result()
    assert out["full"] == [1 << 20, 1 << 20]
    assert out["c"] == {"type": "NrtError", "code": 4, "name": "NRT_RESOURCE",
                        "message": "NRT Error NRT_RESOURCE(4): Failed to allocate tensor"}
    assert out["after_free"] == [1 << 19, 1 << 20]
    assert out["cores"] == 4
    assert "ERROR  NRT:nrt_tensor_allocate Failed to allocate 1 bytes on nc 3" \
        in run.proc.stderr


# ------------------------------------------------------------------ errors

# (variable, status as scripted, code, name, statement, action in the message)
FAILURES = [
    ("INIT", "NRT_RESOURCE", 4, "NRT_RESOURCE",
     "(nrtpy.reset(), nrtpy.get_nrtpy_singleton())", "Failed to initialize NRT runtime"),
    ("GET_VISIBLE_NC_COUNT", "NRT_FAILURE", 1, "NRT_FAILURE",
     "nrtpy.Nrtpy.get_visible_neuron_core_count()", "Failed to get visible NC count"),
    ("TENSOR_ALLOCATE", "NRT_RESOURCE", 4, "NRT_RESOURCE",
     "NrtpyTensor.from_numpy(np.ones(3, np.float32))", "Failed to allocate tensor"),
    ("TENSOR_WRITE", "NRT_TIMEOUT", 5, "NRT_TIMEOUT",
     "t.write_from_numpy(np.ones(4, np.float32))", "Failed to write tensor"),
    ("TENSOR_READ", "6", 6, "NRT_HW_ERROR", "t.numpy()", "Failed to read tensor"),
    ("TENSOR_ALLOCATE_SLICE", "NRT_INVALID", 2, "NRT_INVALID",
     "rt.slice_from_tensor(t.tensor_ref, 0, 4)", "Failed to allocate tensor slice"),
    ("GET_VNC_MEMORY_STATS", "NRT_FAILURE", 1, "NRT_FAILURE",
     "nrtpy.memory_stats(0)", "Failed to get memory stats"),
    ("LOAD", "NRT_UNSUPPORTED_NEFF_VERSION", 10, "NRT_UNSUPPORTED_NEFF_VERSION",
     "rt.load_model(NEFF)", "Failed to load model"),
    ("GET_MODEL_TENSOR_INFO", "NRT_INVALID_HANDLE", 3, "NRT_INVALID_HANDLE",
     "rt.get_tensor_info(model)", "Failed to get tensor info"),
    ("FREE_MODEL_TENSOR_INFO", "NRT_FAILURE", 1, "NRT_FAILURE",
     "rt.get_tensor_info(model)", "Failed to free tensor info"),
    ("ALLOCATE_TENSOR_SET", "NRT_RESOURCE", 4, "NRT_RESOURCE",
     "rt.execute(model, ins, outs)", "Failed to add tensor to set"),
    ("EXECUTE", "NRT_EXEC_COMPLETED_WITH_ERR", 1004, "NRT_EXEC_COMPLETED_WITH_ERR",
     "rt.execute(model, ins, outs)", "Failed to execute model"),
    ("EXECUTE", "1206", 1206, "NRT_NETWORK_PROXY_FAILURE",
     "rt.execute(model, ins, outs)", "Failed to execute model"),
]


@pytest.mark.parametrize("var,script,code,name,statement,action", FAILURES,
                         ids=[f"{f[0]}={f[1]}" for f in FAILURES])
def test_injected_failure(stub_libnrt, tmp_path, opaque_neff, var, script,
                          code, name, statement, action):
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        NEFF = {str(opaque_neff)!r}
        rt = nrtpy.get_nrtpy_singleton()
        t = NrtpyTensor.from_numpy(np.arange(4, dtype=np.float32))
        model = rt.load_model(NEFF)
        ins = {{"input": t}}
        outs = {{"output": NrtpyTensor.from_numpy(np.zeros(4, np.float32))}}
        os.environ["STUB_NRT_FAIL_{var}"] = {script!r}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # reset()'s
            print(json.dumps(failure(lambda: {statement})))
    """)
    # The real runtime has no last-error text: the message is the status
    # and the action, nothing the emulator would add.
    assert run.result() == {"type": "NrtError", "code": code, "name": name,
                            "message": f"NRT Error {name}({code}): {action}"}
    function = "nrt_" + var.lower()
    assert f"ERROR  NRT:{function} injected failure (STUB_NRT_FAIL_{var}={script})" \
        in run.proc.stderr
    assert f"{function} -> {code}" in run.calls


def test_failed_execute_after_partial_tensor_set(stub_libnrt, tmp_path, opaque_neff):
    # The second add (the output set's) fails: the input set already built
    # must be destroyed, and nothing executes.
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        rt = nrtpy.get_nrtpy_singleton()
        model = rt.load_model({str(opaque_neff)!r})
        t = NrtpyTensor.from_numpy(np.arange(4, dtype=np.float32))
        o = NrtpyTensor.from_numpy(np.zeros(4, np.float32))
        print(json.dumps(failure(lambda: rt.execute(model, {{"input": t}},
                                                    {{"output": o}}))))
    """, STUB_NRT_FAIL_ADD_TENSOR_TO_TENSOR_SET="NRT_RESOURCE@2")
    assert run.result()["message"] == "NRT Error NRT_RESOURCE(4): Failed to add tensor to set"
    assert run.count("nrt_add_tensor_to_tensor_set") == 2
    assert run.count("nrt_allocate_tensor_set") == 2
    assert run.count("nrt_destroy_tensor_set") == 2
    assert run.count("nrt_execute") == 0


def test_runtime_rejects_io_without_detail(stub_libnrt, tmp_path, opaque_neff):
    # A binding the runtime itself refuses (the names do not match): the
    # reason is in the runtime's log, not in the exception.
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        rt = nrtpy.get_nrtpy_singleton()
        model = rt.load_model({str(opaque_neff)!r})
        t = NrtpyTensor.from_numpy(np.arange(4, dtype=np.float32))
        print(json.dumps(failure(lambda: rt.execute(model, {{"wrong": t}},
                                                    {{"output": t}}))))
    """)
    assert run.result() == {"type": "NrtError", "code": 2, "name": "NRT_INVALID",
                            "message": "NRT Error NRT_INVALID(2): Failed to execute model"}
    assert "ERROR  NRT:nrt_execute Missing tensor 'input'" in run.proc.stderr


# ------------------------------------------------------------------ models

FP8_MODEL = "in:a:float8_e4m3fn:2x3;out:output_0:float8_e4m3fn:6"


def test_fp8_reported_as_int8(stub_libnrt, tmp_path, opaque_neff):
    # The runtime reports the fp8 tensors as int8: fp8 arrays are accepted
    # where it says int8, other dtypes are not.
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        rt = nrtpy.get_nrtpy_singleton()
        raw = rt.get_tensor_info(rt.load_model({str(opaque_neff)!r}))
        model = NrtpyModel.load_from_neff({str(opaque_neff)!r})
        x = np.array([[0.5, -1, 2], [0.25, 3, -0.125]], ml_dtypes.float8_e4m3fn)
        out = model(inputs={{"a": NrtpyTensor.from_numpy(x)}})["output_0"].numpy()
        u8 = NrtpyTensor.from_numpy(np.zeros((2, 3), np.uint8))
        try:
            model(inputs={{"a": u8}})
            refused = None
        except ValueError as e:
            refused = str(e)
        print(json.dumps({{
            "raw": [(m.dtype, m.shape, m.size) for m in
                    list(raw.inputs.values()) + list(raw.outputs.values())],
            "in": model.input_tensors_info["a"].dtype,
            "out": model.output_tensors_info["output_0"].dtype,
            "result": [str(out.dtype), list(out.shape), out.tobytes() == x.tobytes()],
            "refused": refused,
        }}))
    """, STUB_NRT_MODEL=FP8_MODEL)
    out = run.result()
    assert out["raw"] == [["int8", [2, 3], 6], ["int8", [6], 6]]
    assert out["in"] == out["out"] == "int8"
    assert out["result"] == ["int8", [6], True]
    assert out["refused"].startswith("Input a: expected dtype int8, got uint8.")


def test_fp8_exact_from_the_neff_on_the_runtime(stub_libnrt, tmp_path):
    # The emulator names each fp8 variant (nrtemu_get_model_tensor_dtype);
    # the real runtime says int8, so nrtpy reads the NEFF's own dtype (with
    # the emulator's reader) and checks arrays against it all the same.
    x = np.zeros((2, 3), ml_dtypes.float8_e4m3fn)
    neff = nrtpy.neff.compile(lambda a: a.reshape(6), x, path=tmp_path / "fp8.neff")
    emulated = nrtpy.NrtpyModel.load_from_neff(neff)
    assert emulated.input_tensors_info["a"].dtype == "float8_e4m3fn"
    assert emulated.output_tensors_info["output_0"].dtype == "float8_e4m3fn"
    del emulated
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        model = NrtpyModel.load_from_neff({str(neff)!r})
        x = np.array([[0.5, -1, 2], [0.25, 3, -0.125]], ml_dtypes.float8_e4m3fn)
        out = model(inputs={{"a": NrtpyTensor.from_numpy(x)}})["output_0"].numpy()
        try:
            model(inputs={{"a": NrtpyTensor.from_numpy(x.astype(ml_dtypes.float8_e5m2))}})
            refused = None
        except ValueError as e:
            refused = str(e).split(".")[0]
        print(json.dumps({{
            "in": model.input_tensors_info["a"].dtype,
            "out": model.output_tensors_info["output_0"].dtype,
            "result": [str(out.dtype), out.tobytes() == x.tobytes()],
            "refused": refused,
        }}))
    """, STUB_NRT_MODEL=FP8_MODEL)
    assert run.result() == {
        "in": "float8_e4m3fn", "out": "float8_e4m3fn",
        "result": ["float8_e4m3fn", True],
        "refused": "Input a: expected dtype float8_e4m3fn, got float8_e5m2"}


def test_neff_inspect_beside_the_runtime(stub_libnrt, tmp_path):
    # Reading a NEFF needs the emulator's reader, which nrtpy opens beside
    # the runtime: it never calls the runtime, and sees the exact dtypes.
    x = np.zeros((2, 3), ml_dtypes.float8_e4m3fn)
    neff = nrtpy.neff.compile(lambda a: a.reshape(6), x, path=tmp_path / "fp8.neff")
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        import nrtpy.neff
        d = nrtpy.neff.inspect({str(neff)!r})
        print(json.dumps([nrtpy.runtime_info()["emulated"],
                          d["inputs"], d["outputs"]]))
    """)
    assert run.result() == [
        False,
        [{"name": "a", "size": 6, "shape": [2, 3], "dtype": "float8_e4m3fn"}],
        [{"name": "output_0", "size": 6, "shape": [6], "dtype": "float8_e4m3fn"}],
    ]
    assert run.count("nrt_init") == 0


def test_calls_the_runtime_lacks(stub_libnrt, tmp_path, opaque_neff):
    # No collectives and no system trace: only the calls needing them fail;
    # host benchmarks and traced executions still work.
    ntff = tmp_path / "run.ntff"
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        rt = nrtpy.get_nrtpy_singleton()
        model = NrtpyModel.load_from_neff({str(opaque_neff)!r})
        ins = {{"input": NrtpyTensor.from_numpy(np.arange(4, dtype=np.float32))}}
        out = {{}}
        out["cc"] = failure(lambda: rt.load_model({str(opaque_neff)!r}, cc_enabled=True))
        out["trace"] = failure(lambda: nrtpy.SystemTraceSession(0))
        out["device"] = failure(lambda: model.benchmark(ins, mode="device"))
        r = model.benchmark(ins, warmup_iter=1, benchmark_iter=3, mode="host")
        out["host"] = [r.iterations, r.mode, r.min_ms > 0]
        res = model(ins, save_trace=True, ntff_name={str(ntff)!r})
        out["traced"] = res["output"].numpy().tolist()
        print(json.dumps(out))
    """)
    out = run.result()
    lib = str(stub_libnrt)
    assert out["cc"] == {"type": "NrtpyError", "code": None, "name": None,
                         "message": f"Nrtpy Error: the loaded libnrt ({lib}) does "
                                    f"not provide nrt_load_collectives"}
    for key in ("trace", "device"):
        assert out[key]["message"] == (f"Nrtpy Error: the loaded libnrt ({lib}) does "
                                       f"not provide nrt_sys_trace_config_allocate")
    assert out["host"] == [3, "host", True]
    assert out["traced"] == [0.0, 1.0, 2.0, 3.0]
    assert ntff.read_text() == "stub_libnrt profile\n"
    assert run.count("nrt_execute") == 5
    assert run.count("nrt_load") == 1


def test_failed_profile_warns(stub_libnrt, tmp_path, opaque_neff):
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        model = NrtpyModel.load_from_neff({str(opaque_neff)!r})
        ins = {{"input": NrtpyTensor.from_numpy(np.arange(4, dtype=np.float32))}}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = model(ins, save_trace=True, ntff_name="t.ntff")
        print(json.dumps([[w.category.__name__, str(w.message)] for w in caught]
                         + [res["output"].numpy().tolist()]))
    """, STUB_NRT_FAIL_PROFILE_START="NRT_FAILURE")
    assert run.result() == [
        ["RuntimeWarning", "the trace t.ntff was not saved: profiling failed with "
                           "NRT_FAILURE(1)"],
        [0.0, 1.0, 2.0, 3.0],
    ]
    # The execution ran, and the profile was still stopped.
    assert run.count("nrt_execute") == 1
    assert run.count("nrt_profile_stop") == 1


def test_failed_tensor_info_unloads_the_model(stub_libnrt, tmp_path, opaque_neff):
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        err = failure(lambda: NrtpyModel.load_from_neff({str(opaque_neff)!r}))
        gc.collect()
        print(json.dumps(err))
    """, STUB_NRT_FAIL_GET_MODEL_TENSOR_INFO="NRT_FAILURE")
    assert run.result()["message"] == "NRT Error NRT_FAILURE(1): Failed to get tensor info"
    assert run.count("nrt_load") == run.count("nrt_unload") == 1


# --------------------------------------------------------------- lifetimes


def test_no_call_after_close(stub_libnrt, tmp_path, opaque_neff):
    # The real runtime releases everything at nrt_close: tensors and models
    # that outlive it are never passed to it again (the emulator, by
    # contrast, frees them later).  Slices keep their source alive.
    run = run_on_stub(stub_libnrt, tmp_path, f"""
        rt = nrtpy.get_nrtpy_singleton()
        parent = rt.allocate_tensor(16, 0, "parent")
        s = rt.slice_from_tensor(parent, 4, 8, "slice")
        rt.free_tensor(parent)
        print("--- slice dropped")
        del s
        keep = NrtpyTensor.from_numpy(np.arange(4, dtype=np.float32), name="keep")
        model = rt.load_model({str(opaque_neff)!r})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            nrtpy.reset()
        stale = [failure(keep.numpy)["type"], model.is_unloaded]
        del keep, model, parent, rt
        gc.collect()
        again = NrtpyTensor.from_numpy(np.ones(2, np.int8), name="again")
        print(json.dumps(stale + [again.numpy().tolist()]))
    """)
    assert run.result() == ["NrtpyError", True, [1, 1]]
    frees = [c for c in run.calls if c.startswith(("nrt_tensor_free", "nrt_unload",
                                                   "nrt_close", "nrt_init"))]
    assert frees == [
        "nrt_init 1 nrtpy 1.0",
        "nrt_tensor_free slice",
        "nrt_tensor_free parent",
        "nrt_close",
        "nrt_init 1 nrtpy 1.0",
        "nrt_close",  # at exit, with "again" still alive
    ]


def test_reset_while_threads_copy(stub_libnrt, tmp_path):
    # Reads in flight on other threads finish before nrt_close, and none
    # starts after it: the real runtime would have freed their memory.
    run = run_on_stub(stub_libnrt, tmp_path, """
        import threading
        import time
        tensors = [NrtpyTensor.from_numpy(np.arange(1 << 18, dtype=np.float32))
                   for _ in range(4)]
        ends = []
        start = threading.Barrier(len(tensors) + 1)
        def loop(t):
            start.wait()
            while True:
                try:
                    t.numpy()
                except NrtpyError as e:
                    ends.append(str(e))
                    return
        threads = [threading.Thread(target=loop, args=(t,)) for t in tensors]
        for th in threads:
            th.start()
        start.wait()
        time.sleep(0.2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            nrtpy.reset()
        for th in threads:
            th.join(30)
        print(json.dumps(sorted(set(ends)) + [len(ends)]))
    """)
    assert run.result() == [
        "Nrtpy Error: Unable to read from a freed tensor. Please check the "
        "lifetime of the tensor.",
        4,
    ]
    close = run.calls.index("nrt_close")
    assert run.count("nrt_tensor_read") >= 4
    assert not [c for c in run.calls[close:] if c.startswith("nrt_tensor_read")]


# ------------------------------------------------------------ library choice


def system_libnrt_installed() -> bool:
    # (asked in a child: this process has the emulator's libnrt.so.1
    # loaded, which dlopen would match by its soname)
    probe = run_python("import ctypes; ctypes.CDLL('libnrt.so.1')", NRTPY_LIBNRT=None)
    return probe.returncode == 0 or SYSTEM_LIBNRT.exists()


INFO = "print(json.dumps(nrtpy.runtime_info()))"


def test_system_found_by_the_loader(stub_libnrt, tmp_path):
    run = run_on_stub(stub_libnrt, tmp_path, INFO, NRTPY_LIBNRT="system",
                      LD_LIBRARY_PATH=str(stub_libnrt.parent))
    info = run.result()
    assert os.path.realpath(info["library"]) == os.path.realpath(stub_libnrt)
    assert info["emulated"] is False
    assert run.proc.stderr == ""


@pytest.fixture
def fake_device(tmp_path) -> str:
    """A device-node pattern that matches (NRTPY_NEURON_DEVICE_GLOB)."""
    (tmp_path / "neuron0").touch()
    return str(tmp_path / "neuron[0-9]*")


def test_auto_uses_the_system_library_with_a_device(stub_libnrt, tmp_path, fake_device):
    run = run_on_stub(stub_libnrt, tmp_path, INFO, NRTPY_LIBNRT="auto",
                      NRTPY_NEURON_DEVICE_GLOB=fake_device,
                      LD_LIBRARY_PATH=str(stub_libnrt.parent))
    info = run.result()
    assert os.path.realpath(info["library"]) == os.path.realpath(stub_libnrt)
    assert info["emulated"] is False
    assert run.proc.stderr == ""


def test_auto_warns_when_the_system_library_fails(stub_libnrt, tmp_path, fake_device):
    if system_libnrt_installed():
        pytest.skip("a system libnrt.so.1 is installed")
    broken_dir = tmp_path / "broken"
    broken_dir.mkdir()
    broken = broken_dir / "libnrt.so.1"
    broken.write_text("not a shared library\n" * 8)
    try:
        ctypes.CDLL(str(broken))
        pytest.fail("a text file loaded as a library")
    except OSError as e:
        dlerror = str(e)
    assert str(broken) in dlerror
    env = dict(NRTPY_LIBNRT=None, NRTPY_NEURON_DEVICE_GLOB=fake_device,
               LD_LIBRARY_PATH=str(broken_dir))
    run = run_on_stub(stub_libnrt, tmp_path, INFO, **env)
    info = run.result()
    assert info["emulated"] is True
    device = tmp_path / "neuron0"
    assert f"RuntimeWarning: nrtpy: a Neuron device exists ({device})" in run.proc.stderr
    assert dlerror in run.proc.stderr
    assert f"{SYSTEM_LIBNRT}: cannot open shared object file" in run.proc.stderr
    assert "using the emulator" in run.proc.stderr
    # An application that makes warnings errors stops at the import.
    proc = run_python("import nrtpy", timeout=TIMEOUT, PYTHONWARNINGS="error::RuntimeWarning",
                      **env)
    assert proc.returncode != 0
    assert dlerror in proc.stderr
    # Without a device node, auto is silent.
    run = run_on_stub(stub_libnrt, tmp_path, INFO, **dict(
        env, NRTPY_NEURON_DEVICE_GLOB=str(tmp_path / "nothing[0-9]*")))
    assert run.result()["emulated"] is True
    assert run.proc.stderr == ""
