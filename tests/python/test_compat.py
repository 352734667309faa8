"""The compat layer: ``python -m nrtpy compat install|status|uninstall``, and
code written for Spike and neuronx-cc (nkipy's) running on it unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import ml_dtypes
import numpy
import pytest

import nrtpy
from nkipy_hlo import multiply_add
from nrtpy.compat import SHIMS
from support import child_env

# nkipy's code, as it reaches Spike and neuronx-cc: a work directory with
# hlo_module.pb, neuronx-cc's command line (as a program, or through
# CommandDriver.main with sys.argv set), then SpikeModel and SpikeTensor.
NKIPY_STYLE = textwrap.dedent("""\
    import os, subprocess, sys
    import numpy as np
    import spike
    from spike import SpikeModel, SpikeTensor, get_spike_singleton
    from spike._spike import Spike
    from neuronxcc.driver.CommandDriver import main as neuronx_cc_main

    work = sys.argv[1]
    os.chdir(work)
    with open("hlo_module.pb", "wb") as f:
        f.write(bytes.fromhex(sys.argv[2]))
    cmd = ["neuronx-cc", "compile", "--framework", "XLA", "hlo_module.pb",
           "--pipeline", "compile", "SaveTemps", "--target", "trn2",
           "--output=k.neff", "--lnc", "1", "--internal-tensorizer-opt-level=2"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    print("note:", done.stderr.strip())
    # nkipy's python interface: sys.argv set, main() called
    saved, sys.argv = sys.argv, cmd[:-1] + ["--output=k2.neff"]
    try:
        assert neuronx_cc_main() == 0
    finally:
        sys.argv = saved
    # arguments passed
    assert neuronx_cc_main(cmd[1:-1] + ["-o", "k3.neff"]) == 0

    assert Spike.get_visible_neuron_core_count() >= 1
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    b = np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3)

    class DeviceTensor(SpikeTensor):  # nkipy subclasses SpikeTensor
        pass

    class DeviceKernel(SpikeModel):   # and SpikeModel
        def __init__(self, model_ref, name, neff_path):
            super().__init__(model_ref, name, neff_path)

    for neff in ("k.neff", "k2.neff", "k3.neff"):
        kernel = DeviceKernel.load_from_neff(os.path.join(work, neff), name="k",
                                             cc_enabled=False, rank_id=0, world_size=1)
        assert isinstance(kernel, SpikeModel)
        inputs = {"a": DeviceTensor.from_numpy(a, name="a"),
                  "b": DeviceTensor.from_numpy(b, name="b")}
        outputs = {t.name: t for t in kernel.allocate_output_tensors()}
        assert kernel(inputs, outputs, False, None) is None
        np.testing.assert_array_equal(outputs["output0"].numpy(), a * b + a)
        # Spike's constructor and the singleton's buffer calls
        rt = get_spike_singleton()
        ref = rt.allocate_tensor(a.nbytes, 0, "raw")
        rt.tensor_write_from_pybuffer(ref, a)
        raw = SpikeTensor(ref, (2, 3), np.float32, "raw")
        back = np.empty_like(a)
        rt.tensor_read_to_pybuffer(raw.tensor_ref, back)
        np.testing.assert_array_equal(back, a)
        auto = kernel({"a": raw, "b": inputs["b"]})
        np.testing.assert_array_equal(auto["output0"].numpy(), a * b + a)
        assert isinstance(auto["output0"], SpikeTensor)
        result = kernel.benchmark(inputs, outputs, warmup_iter=1, benchmark_iter=2)
        assert isinstance(result, spike.BenchmarkResult) and result.iterations >= 1
    print("OK", sorted(spike.__all__))
""")


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def run(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL, **kw)


def compat(python: str | Path, *args: str, env=None) -> subprocess.CompletedProcess:
    return run([str(python), "-m", "nrtpy", "compat", *args], env=env or child_env())


@pytest.fixture
def venv(tmp_path_factory) -> Path:
    """A fresh virtual environment that sees this nrtpy through a .pth file:
    the layer goes into its own site-packages and bin."""
    root = tmp_path_factory.mktemp("venv") / "env"
    done = run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    assert done.returncode == 0, done.stderr
    python = root / "bin" / "python"
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    # nrtpy and its dependencies, wherever this interpreter finds them
    folders = dict.fromkeys(str(Path(m.__file__).resolve().parent.parent)
                            for m in (nrtpy, numpy, ml_dtypes))
    (Path(site.stdout.strip()) / "nrtpy_dev.pth").write_text("".join(f"{f}\n" for f in folders))
    return root


def venv_env(root: Path) -> dict[str, str]:
    return child_env(PATH=f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}",
                     PYTHONPATH=None, VIRTUAL_ENV=str(root))


# The child runs models on this process's emulated machine: this process
# must not hold the cores meanwhile.
@pytest.mark.usefixtures("fresh_runtime")
def test_install_runs_nkipy_style_code_and_uninstall_leaves_nothing(venv, tmp_path):
    python = venv / "bin" / "python"
    env = venv_env(venv)
    before = listing(venv)
    done = compat(python, "install", env=env)
    assert done.returncode == 0, done.stderr
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
                    ).stdout.strip())
    assert (site / "spike" / "__init__.py").is_file()
    assert (site / "neuronxcc" / "driver" / "CommandDriver.py").is_file()
    assert os.access(venv / "bin" / "neuronx-cc", os.X_OK)
    record = next(site.glob("nrtpy_compat-*.dist-info")) / "RECORD"
    assert "../../../bin/neuronx-cc,sha256=" in record.read_text()

    status = compat(python, "status", env=env)
    assert status.returncode == 0
    for name in ("spike", "neuronxcc", "neuronx-cc"):
        assert any(line.split()[:2] == [name, "nrtpy's"] for line in status.stdout.splitlines()), \
            status.stdout

    work = tmp_path / "work"
    work.mkdir()
    done = run([str(python), "-c", NKIPY_STYLE, str(work), multiply_add([2, 3]).hex()],
               env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "note: nrtpy-cc: note: ignored neuronx-cc options" in done.stdout
    assert done.stdout.rstrip().endswith(f"OK {sorted(SHIMS['spike'])}")

    done = compat(python, "uninstall", env=env)
    assert done.returncode == 0, done.stderr
    assert listing(venv) == before  # bytecode caches included
    assert "not installed" in compat(python, "status", env=env).stdout


def test_pip_uninstall_removes_the_layer(venv):
    python = venv / "bin" / "python"
    env = venv_env(venv)
    before = listing(venv)
    assert compat(python, "install", env=env).returncode == 0
    # import it, so that bytecode is cached too
    done = run([str(python), "-c", "import spike, spike._spike, neuronxcc.driver.CommandDriver"],
               env=env)
    assert done.returncode == 0, done.stderr
    done = run([sys.executable, "-m", "pip", "--python", str(python), "uninstall", "-y",
                "nrtpy-compat"], env=child_env(PIP_NO_INDEX="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert listing(venv) == before


def requiring_wheel(folder: Path) -> Path:
    """A wheel whose only requirement is nkipy's on neuronx-cc."""
    wheel = folder / "needs_neuronx_cc-1.0-py3-none-any.whl"
    info = "needs_neuronx_cc-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("needs_neuronx_cc/__init__.py", "")
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: needs-neuronx-cc\n"
                   "Version: 1.0\nRequires-Dist: neuronx-cc>=0.0,!=1.*,<3.0\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test_compat\n"
                   "Root-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return wheel


def test_install_meets_nkipys_neuronx_cc_requirement(venv, tmp_path):
    # nkipy requires "neuronx-cc>=0.0,!=1.*,<3.0": after install, pip's
    # resolver takes the layer's neuronx-cc as meeting it (offline: no index,
    # no configuration); after uninstall it finds none again.
    python = venv / "bin" / "python"
    env = venv_env(venv)
    wheel = requiring_wheel(tmp_path)
    version = [str(python), "-c",
               "import importlib.metadata as m; print(m.version('neuronx-cc'))"]
    resolve = [sys.executable, "-m", "pip", "--isolated", "--python", str(python),
               "install", "--dry-run", "--no-index", str(wheel)]
    done = compat(python, "install", env=env)
    assert done.returncode == 0, done.stderr
    said = done.stdout
    done = run(version, env=env)
    assert (done.returncode, done.stdout) == (0, "2.0.0+nrtpy\n"), done.stderr
    done = run(resolve, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Requirement already satisfied: neuronx-cc" in done.stdout
    assert "Would install needs-neuronx-cc-1.0" in done.stdout
    assert "the neuronx-cc 2.0.0+nrtpy metadata" in said
    status = compat(python, "status", env=env).stdout
    assert any(line.split()[:2] == ["neuronx-cc", "nrtpy's"] and
               line.endswith("neuronx_cc-2.0.0+nrtpy.dist-info")
               for line in status.splitlines()), status

    assert compat(python, "uninstall", env=env).returncode == 0
    done = run(version, env=env)
    assert done.returncode == 1 and "PackageNotFoundError" in done.stderr
    done = run(resolve, env=env)
    assert done.returncode == 1
    assert "No matching distribution found for neuronx-cc" in done.stderr


def test_reinstall_replaces_the_layer(tmp_path):
    target = tmp_path / "t"
    for _ in range(2):
        done = compat(sys.executable, "install", "--target", str(target))
        assert done.returncode == 0, done.stderr
    assert len(list(target.glob("nrtpy_compat-*.dist-info"))) == 1
    assert compat(sys.executable, "uninstall", "--target", str(target)).returncode == 0
    assert listing(target) == set()


def test_target_install_with_pythonpath(tmp_path):
    target = tmp_path / "t"
    done = compat(sys.executable, "install", "--target", str(target))
    assert done.returncode == 0, done.stderr
    assert f"{target} is not on this Python's path: add it to PYTHONPATH" in done.stdout
    assert f"{target / 'bin'} is not on PATH" in done.stdout
    env = child_env(PYTHONPATH=str(target),
                    PATH=f"{target / 'bin'}{os.pathsep}{os.environ['PATH']}")
    done = run([sys.executable, "-c",
                "import spike, nrtpy; from neuronxcc.driver.CommandDriver import main;"
                "from spike._spike import Spike, SpikeError, SpikeRuntimeError;"
                "assert spike.SpikeTensor is nrtpy.NrtpyTensor;"
                "assert spike.SpikeModel is nrtpy.NrtpyModel;"
                "assert spike.get_spike_singleton is nrtpy.get_nrtpy_singleton;"
                "assert Spike is nrtpy.Nrtpy and SpikeError is nrtpy.NrtpyError;"
                "assert issubclass(SpikeError, SpikeRuntimeError);"
                "import nrtpy.cc; assert main is nrtpy.cc.main;"
                "print(spike.__file__)"], env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(target / "spike" / "__init__.py")
    (tmp_path / "hlo_module.pb").write_bytes(multiply_add([2, 3]))
    done = run(["neuronx-cc", "compile", "--framework", "XLA", "hlo_module.pb", "-o", "m.neff"],
               env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "m.neff").is_file()
    assert compat(sys.executable, "uninstall", "--target", str(target)).returncode == 0
    assert listing(target) == set()


@pytest.mark.usefixtures("fresh_runtime")
def test_readme_example(tmp_path):
    """examples/spike_compat.py, docs/compat.md's example: JAX's module through
    neuronx-cc and SpikeModel, against JAX's result."""
    target = tmp_path / "t"
    assert compat(sys.executable, "install", "--target", str(target)).returncode == 0
    example = Path(__file__).resolve().parents[2] / "examples" / "spike_compat.py"
    done = run([sys.executable, str(example)], cwd=tmp_path,
               env=child_env(PYTHONPATH=str(target), TMPDIR=str(tmp_path),
                             PATH=f"{target / 'bin'}{os.pathsep}{os.environ['PATH']}"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "inputs  {'x': ([8, 16], 'float32'), 'w': ([16, 4], 'float32')}" in done.stdout
    assert "outputs {'output0': ([8, 4], 'float32')}" in done.stdout
    assert done.stdout.rstrip().endswith("spike_compat OK")


def fake_package(root: Path, name: str) -> Path:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("REAL = True\n")
    return root / name


@pytest.mark.parametrize("name", ["spike", "neuronxcc", "nki"])
def test_refuses_over_a_real_package_in_the_destination(tmp_path, name):
    target = tmp_path / "t"
    real = fake_package(target, name)
    before = listing(target)
    done = compat(sys.executable, "install", "--target", str(target))
    assert done.returncode == 1
    assert f"refusing to install: a {name!r} that is not nrtpy's is installed at {real}" \
        in done.stderr
    assert "nothing was changed" in done.stderr
    assert listing(target) == before
    status = compat(sys.executable, "status", "--target", str(target))
    assert f"{name:<11} not nrtpy's  {real}" in status.stdout
    assert "not installed" in status.stdout
    # nothing of ours to remove, and theirs stays
    assert compat(sys.executable, "uninstall", "--target", str(target)).returncode == 0
    assert listing(target) == before


@pytest.mark.parametrize("name", ["spike", "neuronxcc", "nki"])
def test_refuses_to_shadow_a_real_package_elsewhere_on_the_path(tmp_path, name):
    elsewhere = tmp_path / "site"
    real = fake_package(elsewhere, name)
    target = tmp_path / "t"
    done = compat(sys.executable, "install", "--target", str(target),
                  env=child_env(PYTHONPATH=str(elsewhere)))
    assert done.returncode == 1
    assert f"a {name!r} that is not nrtpy's is installed at {real}" in done.stderr
    assert not target.exists()


def test_keep_real_installs_the_other_parts_beside_a_real_spike(tmp_path):
    # A real Spike (built against nrtpy's libnrt) keeps its name; nrtpy's
    # neuronxcc, neuronx-cc metadata and script go in beside it, and
    # uninstall removes only those.
    target = tmp_path / "t"
    real = fake_package(target, "spike")
    done = compat(sys.executable, "install", "--target", str(target), "--keep-real")
    assert done.returncode == 0, done.stderr
    assert f"keeping the real one: a 'spike' that is not nrtpy's is installed " \
           f"at {real}" in done.stdout
    assert "installed neuronxcc, nki, the neuronx-cc 2.0.0+nrtpy metadata" in done.stdout
    assert (real / "__init__.py").read_text() == "REAL = True\n"
    assert (target / "neuronxcc").is_dir() and (target / "bin" / "neuronx-cc").is_file()
    probe = run([sys.executable, "-c", "import spike, neuronxcc.driver; "
                 "import importlib.metadata as m; "
                 "print(spike.REAL, m.version('neuronx-cc'))"],
                env=child_env(PYTHONPATH=str(target)))
    assert probe.stdout.split() == ["True", "2.0.0+nrtpy"], probe.stderr
    assert compat(sys.executable, "uninstall", "--target", str(target)).returncode == 0
    assert sorted(p.name for p in target.iterdir()) == ["spike"]
    assert (real / "__init__.py").read_text() == "REAL = True\n"
    # without it, the refusal says how to get the rest
    done = compat(sys.executable, "install", "--target", str(target))
    assert done.returncode == 1 and "--keep-real" in done.stderr
    bad = compat(sys.executable, "status", "--target", str(target), "--keep-real")
    assert bad.returncode == 2 and "--keep-real is an option of install" in bad.stderr


def fake_distribution(root: Path, name: str, version: str) -> Path:
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return info


@pytest.mark.parametrize("where", ["destination", "elsewhere"])
def test_refuses_to_shadow_a_real_neuronx_cc_distribution(tmp_path, where):
    # AWS's neuronx-cc as pip sees it: its metadata, whatever the packages
    target = tmp_path / "t"
    root = target if where == "destination" else tmp_path / "site"
    real = fake_distribution(root, "neuronx-cc", "2.21.0")
    before = listing(tmp_path)
    done = compat(sys.executable, "install", "--target", str(target),
                  env=child_env(PYTHONPATH=str(root)))
    assert done.returncode == 1
    assert (f"refusing to install: a 'neuronx-cc' distribution that is not nrtpy's is "
            f"installed at {real}") in done.stderr
    assert listing(tmp_path) == before
    status = compat(sys.executable, "status", "--target", str(target),
                    env=child_env(PYTHONPATH=str(root)))
    assert f"neuronx-cc  not nrtpy's  {real}" in status.stdout


def test_refuses_to_shadow_a_real_neuronx_cc_on_path(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = bin_dir / "neuronx-cc"
    real.write_text("#!/bin/sh\necho real\n")
    real.chmod(0o755)
    target = tmp_path / "t"
    done = compat(sys.executable, "install", "--target", str(target),
                  env=child_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert done.returncode == 1
    assert f"a 'neuronx-cc' that is not nrtpy's is at {real}" in done.stderr
    assert not target.exists()


def test_a_source_checkout_in_the_current_directory_is_not_a_conflict(tmp_path):
    fake_package(tmp_path, "spike")  # as nkipy's repository root holds spike/
    target = tmp_path / "t"
    done = run([sys.executable, "-m", "nrtpy", "compat", "install", "--target", str(target)],
               env=child_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert compat(sys.executable, "uninstall", "--target", str(target)).returncode == 0


def test_uninstall_keeps_a_file_changed_since_install(tmp_path):
    target = tmp_path / "t"
    assert compat(sys.executable, "install", "--target", str(target)).returncode == 0
    init = target / "spike" / "__init__.py"
    init.write_text("REAL = True\n")  # another spike installed over ours
    # ours no longer: install refuses, status says so
    assert compat(sys.executable, "install", "--target", str(target)).returncode == 1
    assert f"spike       not nrtpy's  {target / 'spike'}" in \
        compat(sys.executable, "status", "--target", str(target)).stdout
    done = compat(sys.executable, "uninstall", "--target", str(target))
    assert done.returncode == 1
    assert f"kept {init}: not as the layer wrote it" in done.stderr
    assert listing(target) == {"spike", "spike/__init__.py"}


def test_prefix_uses_the_install_scheme(tmp_path):
    prefix = tmp_path / "p"
    done = compat(sys.executable, "install", "--prefix", str(prefix))
    assert done.returncode == 0, done.stderr
    scheme = sysconfig.get_preferred_scheme("prefix")
    paths = sysconfig.get_paths(scheme, vars={"base": str(prefix), "platbase": str(prefix)})
    assert (Path(paths["purelib"]) / "spike" / "_spike.py").is_file()
    assert (Path(paths["scripts"]) / "neuronx-cc").is_file()
    assert compat(sys.executable, "uninstall", "--prefix", str(prefix)).returncode == 0
    assert not [p for p in prefix.rglob("*") if p.is_file()]


def test_command_line_errors():
    done = compat(sys.executable, "frobnicate")
    assert done.returncode == 2 and "invalid choice" in done.stderr
    done = compat(sys.executable, "install", "--prefix", "a", "--target", "b")
    assert done.returncode == 2 and "not allowed with argument" in done.stderr
