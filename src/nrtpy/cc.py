"""``nrtpy-cc``: neuronx-cc's command line over :func:`nrtpy.neff.compile_hlo`.

Tools that compile for Trainium run AWS's compiler as::

    neuronx-cc compile --framework XLA hlo_module.pb --pipeline compile SaveTemps \\
        --target trn2 --output=kernel.neff --lnc 1 --internal-tensorizer-opt-level=2

``nrtpy-cc`` (also ``python -m nrtpy.cc``) takes the same command line and
writes a NEFF for nrtpy's emulated device instead.  It runs in the working
directory, as neuronx-cc does: relative paths are relative to it.  It reads
``--framework``, the module and ``--output`` (``--output=PATH``, ``-o PATH``;
``file.neff`` when absent, neuronx-cc's default); every other neuronx-cc
option concerns Trainium's code generation, so it is accepted, ignored, and
named in one note on stderr.

An option it does not know takes the next word as its value unless written
``--flag=value``; ``--pipeline`` takes every word up to the next option, as
in neuronx-cc, and ``--enable-*``/``--disable-*``/``--no-*`` take none.  So
name the module before any ignored option that has no value.

``--print-nki`` (neuronx-cc spells it ``--tensorizer-options=--print-nki``,
as nkipy's ``lower_to_nki`` does) also writes the module as an NKI kernel,
``nki.py`` in the working directory (``--print-nki=PATH`` elsewhere), with
:func:`nrtpy.hlo.print_nki`.  ``--pipeline`` without its ``compile`` stage
(``--pipeline tensorize SaveTemps``) stops before the NEFF: nothing but
``nki.py`` is written.  Both files are written only once everything is
known to succeed, so a failure leaves neither.

Exit status: 0 when the NEFF (or nki.py) is written; 1 with one line on stderr when the
module cannot be compiled (missing file, malformed module, an opcode the
emulator does not implement, an instruction that does not print as NKI);
2 for a command line it cannot use (no module,
a framework other than XLA, an unknown command).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

PROG = "nrtpy-cc"
DEFAULT_OUTPUT = "file.neff"  # neuronx-cc's default
DEFAULT_NKI = "nki.py"  # where neuronx-cc's tensorizer prints NKI source
# The pipeline stage that writes the NEFF: a --pipeline without it stops
# before (nkipy's lower_to_nki asks for "tensorize SaveTemps").
NEFF_STAGE = "compile"

USAGE = f"""\
usage: {PROG} compile --framework XLA MODULE.pb [--output OUT.neff] [neuronx-cc options]
       {PROG} --version | --help

Compile an XLA HLO module (a serialized HloModuleProto) into a NEFF for
nrtpy's emulated Neuron device; the command line is neuronx-cc's.

  --framework XLA        the module's front end: only XLA (an HloModuleProto)
  --output PATH, -o PATH the NEFF to write (default {DEFAULT_OUTPUT}, relative
                         to the working directory)
  --print-nki[=PATH]     also write the module as an NKI kernel (Python
                         source, `import nki`): nki.py in the working
                         directory unless PATH is given; neuronx-cc's
                         spelling --tensorizer-options=--print-nki works too
  --pipeline STAGE...    without `compile` (e.g. `tensorize SaveTemps`) no
                         NEFF is written, only what --print-nki asks for
  --version              print the version and exit
  --help, -h             print this help and exit

Other neuronx-cc options (--target, --lnc, --model-type,
--auto-cast, --optlevel/-O, --internal-*, ...) are accepted and ignored,
with one note on stderr naming them.  Exit status: 0 on success, 1 when the
module cannot be compiled, 2 for a command line that cannot be used.
"""

# Prefixes of switches that take no value.
_SWITCH_PREFIXES = ("--enable-", "--disable-", "--no-")


class UsageError(Exception):
    """A command line nrtpy-cc cannot use (exit status 2)."""


@dataclass
class Command:
    """What a neuronx-cc command line asks for."""

    command: str | None = None
    framework: str | None = None
    module: str | None = None
    output: str = DEFAULT_OUTPUT
    pipeline: list[str] | None = None
    print_nki: str | None = None  # where to write nki.py; None: not asked
    ignored: list[str] = field(default_factory=list)
    help: bool = False
    version: bool = False


def _value(argv: Sequence[str], i: int, option: str) -> tuple[str, int]:
    """The value of ``option`` at argv[i]: attached (``--opt=v``) or the next
    word.  Returns (value, index of the last word used)."""
    word = argv[i]
    if "=" in word and word.startswith("--"):
        value = word.split("=", 1)[1]
    elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
        i += 1
        value = argv[i]
    else:
        value = ""
    if not value:
        raise UsageError(f"{option} needs a value")
    return value, i


def parse(argv: Sequence[str]) -> Command:
    """Parse neuronx-cc's command line (without the program name).

    Raises:
        UsageError: an option that needs a value has none, or a second
            module is named.
    """
    cmd = Command()
    i = 0
    while i < len(argv):
        word = argv[i]
        name = word.split("=", 1)[0] if word.startswith("--") else word
        if word in ("-h", "--help"):
            cmd.help = True
        elif word == "--version":
            cmd.version = True
        elif name == "--framework":
            cmd.framework, i = _value(argv, i, name)
        elif name == "--output":
            cmd.output, i = _value(argv, i, name)
        elif word == "-o":
            cmd.output, i = _value(argv, i, word)
        elif word.startswith("-o") and not word.startswith("--"):
            cmd.output = word[2:]
        elif name == "--print-nki":
            cmd.print_nki = word.split("=", 1)[1] if "=" in word else DEFAULT_NKI
            if not cmd.print_nki:
                raise UsageError("--print-nki= needs a path (or no '=')")
        elif name == "--pipeline":
            start = i
            cmd.pipeline = []
            while i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                i += 1
                cmd.pipeline.append(argv[i])
            if "=" in word:
                cmd.pipeline[:0] = word.split("=", 1)[1].split()
            if not cmd.pipeline:
                raise UsageError("--pipeline needs at least one stage")
            if NEFF_STAGE in cmd.pipeline:
                # The whole pipeline runs: its other stages change nothing.
                cmd.ignored.append(" ".join(argv[start:i + 1]))
        elif name == "--tensorizer-options":
            # The tensorizer's own options, one word (which starts with a
            # dash, so it is this option's value even when not attached):
            # --print-nki is read, the others concern Trainium and are ignored.
            if "=" not in word and i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                value, i = _value(argv, i, name)
            words = shlex.split(value)
            if "--print-nki" in words and cmd.print_nki is None:
                cmd.print_nki = DEFAULT_NKI
            rest = [w for w in words if w != "--print-nki"]
            if rest:
                cmd.ignored.append(f"{name}={' '.join(rest)}")
        elif word.startswith("-") and word != "-":
            # Ignored: the option and the words that are its value.
            start = i
            if "=" in word or word.startswith(_SWITCH_PREFIXES):
                pass
            elif word.startswith("-O") and len(word) > 2:
                pass  # -O2
            elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                i += 1
            cmd.ignored.append(" ".join(argv[start:i + 1]))
        elif cmd.command is None:
            cmd.command = word
        elif cmd.module is None:
            cmd.module = word
        else:
            raise UsageError(f"one module at a time: {cmd.module!r} and {word!r} were given")
        i += 1
    return cmd


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def compile_module(cmd: Command) -> Path | None:
    """Compile ``cmd.module`` to ``cmd.output`` (both relative to the working
    directory) with :func:`nrtpy.neff.compile_hlo`, and print it as NKI
    source to ``cmd.print_nki`` when asked.  Returns the NEFF's path (else
    nki.py's; None when the pipeline asks for neither).

    Raises:
        UsageError: no command, a command other than ``compile``, no module,
            or a framework other than XLA.
        FileNotFoundError, IsADirectoryError, PermissionError: the module
            cannot be read.
        ValueError, NotImplementedError: from compile_hlo.
        NkiPrintError: an instruction that does not print as NKI.
    """
    if cmd.command is None:
        raise UsageError("no command: use 'compile' (see --help)")
    if cmd.command != "compile":
        raise UsageError(f"command {cmd.command!r} is not supported: only 'compile'")
    if cmd.framework is None:
        raise UsageError("--framework is required: --framework XLA")
    if cmd.framework.upper() != "XLA":
        raise UsageError(f"framework {cmd.framework!r} is not supported: only XLA "
                         f"(a serialized HloModuleProto)")
    if cmd.module is None:
        raise UsageError("no module: name the HloModuleProto file (MODULE.pb)")
    module = Path(cmd.module)
    if not module.exists():
        raise FileNotFoundError(f"{cmd.module}: no such file")
    if module.is_dir():
        raise IsADirectoryError(f"{cmd.module}: is a directory, not an HloModuleProto file")
    if not os.access(module, os.R_OK):
        raise PermissionError(f"{cmd.module}: not readable")
    write_neff = cmd.pipeline is None or NEFF_STAGE in cmd.pipeline
    output = Path(cmd.output)
    targets = ([output] if write_neff else []) + \
        ([Path(cmd.print_nki)] if cmd.print_nki else [])
    for target in targets:
        if not target.parent.is_dir():
            raise FileNotFoundError(f"{target}: its folder {str(target.parent)!r} "
                                    f"does not exist")

    # (the compiler is imported on use)
    from nrtpy.hlo._compile import module_bytes
    from nrtpy.hlo._print_nki import print_nki
    from nrtpy.neff import compile_hlo

    data = module_bytes(module)
    # The source is printed before the NEFF is compiled and written after
    # it, so that a module either fails to do both leaves no file.
    source = print_nki(data) if cmd.print_nki else None
    written = compile_hlo(data, output) if write_neff else None
    if source is not None:
        nki_path = Path(cmd.print_nki)
        partial = nki_path.with_name(f".{nki_path.name}.{os.getpid()}.tmp")
        try:
            partial.write_text(source)
            os.replace(partial, nki_path)
        finally:
            partial.unlink(missing_ok=True)
        written = written or nki_path
    return written


def version_line(prog: str = PROG) -> str:
    """The first line of ``--version``: '<prog> version <v>' as neuronx-cc
    prints it, which tools parse."""
    from nrtpy import __version__

    return (f"{prog} version {__version__} (nrtpy: XLA HLO for the emulated "
            f"Neuron device, with neuronx-cc's command line)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run nrtpy-cc on ``argv`` (without the program name; ``sys.argv[1:]``
    when None) and return the exit status.  Writes the NEFF, the note on
    ignored options and any error to the process's files; never raises
    for a bad command line or module."""
    argv = sys.argv[1:] if argv is None else list(argv)
    cmd = Command()
    try:
        cmd = parse(argv)
        if cmd.help or not argv:
            print(USAGE, end="")
            return 0 if cmd.help else 2
        if cmd.version:
            print(version_line())
            return 0
        if cmd.ignored:
            print(f"{PROG}: note: ignored neuronx-cc options (they concern Trainium's "
                  f"code generation): {' '.join(cmd.ignored)}", file=sys.stderr)
        compile_module(cmd)
    except UsageError as e:
        print(f"{PROG}: error: {_one_line(str(e))}", file=sys.stderr)
        return 2
    except NotImplementedError as e:
        from nrtpy.hlo._print_nki import NkiPrintError
        if isinstance(e, NkiPrintError):
            print(f"{PROG}: error: --print-nki: cannot print {cmd.module} as NKI: "
                  f"{_one_line(str(e))}", file=sys.stderr)
            return 1
        print(f"{PROG}: error: not supported by the emulator: {_one_line(str(e))}",
              file=sys.stderr)
        return 1
    except OSError as e:
        text = f"{e.filename}: {e.strerror}" if e.strerror else str(e)
        print(f"{PROG}: error: {_one_line(text)}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"{PROG}: error: cannot compile {cmd.module}: {_one_line(str(e))}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
