"""The scripts of examples/ run to completion and print what they promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import child_env

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# The examples run on this process's emulated machine (its namespace): this
# process must not hold the cores meanwhile.
pytestmark = pytest.mark.usefixtures("fresh_runtime")


def run_example(name: str, tmp_path: Path, tmpdir: Path | None = None) -> str:
    """Run examples/<name> in `tmp_path` (its temporary files in `tmpdir`,
    by default `tmp_path` too); its stdout."""
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=tmp_path,
        env=child_env(TMPDIR=str(tmpdir or tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_all_examples_are_covered():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(
        ["quickstart.py", "tutorial_debug_oob.py", "tutorial_validate_benchmark.py",
         "model_page.py", "nki_debug_oob.py",
         "spike_compat.py"])  # (run by test_compat.py, with the compat layer)


def test_quickstart(tmp_path):
    out = run_example("quickstart.py", tmp_path)
    assert out.rstrip().endswith("quickstart OK")
    assert "emulated       True" in out
    assert "NrtError status=1 (NRT_FAILURE)" in out
    assert "ValueError     core_id 7 does not exist" in out
    assert "NrtpyError     Nrtpy Error:" in out
    for dt in ("float16", "bfloat16", "float8_e4m3", "int64"):
        assert f"\n{dt:14s} -> {dt:14s}" in out


def test_nki_debug_oob(tmp_path):
    out = run_example("nki_debug_oob.py", tmp_path)
    lines = out.splitlines()
    assert lines[0].startswith("Expected error: NrtError: NRT Error "
                               "NRT_EXEC_OOB(1006): ")
    assert "  src_tensor: shape=[128, 512], size=262144" in lines
    assert "  output_0: shape=[128, 512], size=262144" in lines
    assert "Output sample (first row): [1. 0. 0. 0. 0.]" in lines
    assert lines[-1] == "nki_debug_oob OK"


def test_tutorial_debug_oob(tmp_path):
    out = run_example("tutorial_debug_oob.py", tmp_path)
    lines = out.splitlines()
    assert "Model inputs:" in lines
    assert "  src_tensor: shape=[128, 512], size=262144" in lines
    assert "  output_0: shape=[128, 512], size=262144" in lines
    assert "Caught NrtError:" in lines
    error = lines[lines.index("Caught NrtError:") + 1]
    assert error.startswith("  NRT Error NRT_EXEC_OOB(1006): Failed to execute model")
    assert "Execution succeeded. Output shape: (128, 512)" in out
    assert "Output sample (first row): [1. 1. 1. 1. 1.]" in out


def test_tutorial_validate_benchmark(tmp_path):
    out = run_example("tutorial_validate_benchmark.py", tmp_path)
    assert "Inputs: ['a_input', 'b_input']" in out
    assert "Outputs: ['output_0']" in out
    for case in ("ones+ones", "zeros+zeros", "neg+pos", "random", "large"):
        assert f"  PASS: {case}" in out
    assert "Results: 5 passed, 0 failed" in out
    assert "  Iterations: 100" in out
    assert "Device-side benchmark (NeuronCore execution only):" in out
    assert "Host-side benchmark (total round-trip):" in out
    # the regression check compares blocks, so noise never reads as one
    assert re.search(r"\nOK: \d+\.\d\dx of baseline \(median of 10 blocks of 200", out)
    assert "REGRESSION" not in out
    assert "Trace saved to " in out
    assert "'add'" in out.splitlines()[-1]


def test_model_page(tmp_path):
    out = run_example("model_page.py", tmp_path)
    lines = out.splitlines()
    assert lines[0] == "input: shape=[1, 10], size=40"
    assert lines[1].startswith("output matches NumPy:")
    assert lines[2].startswith("Mean: ") and lines[2].endswith(" ms")
    assert lines[3].startswith("Min: ")
    assert lines[4].startswith("Std dev: ")
    assert lines[5].startswith("BenchmarkResult(mean=")
    assert lines[5].endswith("iterations=100, warmup_iterations=5)")


@pytest.mark.parametrize("name", ["tutorial_debug_oob.py", "model_page.py"])
def test_examples_leave_cwd_clean(tmp_path, name):
    work, tmpdir = tmp_path / "cwd", tmp_path / "tmp"
    work.mkdir()
    tmpdir.mkdir()
    run_example(name, work, tmpdir)
    assert list(work.iterdir()) == []
    (made,) = tmpdir.iterdir()  # the NEFFs went to a temporary directory
    assert sorted(p.suffix for p in made.iterdir())[0] == ".neff"
