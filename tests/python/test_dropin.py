"""The emulator as a drop-in libnrt for C and C++ clients: the flags and
prefix of ``python -m nrtpy``, a client written like the developer guide's
sample (load a NEFF, allocate I/O from the tensor info, leave inputs
zero-filled, execute, read outputs), and a CMake project that finds the
runtime through ``NEURON_ROOT``."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import nrtpy
import nrtpy.neff
from support import child_env, run_python

TIMEOUT = 120

HEADERS = ("nrt.h", "nrt_status.h", "nrt_experimental.h", "nrt_profile.h",
           "nrt_async_sendrecv.h", "ndebug_stream.h",
           "nrt_sys_trace.h", "nrt_version.h", "nrt_async.h")


def cli(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "nrtpy", *args], env=child_env(),
        capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout.strip()


def run_client(exe: Path, *args: str) -> subprocess.CompletedProcess:
    # An emulated machine of the client's own: this test process may hold
    # its machine's cores (a runtime an earlier test started), and a
    # client's nrt_init wants all of them.
    env = child_env(
        NRTPY_EMU_NAMESPACE=f"{os.environ['NRTPY_EMU_NAMESPACE']}-client")
    env.pop("LD_LIBRARY_PATH", None)  # the rpath alone must find libnrt
    return subprocess.run(
        [str(exe), *args], env=env, capture_output=True, text=True,
        timeout=TIMEOUT, stdin=subprocess.DEVNULL,
    )


def test_prefix_has_lib_and_include():
    prefix = Path(cli("prefix"))
    assert prefix.is_absolute()
    assert (prefix / "lib" / "libnrt.so").is_file()
    assert (prefix / "lib" / "libnrt.so.1").is_file()
    for header in HEADERS:
        assert (prefix / "include" / "nrt" / header).is_file(), header
    assert Path(cli("libdir")) == prefix / "lib"
    assert Path(cli("includedir")) == prefix / "include"


def test_flags():
    prefix = Path(cli("prefix"))
    assert cli("cflags") == f"-I{prefix / 'include'}"
    libs = cli("libs")
    assert libs == f"-L{prefix / 'lib'} -lnrt -Wl,-rpath,{prefix / 'lib'}"
    assert cli("cflags", "libs") == f"{cli('cflags')} {libs}"
    assert cli("libs", "cflags") == f"{libs} {cli('cflags')}"


def test_flag_usage_errors():
    for args in (("cflags", "cflags"), ("cflags", "prefix"), ("bogus",)):
        proc = subprocess.run([sys.executable, "-m", "nrtpy", *args],
                              env=child_env(), capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert proc.returncode == 2, args
        assert "usage" in proc.stderr


# The developer guide's sample, in outline: every header, -lnrt, I/O tensors
# allocated from the tensor info, inputs left as allocated (zero-filled),
# outputs read back and printed.
SAMPLE = r"""
#include <stdio.h>
#include <stdlib.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_status.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/nrt_version.h"

#define CHECK(call)                                                     \
    do {                                                                \
        NRT_STATUS st_ = (call);                                        \
        if (st_ != NRT_SUCCESS) {                                       \
            fprintf(stderr, "%s: %s\n", #call, nrt_get_status_as_str(st_)); \
            return 1;                                                   \
        }                                                               \
    } while (0)

int main(int argc, char **argv)
{
    nrt_version_t ver;
    nrt_model_t *model = NULL;
    nrt_tensor_info_array_t *info = NULL;
    nrt_tensor_set_t *sets[2] = {NULL, NULL};
    nrt_tensor_t *tensors[16];
    FILE *f;
    long size;
    void *neff;

    if (argc != 2 || (f = fopen(argv[1], "rb")) == NULL) {
        return 2;
    }
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    rewind(f);
    neff = malloc((size_t)size);
    if (fread(neff, 1, (size_t)size, f) != (size_t)size) {
        return 2;
    }
    fclose(f);
    CHECK(nrt_get_version(&ver, sizeof ver));
    CHECK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    CHECK(nrt_load(neff, (size_t)size, 0, -1, &model));
    CHECK(nrt_get_model_tensor_info(model, &info));
    CHECK(nrt_allocate_tensor_set(&sets[0]));
    CHECK(nrt_allocate_tensor_set(&sets[1]));
    for (uint64_t i = 0; i < info->tensor_count && i < 16; i++) {
        const nrt_tensor_info_t *ti = &info->tensor_array[i];
        CHECK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size,
                                  ti->name, &tensors[i]));
        CHECK(nrt_add_tensor_to_tensor_set(
            sets[ti->usage == NRT_TENSOR_USAGE_OUTPUT], ti->name, tensors[i]));
    }
    CHECK(nrt_execute(model, sets[0], sets[1]));
    for (uint64_t i = 0; i < info->tensor_count && i < 16; i++) {
        const nrt_tensor_info_t *ti = &info->tensor_array[i];
        float out[64];
        if (ti->usage != NRT_TENSOR_USAGE_OUTPUT || ti->size > sizeof out) {
            continue;
        }
        CHECK(nrt_tensor_read(tensors[i], out, 0, ti->size));
        printf("%s:", ti->name);
        for (size_t k = 0; k < ti->size / sizeof(float); k++) {
            printf(" %g", out[k]);
        }
        printf("\n");
    }
    for (uint64_t i = 0; i < info->tensor_count && i < 16; i++) {
        nrt_tensor_free(&tensors[i]);
    }
    nrt_destroy_tensor_set(&sets[0]);
    nrt_destroy_tensor_set(&sets[1]);
    CHECK(nrt_free_model_tensor_info(info));
    CHECK(nrt_unload(model));
    nrt_close();
    free(neff);
    return 0;
}
"""


@pytest.fixture
def plus_one_neff(tmp_path):
    return nrtpy.neff.compile(lambda x: x + 1, np.ones(5, np.float32),
                              path=tmp_path / "plus_one.neff")


def test_sample_client_with_cli_flags(tmp_path, plus_one_neff):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("cc not installed")
    src = tmp_path / "sample.c"
    src.write_text(SAMPLE)
    exe = tmp_path / "sample"
    flags = shlex.split(cli("cflags", "libs"))
    build = subprocess.run(
        [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", str(src), *flags,
         "-o", str(exe)],
        capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert build.returncode == 0, build.stderr
    run = run_client(exe, str(plus_one_neff))
    assert run.returncode == 0, run.stdout + run.stderr
    # Inputs were never written: they read as zero, so x + 1 is all ones.
    assert run.stdout == "output_0: 1 1 1 1 1\n"


CMAKE_LISTS = """
cmake_minimum_required(VERSION 3.10)
project(nrt_client LANGUAGES CXX)
set(NEURON_ROOT "$ENV{NEURON_ROOT}")
find_library(NRT_LIB nrt PATHS "${NEURON_ROOT}/lib" NO_DEFAULT_PATH REQUIRED)
find_path(NRT_INCLUDE nrt/nrt.h PATHS "${NEURON_ROOT}/include" NO_DEFAULT_PATH
          REQUIRED)
add_executable(client client.cpp)
target_include_directories(client PRIVATE "${NRT_INCLUDE}")
target_link_libraries(client PRIVATE "${NRT_LIB}")
"""

CMAKE_CLIENT = r"""
#include <cstdio>
#include <vector>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_version.h"

int main()
{
    nrt_version_t ver;
    nrt_tensor_t *t = nullptr;
    std::vector<unsigned char> buf(4096, 0xff);
    if (nrt_get_version(&ver, sizeof ver) != NRT_SUCCESS ||
        nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS ||
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, buf.size(), "t",
                            &t) != NRT_SUCCESS ||
        nrt_tensor_read(t, buf.data(), 0, buf.size()) != NRT_SUCCESS) {
        std::puts("FAIL");
        return 1;
    }
    size_t nonzero = 0;
    for (unsigned char b : buf) {
        nonzero += b != 0;
    }
    nrt_tensor_free(&t);
    nrt_close();
    std::printf("major %llu nonzero %zu\n",
                (unsigned long long)ver.rt_major, nonzero);
    return 0;
}
"""


def test_cmake_project_finds_neuron_root(tmp_path):
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake not installed")
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("c++ not installed")
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CMAKE_LISTS)
    (src / "client.cpp").write_text(CMAKE_CLIENT)
    build = tmp_path / "build"
    env = child_env(NEURON_ROOT=cli("prefix"))
    for cmd in ([cmake, "-S", str(src), "-B", str(build)],
                [cmake, "--build", str(build)]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    cache = (build / "CMakeCache.txt").read_text()
    assert f"NRT_LIB:FILEPATH={cli('libdir')}/libnrt.so" in cache
    run = run_client(build / "client")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == "major 2 nonzero 0\n"


# ------------------------------------------------------ device memory (§2)


def test_runtime_info_reports_host_memory(rt):
    info = nrtpy.runtime_info()
    assert info["host_memory"] > 0
    assert 0 < info["host_memory_available"] <= info["host_memory"]
    assert info["hbm_per_core"] == nrtpy.memory_stats(0).bytes_limit


def test_fresh_tensors_read_zero(rt):
    """Including memory an earlier tensor of the same size filled: small
    tensors reuse heap blocks, large ones the emulator's reuse cache."""
    for size in (40, 4096, 1 << 20, 3 << 20):
        for _ in range(3):
            t = rt.allocate_tensor(size)
            assert rt.tensor_read(t) == bytes(size)
            rt.tensor_write(t, b"\x5a" * size)
            rt.free_tensor(t)


def test_from_numpy_then_read(rt):
    """A tensor written whole reads back what was written (the lazy zero
    fill never runs after it)."""
    for size in (40, 1 << 20, 3 << 20):
        a = np.arange(size, dtype=np.uint8)
        for _ in range(2):
            t = nrtpy.NrtpyTensor.from_numpy(a)
            assert np.array_equal(t.numpy(), a)
            del t


def run_with(env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    """``code`` in a child with its own emulated machine (ours holds the
    cores) and the settings of ``env``."""
    ns = f"{os.environ['NRTPY_EMU_NAMESPACE']}-other"
    return run_python(textwrap.dedent(code), TIMEOUT, NRTPY_EMU_NAMESPACE=ns,
                      **env)


def test_poison_env():
    proc = run_with({"NRTPY_EMU_POISON": "1"}, """
        import numpy as np, nrtpy
        rt = nrtpy.get_nrtpy_singleton()
        t = rt.allocate_tensor(16)
        a = np.frombuffer(rt.tensor_read(t), np.float32)
        print(np.isnan(a).all(), hex(int(a.view(np.uint32)[0])))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "True 0x7fa07fa0\n"


def test_host_cannot_back_hbm():
    """HBM limits over the host's RAM: nrt_init warns, and a tensor the host
    cannot back is refused with NRT_RESOURCE instead of an OOM kill."""
    host = nrtpy.runtime_info()["host_memory"]
    proc = run_with({"NRTPY_EMU_HBM_PER_CORE": str(4 * host),
                     "NEURON_RT_LOG_LEVEL": "WARN"}, f"""
        import nrtpy
        rt = nrtpy.get_nrtpy_singleton()
        try:
            rt.allocate_tensor({2 * host})
        except nrtpy.NrtError as e:
            print("refused:", e)
        t = rt.allocate_tensor(1 << 20)
        print("still works:", rt.tensor_read(t, 0, 4) == bytes(4))
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("refused:")
    assert "NRT_RESOURCE" in lines[0]
    assert lines[1] == "still works: True"
    assert "exceeds host RAM" in proc.stderr
    assert "NRTPY_EMU_HBM_PER_CORE" in proc.stderr
