"""Command line: ``python -m nrtpy COMMAND``.

Commands:

``libdir``
    the folder holding the emulator's ``libnrt.so.1`` and ``libnrt.so``
``includedir``
    the folder holding ``nrt/nrt.h`` and the other libnrt headers
``prefix``
    a folder with ``lib/`` and ``include/``, usable as ``NEURON_ROOT``
``cflags``, ``libs``
    compiler and linker flags (the latter with an rpath); ``cflags libs``
    prints both
``info``
    the libnrt in use, as JSON
``compile-hlo MODULE.pb -o OUT.neff [--name NAME]``
    compile a serialized XLA ``HloModuleProto`` into an emulator NEFF
    (``nrtpy.neff.compile_hlo``); exit status 1 with a one-line reason on
    stderr when the module is malformed or uses what is not supported
``compat install|status|uninstall``
    the opt-in layer that runs code written for Spike and neuronx-cc on
    nrtpy (``python -m nrtpy compat --help``; :mod:`nrtpy.compat`)
``run MODEL.neff --ranks N [--inputs DIR_OR_NPZ] [--output-dir DIR]
[--benchmark ITER] [--save-trace]``
    run a collective NEFF as N ranks, one process and one core each,
    meeting at ``NEURON_RT_ROOT_COMM_ID`` (``python -m nrtpy run --help``)

A C program builds against the emulator as it would against the Neuron
runtime::

    cc app.c $(python -m nrtpy cflags libs)

and a CMake project that looks for ``lib/libnrt.so`` and
``include/nrt/nrt.h`` under ``NEURON_ROOT`` finds them with
``NEURON_ROOT=$(python -m nrtpy prefix)``.  The flags are printed
unquoted, as pkg-config does: the package must not be installed under a
path with spaces for them to be usable in a shell.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

_PKG = Path(__file__).resolve().parent

_FLAG_COMMANDS = ("cflags", "libs")


def _flags(command: str) -> list[str]:
    lib = _PKG / "lib"
    if command == "cflags":
        return [f"-I{_PKG / 'include'}"]
    return [f"-L{lib}", "-lnrt", f"-Wl,-rpath,{lib}"]


def _compile_hlo(module: str, output: str, name: str | None) -> int:
    from nrtpy.neff import compile_hlo

    try:
        compile_hlo(module, output, name=name)
    except (ValueError, NotImplementedError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"python -m nrtpy compile-hlo: {type(exc).__name__}: {reason}",
              file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # "cflags libs" (in any order, each once) prints both on one line.
    if (argv and len(set(argv)) == len(argv)
            and all(a in _FLAG_COMMANDS for a in argv)):
        print(" ".join(flag for a in argv for flag in _flags(a)))
        return 0
    if argv[:1] == ["compat"]:  # (its own parser: nrtpy.compat._install)
        from nrtpy.compat._install import main as compat_main

        return compat_main(argv[1:])

    parser = argparse.ArgumentParser(prog="python -m nrtpy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("libdir", help="folder of libnrt.so.1 and libnrt.so")
    sub.add_parser("includedir", help="folder that holds nrt/nrt.h")
    sub.add_parser("prefix", help="folder with lib/ and include/ (NEURON_ROOT)")
    sub.add_parser("cflags", help="compiler flags; 'cflags libs' prints both")
    sub.add_parser("libs", help="linker flags, with an rpath")
    sub.add_parser("info", help="the libnrt in use, as JSON")
    hlo = sub.add_parser("compile-hlo", help="compile an HloModuleProto (.pb) "
                         "into an emulator NEFF")
    hlo.add_argument("module", help="the serialized HloModuleProto")
    hlo.add_argument("-o", "--output", required=True, help="the NEFF to write")
    hlo.add_argument("--name", help="the NEFF's name (default: the module's)")
    sub.add_parser("compat", help="install|status|uninstall the spike/neuronxcc "
                   "compat layer")
    from nrtpy import _launch

    _launch.add_parser(sub)
    args = parser.parse_args(argv)

    from nrtpy import _nrtpy

    if args.command in ("info", "run") and _nrtpy.LIBNRT_ERROR is not None:
        print(f"python -m nrtpy {args.command}: {_nrtpy.LIBNRT_ERROR}",
              file=sys.stderr)
        return 1
    if args.command == "compile-hlo":
        return _compile_hlo(args.module, args.output, args.name)
    if args.command == "run":
        return _launch.run(args)

    if args.command == "libdir":
        print(_PKG / "lib")
    elif args.command == "includedir":
        print(_PKG / "include")
    elif args.command == "prefix":
        print(_PKG)
    else:
        from nrtpy import runtime_info

        print(json.dumps(runtime_info(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
