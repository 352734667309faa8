"""``python -m nrtpy compat install`` gives NKI's two namespaces, ``nki``
and ``neuronxcc.nki``, as nrtpy.nki itself (not copies).  (That it
refuses to shadow a real ``nki`` is in test_compat.py, with spike's.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap


from support import child_env, namespace

KERNELS = textwrap.dedent("""
    import numpy as np
    import nki
    import nki.isa as nisa
    import nki.language as nl
    import neuronxcc.nki as old
    import neuronxcc.nki.isa as old_isa
    import neuronxcc.nki.language as old_nl
    from neuronxcc.nki.isa.constants import dge_mode
    import nrtpy.nki, nrtpy.nki.legacy

    assert nl is nrtpy.nki.language and nisa is nrtpy.nki.isa
    assert nki.jit is nrtpy.nki.jit and nki.language is nl
    assert old.simulate_kernel is nrtpy.nki.legacy.simulate_kernel
    assert old_isa.nc_matmul is nrtpy.nki.legacy.isa.nc_matmul
    assert old_nl.mgrid is nrtpy.nki.language.mgrid
    assert dge_mode is nisa.dge_mode

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(b)))
        return out

    @old.jit(mode="simulation")
    def mm(s, m):
        out = old_nl.ndarray((s.shape[1], m.shape[1]), old_nl.float32,
                             buffer=old_nl.shared_hbm)
        old_nl.store(out, old_isa.nc_matmul(old_nl.load(s), old_nl.load(m)))
        return out

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert (add(a, a) == 2 * a).all()
    s = np.arange(32, dtype=np.float32).reshape(8, 4)
    m = np.arange(40, dtype=np.float32).reshape(8, 5)
    assert np.allclose(mm(s, m), s.T @ m)
    print("compat nki OK")
""")


def _install(target, env):
    return subprocess.run([sys.executable, "-m", "nrtpy", "compat", "install",
                           "--target", str(target)], capture_output=True,
                          text=True, env=env, timeout=120)


def test_both_namespaces_after_compat_install(tmp_path):
    env = child_env(NRTPY_EMU_NAMESPACE=namespace("nki-compat"))
    done = _install(tmp_path / "site", env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "nki" / "language.py").is_file()
    assert (tmp_path / "site" / "neuronxcc" / "nki" / "isa" / "constants.py").is_file()
    run = subprocess.run([sys.executable, "-c", KERNELS], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path,
                         env=dict(env, PYTHONPATH=str(tmp_path / "site")))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "compat nki OK"

