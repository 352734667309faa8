"""nrtpy-cc: neuronx-cc's command line over nrtpy.neff.compile_hlo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nrtpy
from nkipy_hlo import multiply_add
from nrtpy import cc
from support import child_env

# What nkipy runs, in its work directory.
NKIPY_ARGS = ["compile", "--framework", "XLA", "hlo_module.pb", "--pipeline", "compile",
              "SaveTemps", "--target", "trn2", "--output=k.neff", "--lnc", "1",
              "--internal-tensorizer-opt-level=2"]
NKIPY_IGNORED = ("--pipeline compile SaveTemps --target trn2 --lnc 1 "
                 "--internal-tensorizer-opt-level=2")

A = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
B = np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3)


def run_neff(path: Path) -> np.ndarray:
    model = nrtpy.NrtpyModel.load_from_neff(path)
    out = model({"a": nrtpy.NrtpyTensor.from_numpy(A, "a"),
                 "b": nrtpy.NrtpyTensor.from_numpy(B, "b")})
    return out["output0"].numpy()


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A work directory holding nkipy's hlo_module.pb, made the current one."""
    (tmp_path / "hlo_module.pb").write_bytes(multiply_add([2, 3]))
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- the command line -------------------------------------------------------
def test_parse_nkipy_command_line():
    cmd = cc.parse(NKIPY_ARGS)
    assert (cmd.command, cmd.framework, cmd.module, cmd.output) == \
        ("compile", "XLA", "hlo_module.pb", "k.neff")
    assert " ".join(cmd.ignored) == NKIPY_IGNORED


@pytest.mark.parametrize("args, output", [
    (["--output", "o.neff"], "o.neff"),
    (["--output=d/o.neff"], "d/o.neff"),
    (["-o", "o.neff"], "o.neff"),
    (["-oo.neff"], "o.neff"),
    ([], "file.neff"),
])
def test_parse_output_spellings(args, output):
    cmd = cc.parse(["compile", "--framework=XLA", "m.pb", *args])
    assert (cmd.framework, cmd.module, cmd.output, cmd.ignored) == ("XLA", "m.pb", output, [])


def test_parse_ignored_options_and_their_values():
    cmd = cc.parse(["compile", "m.pb", "--framework", "XLA", "-O2", "--optlevel", "1",
                    "--model-type=transformer", "--auto-cast", "none",
                    "--enable-fast-loading-neuron-binaries", "--internal-x", "y",
                    "-O", "3", "--pipeline", "compile", "SaveTemps", "--workdir", "w"])
    assert cmd.module == "m.pb"
    assert cmd.ignored == ["-O2", "--optlevel 1", "--model-type=transformer",
                           "--auto-cast none", "--enable-fast-loading-neuron-binaries",
                           "--internal-x y", "-O 3", "--pipeline compile SaveTemps",
                           "--workdir w"]


def test_parse_refuses_two_modules_and_missing_values():
    with pytest.raises(cc.UsageError, match="one module at a time"):
        cc.parse(["compile", "a.pb", "b.pb"])
    for missing in (["--output"], ["--output="], ["-o"], ["--framework"],
                    ["--output", "--target", "trn2"]):
        with pytest.raises(cc.UsageError, match=f"{missing[0].rstrip('=')} needs a value"):
            cc.parse(["compile", "a.pb", *missing])


# -- compiling ----------------------------------------------------------------
def test_nkipy_command_compiles_in_the_working_directory(workdir, capsys):
    assert cc.main(NKIPY_ARGS) == 0
    err = capsys.readouterr().err
    # One note, naming every ignored option.
    assert err.count("\n") == 1 and err.startswith("nrtpy-cc: note: ")
    assert err.rstrip().endswith(NKIPY_IGNORED)
    np.testing.assert_array_equal(run_neff(workdir / "k.neff"), A * B + A)


def test_default_output_and_no_note_without_ignored_options(workdir, capsys):
    assert cc.main(["compile", "--framework", "XLA", "hlo_module.pb"]) == 0
    assert capsys.readouterr().err == ""
    np.testing.assert_array_equal(run_neff(workdir / "file.neff"), A * B + A)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.splitlines()
    errors = [line for line in err if not line.startswith("nrtpy-cc: note:")]
    assert len(errors) == 1, err
    assert errors[0].startswith("nrtpy-cc: error: ")
    return errors[0]


@pytest.mark.parametrize("args, status, message", [
    (["compile", "--framework", "XLA", "missing.pb", "-o", "x.neff"], 1,
     "missing.pb: no such file"),
    (["compile", "--framework", "TENSORFLOW", "hlo_module.pb"], 2,
     "framework 'TENSORFLOW' is not supported: only XLA"),
    (["compile", "hlo_module.pb"], 2, "--framework is required"),
    (["compile", "--framework", "XLA", "--target", "trn2"], 2, "no module"),
    (["list-operators", "--framework", "XLA"], 2, "command 'list-operators' is not supported"),
    (["--framework", "XLA"], 2, "no command"),
    (["compile", "--framework", "XLA", "hlo_module.pb", "-o", "nowhere/x.neff"], 1,
     "its folder 'nowhere' does not exist"),
    (["compile", "--framework", "XLA", "."], 1, "is a directory"),
])
def test_errors_are_one_line_with_a_status(workdir, capsys, args, status, message):
    assert cc.main(args) == status
    assert message in one_error_line(capsys)
    assert not list(workdir.glob("*.neff"))


def test_malformed_module_is_a_one_line_error(workdir, capsys):
    (workdir / "bad.pb").write_bytes(b"\xff\xff\xff")
    assert cc.main(["compile", "--framework", "XLA", "bad.pb", "-o", "bad.neff"]) == 1
    assert one_error_line(capsys).startswith("nrtpy-cc: error: cannot compile bad.pb: ")
    assert not (workdir / "bad.neff").exists()


def test_unimplemented_opcode_is_a_one_line_error(workdir, capsys):
    (workdir / "op.pb").write_bytes(multiply_add([2, 3], opcode="bogus-op"))
    assert cc.main(["compile", "--framework", "XLA", "op.pb", "-o", "op.neff"]) == 1
    line = one_error_line(capsys)
    assert line.startswith("nrtpy-cc: error: not supported by the emulator: ")
    assert "bogus-op" in line
    assert not (workdir / "op.neff").exists()


def test_help_and_version(capsys):
    assert cc.main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: nrtpy-cc compile --framework XLA")
    assert cc.main(["compile", "-h"]) == 0
    assert "--output PATH" in capsys.readouterr().out
    assert cc.main(["--version"]) == 0
    # Tools read the version as the word after "version " on the first line.
    first = capsys.readouterr().out.splitlines()[0]
    assert first.split("version ")[1].split()[0] == nrtpy.__version__
    assert cc.main([]) == 2
    assert capsys.readouterr().out.startswith("usage:")


# -- as a program ----------------------------------------------------------
@pytest.mark.parametrize("program", [
    [str(Path(sys.executable).parent / "nrtpy-cc")],
    [sys.executable, "-m", "nrtpy.cc"],
])
def test_console_script_and_module_run_in_the_working_directory(tmp_path, program):
    (tmp_path / "hlo_module.pb").write_bytes(multiply_add([2, 3]))
    done = subprocess.run([*program, *NKIPY_ARGS], cwd=tmp_path, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1 and NKIPY_IGNORED in done.stderr
    np.testing.assert_array_equal(run_neff(tmp_path / "k.neff"), A * B + A)
    failed = subprocess.run([*program, "compile", "--framework", "XLA", "gone.pb"],
                            cwd=tmp_path, env=child_env(), capture_output=True,
                            text=True, timeout=120)
    assert (failed.returncode, failed.stderr) == (1, "nrtpy-cc: error: gone.pb: no such file\n")
    assert os.access(program[0], os.X_OK)


def test_fifo_module_is_refused_without_blocking(workdir, capsys):
    os.mkfifo(workdir / "fifo.pb")  # no writer: an open() would block
    assert cc.main(["compile", "--framework", "XLA", "fifo.pb", "-o", "f.neff"]) == 1
    assert one_error_line(capsys) == \
        "nrtpy-cc: error: fifo.pb: HLO module is a FIFO, not a regular file"
    assert not (workdir / "f.neff").exists()


@pytest.mark.parametrize("program", [
    [str(Path(sys.executable).parent / "nrtpy-cc")],
    [sys.executable, "-m", "nrtpy.cc"],
])
def test_compiles_without_a_libnrt(tmp_path, program):
    # A compiler needs no runtime: with no library to load, nrtpy-cc
    # still writes the NEFF, and it runs where a library loads.
    (tmp_path / "hlo_module.pb").write_bytes(multiply_add([2, 3]))
    done = subprocess.run([*program, "compile", "--framework", "XLA", "hlo_module.pb",
                           "-o", "k.neff"], cwd=tmp_path,
                          env=child_env(NRTPY_LIBNRT=str(tmp_path / "none.so")),
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    np.testing.assert_array_equal(run_neff(tmp_path / "k.neff"), A * B + A)
