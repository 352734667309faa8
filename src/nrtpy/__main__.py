"""Command line: ``python -m nrtpy {libdir,includedir,info}``.

``libdir`` prints the folder holding the emulator's ``libnrt.so.1`` and
``includedir`` the folder holding ``nrt/nrt.h``, so a C program can build
against the emulator::

    cc app.c -I"$(python -m nrtpy includedir)" \\
       -L"$(python -m nrtpy libdir)" -l:libnrt.so.1 \\
       -Wl,-rpath,"$(python -m nrtpy libdir)"
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nrtpy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("libdir", help="folder of the emulator's libnrt.so.1")
    sub.add_parser("includedir", help="folder that holds nrt/nrt.h")
    sub.add_parser("info", help="the libnrt in use, as JSON")
    args = parser.parse_args(argv)

    if args.command == "libdir":
        print(_PKG / "lib")
    elif args.command == "includedir":
        print(_PKG / "include")
    else:
        from nrtpy import runtime_info

        print(json.dumps(runtime_info(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
