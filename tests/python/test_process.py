"""Behaviour across processes: interpreter exit, core ownership, library
choice, the command line, and C programs built against the emulator."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import nrtpy
from nrtpy import NrtError
from nrtpy import _singleton
from support import child_env, run_python

TIMEOUT = 60

# Every test here starts with this process holding no cores.
pytestmark = pytest.mark.usefixtures("fresh_runtime")


def check_ok(proc, stdout=None):
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.stderr == ""
    if stdout is not None:
        assert proc.stdout == stdout


# ---------------------------------------------------------- interpreter exit


def test_exit_with_live_tensors():
    code = textwrap.dedent(
        """
        import numpy as np
        import nrtpy
        from nrtpy import NrtpyTensor
        tensors = [NrtpyTensor.from_numpy(np.full(256, i, np.float32), name=f"t{i}")
                   for i in range(128)]
        rt = nrtpy.get_nrtpy_singleton()
        parent = rt.allocate_tensor(1024)
        view = rt.slice_from_tensor(parent, 512, 256)
        del parent
        assert tensors[77].numpy()[0] == 77
        print("done")
        """
    )
    check_ok(run_python(code, timeout=TIMEOUT), "done\n")


def test_exit_with_tensors_in_cycles_and_standalone_runtime():
    code = textwrap.dedent(
        """
        import numpy as np
        from nrtpy import Nrtpy, NrtpyTensor

        class Node:
            pass

        rt = Nrtpy()  # not the singleton: atexit does not close it
        a, b = Node(), Node()
        a.other, b.other = b, a
        a.t = rt.allocate_tensor(64)
        b.t = rt.slice_from_tensor(a.t, 32)
        keep = [rt.allocate_tensor(16) for _ in range(64)]
        print("done")
        """
    )
    check_ok(run_python(code, timeout=TIMEOUT), "done\n")


def test_exit_after_reset_with_old_tensors():
    code = textwrap.dedent(
        """
        import warnings
        import numpy as np
        import nrtpy
        from nrtpy import NrtpyTensor
        old = [NrtpyTensor.from_numpy(np.ones(8)) for _ in range(16)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nrtpy.reset()
        new = [NrtpyTensor.from_numpy(np.ones(8)) for _ in range(16)]
        print("done")
        """
    )
    check_ok(run_python(code, timeout=TIMEOUT), "done\n")


def test_exit_while_thread_copies():
    code = textwrap.dedent(
        """
        import threading
        import numpy as np
        import nrtpy
        from nrtpy import NrtpyTensor
        t = NrtpyTensor.from_numpy(np.zeros(1 << 22, np.float32))
        started = threading.Event()

        def loop():
            while True:
                try:
                    t.numpy()
                except nrtpy.NrtpyError:
                    return
                started.set()

        threading.Thread(target=loop, daemon=True).start()
        started.wait(30)
        print("done")
        """
    )
    check_ok(run_python(code, timeout=TIMEOUT), "done\n")


# ------------------------------------------------------------ core ownership


HOLDER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import nrtpy
    t = nrtpy.NrtpyTensor.from_numpy(np.arange(4))
    print("ready", flush=True)
    sys.stdin.readline()
    print("bye", flush=True)
    """
)


def start_holder(**env):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        env=child_env(**env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if line != "ready\n":
        proc.kill()
        out, err = proc.communicate(timeout=TIMEOUT)
        pytest.fail(f"holder did not start: {line!r}{out}\n{err}")
    return proc


def stop_holder(proc):
    out, err = proc.communicate("\n", timeout=TIMEOUT)
    assert proc.returncode == 0, err
    assert out == "bye\n"
    assert err == ""


def test_cores_owned_by_another_process():
    holder = start_holder()
    try:
        with pytest.raises(NrtError) as ei:
            nrtpy.get_nrtpy_singleton()
        e = ei.value
        assert (e.status_code, e.status_name) == (4, "NRT_RESOURCE")
        assert str(e).startswith("NRT Error NRT_RESOURCE(4): Failed to initialize NRT runtime")
        assert str(holder.pid) in str(e)
        assert _singleton._runtime is None
        # and again: a failed start leaves nothing half-initialised
        with pytest.raises(NrtError):
            nrtpy.NrtpyTensor.from_numpy([1, 2])
    finally:
        stop_holder(holder)
    t = nrtpy.NrtpyTensor.from_numpy([1, 2])
    assert t.numpy().tolist() == [1, 2]


def test_disjoint_cores_can_be_shared():
    holder = start_holder(NEURON_RT_VISIBLE_CORES="1")
    try:
        nrtpy.configure([0])
        t = nrtpy.NrtpyTensor.from_numpy([5, 6])
        assert t.numpy().tolist() == [5, 6]
        assert nrtpy.runtime_info()["visible_cores"] == 1
    finally:
        stop_holder(holder)


def test_reset_releases_cores():
    nrtpy.get_nrtpy_singleton()
    code = "import nrtpy; print(nrtpy.NrtpyTensor.from_numpy([3]).numpy().tolist())"
    assert run_python(code, timeout=TIMEOUT).returncode != 0
    with pytest.warns(UserWarning):
        nrtpy.reset()
    check_ok(run_python(code, timeout=TIMEOUT), "[3]\n")


def test_parent_holds_cores_child_refused():
    nrtpy.get_nrtpy_singleton()
    code = textwrap.dedent(
        """
        import nrtpy
        try:
            nrtpy.get_nrtpy_singleton()
        except nrtpy.NrtError as e:
            print(e.status_code, e.status_name)
            print(e)
        """
    )
    proc = run_python(code, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr  # (the emulator logs the refusal on stderr)
    first, message = proc.stdout.splitlines()[:2]
    assert first == "4 NRT_RESOURCE"
    assert str(os.getpid()) in message


def test_other_namespace_is_another_machine():
    nrtpy.get_nrtpy_singleton()
    code = textwrap.dedent(
        """
        import numpy as np
        import nrtpy
        t = nrtpy.NrtpyTensor.from_numpy(np.arange(3, dtype=np.int16), core_id=1)
        print(t.numpy().tolist(), nrtpy.memory_stats(1).bytes_used)
        """
    )
    ns = f"{os.environ['NRTPY_EMU_NAMESPACE']}-other"
    proc = run_python(code, timeout=TIMEOUT, NRTPY_EMU_NAMESPACE=ns)
    check_ok(proc, "[0, 1, 2] 6\n")


def test_namespace_folder_goes_with_its_last_process(tmp_path):
    """A namespace's folder in the lock root stays while a process holds a
    core there and goes when the last one ends (nrtpy closes the runtime
    at exit); the root stays.  In a lock root of the test's own."""
    env = {"XDG_RUNTIME_DIR": str(tmp_path), "NRTPY_EMU_NAMESPACE": "last"}
    folder = tmp_path / "nrtpy-emu" / "last"
    start = "import nrtpy; nrtpy.get_nrtpy_singleton()"

    check_ok(run_python(start, timeout=TIMEOUT, **env))
    assert not folder.exists()
    assert folder.parent.is_dir()

    holder = subprocess.Popen(
        [sys.executable, "-c", start + "; print('up', flush=True); "
         "import sys; sys.stdin.read()"],
        env=child_env(NEURON_RT_VISIBLE_CORES="1", **env),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "up\n"
        check_ok(run_python(start, timeout=TIMEOUT,
                            NEURON_RT_VISIBLE_CORES="0", **env))
        # Our lock file went with us; the holder's keeps the folder.
        assert [p.name for p in (folder / "trn1.2xlarge").iterdir()] == \
            ["nc1.lock"]
    finally:
        holder.stdin.close()
        holder.wait(timeout=TIMEOUT)
    assert holder.returncode == 0
    assert not folder.exists()
    assert folder.parent.is_dir()


# ----------------------------------------------------------- library choice


INFO_AND_ROUND_TRIP = textwrap.dedent(
    """
    import json
    import numpy as np
    import nrtpy
    t = nrtpy.NrtpyTensor.from_numpy(np.arange(5, dtype=np.float32))
    assert t.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    print(json.dumps(nrtpy.runtime_info()))
    """
)


@pytest.mark.parametrize("choice", ["path", "emulator", "auto", ""])
def test_library_choice(choice):
    if choice in ("auto", "") and list(Path("/dev").glob("neuron[0-9]*")):
        pytest.skip("a Neuron device is present: auto picks the system libnrt")
    library = nrtpy.runtime_info()["library"]
    value = library if choice == "path" else choice
    proc = run_python(INFO_AND_ROUND_TRIP, timeout=TIMEOUT, NRTPY_LIBNRT=value)
    check_ok(proc)
    info = json.loads(proc.stdout)
    assert info["emulated"] is True
    assert os.path.realpath(info["library"]) == os.path.realpath(library)
    assert info["instance"] == "trn1.2xlarge"


def test_library_choice_bogus():
    proc = run_python("import nrtpy", timeout=TIMEOUT, NRTPY_LIBNRT="bogus")
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr
    assert "NRTPY_LIBNRT=bogus" in proc.stderr
    for word in ("'auto'", "'emulator'", "'system'", "path"):
        assert word in proc.stderr


def test_library_choice_missing_path(tmp_path):
    missing = tmp_path / "nowhere" / "libnrt.so.1"
    proc = run_python("import nrtpy", timeout=TIMEOUT, NRTPY_LIBNRT=str(missing))
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr
    assert "cannot load libnrt" in proc.stderr
    assert str(missing) in proc.stderr


def loaded_libc() -> str | None:
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if "/libc.so" in path or "/libc-" in path:
            return path
    return None


def test_library_choice_not_a_libnrt():
    libc = loaded_libc()
    if libc is None:
        pytest.skip("cannot find the C library's path")
    proc = run_python("import nrtpy", timeout=TIMEOUT, NRTPY_LIBNRT=libc)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr
    assert "does not export the required function nrt_init" in proc.stderr


def test_library_choice_system_without_runtime():
    # (asked in a child: this process already has the emulator's libnrt.so.1
    # loaded, which dlopen would match by its soname)
    probe = run_python("import ctypes; ctypes.CDLL('libnrt.so.1')", NRTPY_LIBNRT=None)
    if probe.returncode == 0 or Path("/opt/aws/neuron/lib/libnrt.so.1").exists():
        pytest.skip("a system libnrt.so.1 is installed")
    proc = run_python("import nrtpy", timeout=TIMEOUT, NRTPY_LIBNRT="system")
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr
    assert "NRTPY_LIBNRT=system" in proc.stderr


def test_instance_trn2():
    code = textwrap.dedent(
        """
        import json
        import nrtpy
        nrtpy.get_nrtpy_singleton()
        print(json.dumps(nrtpy.runtime_info()))
        """
    )
    proc = run_python(code, timeout=TIMEOUT, NRTPY_EMU_INSTANCE="trn2.48xlarge")
    check_ok(proc)
    info = json.loads(proc.stdout)
    assert info["total_cores"] == 64
    assert info["visible_cores"] == 64
    assert info["instance"] == "trn2.48xlarge"
    proc = run_python(
        code, timeout=TIMEOUT, NRTPY_EMU_INSTANCE="trn2.48xlarge", NEURON_LOGICAL_NC_CONFIG="1"
    )
    check_ok(proc)
    assert json.loads(proc.stdout)["total_cores"] == 128


# ------------------------------------------------------------ command line


def nrtpy_cli(*args, **env):
    return subprocess.run(
        [sys.executable, "-m", "nrtpy", *args],
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def test_cli_libdir_and_includedir():
    lib = nrtpy_cli("libdir")
    check_ok(lib)
    libdir = Path(lib.stdout.strip())
    assert libdir.is_absolute()
    assert (libdir / "libnrt.so.1").is_file()
    assert os.path.realpath(libdir / "libnrt.so.1") == os.path.realpath(
        nrtpy.runtime_info()["library"]
    )
    inc = nrtpy_cli("includedir")
    check_ok(inc)
    incdir = Path(inc.stdout.strip())
    for header in ("nrt.h", "nrt_status.h", "nrtemu.h"):
        assert (incdir / "nrt" / header).is_file()


def test_cli_info():
    proc = nrtpy_cli("info")
    check_ok(proc)
    info = json.loads(proc.stdout)
    assert info["emulated"] is True
    assert info["instance"] == "trn1.2xlarge"
    assert info["visible_cores"] == 2


def test_cli_without_a_libnrt(tmp_path):
    # The commands that only print paths and flags need no library; those
    # that use the runtime say in one line why there is none.
    missing = str(tmp_path / "nowhere" / "libnrt.so.1")
    for args in (["cflags"], ["cflags", "libs"], ["libdir"], ["prefix"]):
        proc = nrtpy_cli(*args, NRTPY_LIBNRT=missing)
        assert (proc.returncode, proc.stderr) == (0, ""), args
        assert proc.stdout == nrtpy_cli(*args).stdout
    proc = nrtpy_cli("info", NRTPY_LIBNRT=missing)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"python -m nrtpy info: nrtpy: cannot load libnrt "
                           f"(NRTPY_LIBNRT={missing}): {missing}: cannot open "
                           f"shared object file: No such file or directory\n")
    # Everyone else still fails at import, and names that need the library
    # are not offered half-working.
    proc = run_python("import nrtpy", timeout=TIMEOUT, NRTPY_LIBNRT=missing)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1].startswith("ImportError: nrtpy: cannot load libnrt")
    proc = run_python("import sys; sys.argv[0] = '-m'; import nrtpy, nrtpy._nrtpy as e\n"
                      "print(e.LIBNRT_ERROR is not None, hasattr(e, 'Nrtpy'), "
                      "'float32' in e.DTYPES)\n"
                      "try:\n    from nrtpy import NrtpyTensor\n"
                      "except ImportError as exc:\n    print(exc)",
                      timeout=TIMEOUT, NRTPY_LIBNRT=missing)
    check_ok(proc)
    lines = proc.stdout.splitlines()
    assert lines[0] == "True False True"
    assert lines[1].startswith("nrtpy: cannot load libnrt")


def test_cli_usage_errors():
    proc = nrtpy_cli()
    assert proc.returncode == 2
    assert "usage" in proc.stderr
    proc = nrtpy_cli("bogus")
    assert proc.returncode == 2


C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>

#include "nrt/nrt.h"

#define CHECK(call)                                                         \
    do {                                                                    \
        NRT_STATUS st_ = (call);                                            \
        if (st_ != NRT_SUCCESS) {                                           \
            printf("FAIL %s: %s\n", #call, nrt_get_status_as_str(st_));     \
            return 1;                                                       \
        }                                                                   \
    } while (0)

int main(void)
{
    unsigned char in[4096], out[4096];
    nrt_tensor_t *t = NULL, *s = NULL;
    uint32_t visible = 0;
    size_t i;

    for (i = 0; i < sizeof in; i++) {
        in[i] = (unsigned char)(i * 7 + 3);
    }
    CHECK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "test", "1.0"));
    CHECK(nrt_get_visible_nc_count(&visible));
    CHECK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, sizeof in, "c", &t));
    CHECK(nrt_tensor_write(t, in, 0, sizeof in));
    memset(out, 0, sizeof out);
    CHECK(nrt_tensor_read(t, out, 0, sizeof out));
    if (memcmp(in, out, sizeof in) != 0) {
        printf("FAIL data\n");
        return 1;
    }
    CHECK(nrt_tensor_allocate_slice(t, 100, 10, "s", &s));
    CHECK(nrt_tensor_read(s, out, 0, 10));
    if (memcmp(in + 100, out, 10) != 0) {
        printf("FAIL slice\n");
        return 1;
    }
    if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 0, "z", &s) != NRT_RESOURCE) {
        printf("FAIL zero-byte allocation accepted\n");
        return 1;
    }
    nrt_tensor_free(&s);
    nrt_tensor_free(&t);
    if (t != NULL) {
        printf("FAIL free\n");
        return 1;
    }
    nrt_close();
    printf("OK %u\n", visible);
    return 0;
}
"""


def test_c_program(tmp_path):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) on PATH")
    libdir = nrtpy_cli("libdir").stdout.strip()
    incdir = nrtpy_cli("includedir").stdout.strip()
    src = tmp_path / "app.c"
    src.write_text(C_PROGRAM)
    exe = tmp_path / "app"
    build = subprocess.run(
        [cc, "-std=c11", "-Wall", "-Werror", str(src), f"-I{incdir}", f"-L{libdir}",
         "-l:libnrt.so.1", f"-Wl,-rpath,{libdir}", "-o", str(exe)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert build.returncode == 0, build.stderr
    env = child_env()
    env.pop("LD_LIBRARY_PATH", None)
    run = subprocess.run(
        [str(exe)], env=env, capture_output=True, text=True, timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == "OK 2\n"
    assert run.stderr == ""
