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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # "cflags libs" (in any order, each once) prints both on one line.
    if (argv and len(set(argv)) == len(argv)
            and all(a in _FLAG_COMMANDS for a in argv)):
        print(" ".join(flag for a in argv for flag in _flags(a)))
        return 0

    parser = argparse.ArgumentParser(prog="python -m nrtpy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("libdir", help="folder of libnrt.so.1 and libnrt.so")
    sub.add_parser("includedir", help="folder that holds nrt/nrt.h")
    sub.add_parser("prefix", help="folder with lib/ and include/ (NEURON_ROOT)")
    sub.add_parser("cflags", help="compiler flags; 'cflags libs' prints both")
    sub.add_parser("libs", help="linker flags, with an rpath")
    sub.add_parser("info", help="the libnrt in use, as JSON")
    from nrtpy import _launch

    _launch.add_parser(sub)
    args = parser.parse_args(argv)

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
