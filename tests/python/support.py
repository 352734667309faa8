"""Helpers of the nrtpy Python tests (conftest.py sets the environment
before this module, and so nrtpy, is imported)."""

from __future__ import annotations

import gc
import itertools
import os
import subprocess
import sys
import warnings

import nrtpy
import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor

MIB = 1 << 20


def quiet_reset() -> None:
    """nrtpy.reset() without its UserWarning (a fixture's housekeeping)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        nrtpy.reset()


def used(core: int = 0) -> int:
    """Device bytes in use on ``core`` (starts the runtime if needed), once
    garbage left by earlier code is collected."""
    gc.collect()
    return nrtpy.memory_stats(core).bytes_used


_neff_counter = itertools.count()


def has_avx512() -> bool:
    """Whether the kernels' AVX-512 paths run here: the CPU has x86-64-v4's
    AVX-512 and NRTPY_EMU_CPU (src/emulator/kernels/cpu.h) does not cap them."""
    if os.environ.get("NRTPY_EMU_CPU", "") in ("x86-64-v3", "baseline"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return all(f in flags for f in ("avx512f", "avx512bw", "avx512dq", "avx512vl"))


def run_compiled(tmp_path, fn, *arrays):
    """Compile `fn` for `arrays` (a NEFF of its own under tmp_path), run it
    on the emulator and return its one output as an array."""
    path = nrtpy.neff.compile(
        fn, *arrays, path=tmp_path / f"run{next(_neff_counter)}.neff")
    model = NrtpyModel.load_from_neff(path)
    inputs = {name: NrtpyTensor.from_numpy(a, name=name)
              for name, a in zip(model.input_tensors_info, arrays)}
    (out,) = model(inputs=inputs).values()
    return out.numpy()


def raw(a) -> bytes:
    """The bytes of an array, whatever its dtype and shape."""
    return bytes(a.reshape(-1).view("u1"))


def child_env(**overrides: str | None) -> dict[str, str]:
    """The environment of a child process: ours, with overrides (None
    removes a variable).  NRTPY_EMU_NAMESPACE is ours unless overridden."""
    env = dict(os.environ)
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


# This session's emulated machine (conftest.py names it before importing
# this module); namespace() derives the children's from it.
SESSION_NAMESPACE = os.environ.get("NRTPY_EMU_NAMESPACE", "default")


def namespace(tag: str) -> str:
    """An emulated machine (NRTPY_EMU_NAMESPACE) for child processes of a
    test: this session's name with ``tag`` appended, so that the sweep at
    the session's end (conftest.py) finds whatever a killed child left."""
    return f"{SESSION_NAMESPACE}-{tag}"


def lock_root() -> str:
    """The folder of the emulator's namespace folders, chosen as the
    emulator chooses it (src/emulator/device/core_lock.h)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and xdg.startswith("/") and os.path.isdir(xdg) and \
            os.stat(xdg).st_uid == os.geteuid() and \
            os.access(xdg, os.W_OK | os.X_OK):
        return os.path.join(xdg, "nrtpy-emu")
    return f"/tmp/nrtpy-emu-{os.geteuid()}"


# A runtime started and closed: the emulator then removes its namespace's
# folder when no process holds a core there, also when the start is
# refused because one does.
_SWEEP = """
import nrtpy
try:
    nrtpy.get_nrtpy_singleton()
except Exception:
    pass
"""


def sweep_namespaces(prefix: str = SESSION_NAMESPACE) -> None:
    """Remove the folders of the namespaces ``prefix`` and ``prefix-*``
    that processes killed by tests left behind (a process ending normally
    removes its namespace's folder itself), by starting and closing a
    runtime in each: the emulator's own sweep, which keeps what a live
    process holds."""
    try:
        names = os.listdir(lock_root())
    except OSError:
        return
    for name in names:
        if name == prefix or name.startswith(prefix + "-"):
            subprocess.run(
                [sys.executable, "-c", _SWEEP],
                env=child_env(NRTPY_EMU_NAMESPACE=name,
                              NRTPY_EMU_INSTANCE=None,
                              NEURON_RT_VISIBLE_CORES=None,
                              NEURON_RT_NUM_CORES=None),
                capture_output=True, timeout=60, stdin=subprocess.DEVNULL)


def run_python(code: str, timeout: float = 60, **env: str | None):
    """Run ``python -c code`` and return the CompletedProcess (text)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )



def neff_members(path) -> dict[str, bytes]:
    """The archive members of a NEFF, read with Python's own tarfile: an
    oracle independent of the emulator's reader, for checking what
    nrtpy.neff wrote (nrtpy itself reads NEFFs only through the emulator).
    The fuzz corpus tools share it (tests/fuzz/make_corpus.py)."""
    fuzz_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz")
    if fuzz_dir not in sys.path:
        sys.path.append(fuzz_dir)
    import make_corpus

    return make_corpus.members(path)
