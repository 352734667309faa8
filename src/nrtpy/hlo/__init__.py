"""The HLO compiler: XLA ``HloModuleProto`` -> emulator NEFF.

``nrtpy.neff.compile_hlo`` (and ``python -m nrtpy compile-hlo``) is the
public entry point; docs/hlo.md describes it.  The package is NumPy-only at
run time: ``_wire`` reads the protobuf wire format, ``_module`` turns an
HloModuleProto into typed objects, ``_lower`` holds the lowering framework
(the registry of lowerings per opcode and the context they emit ops
through), the ``_lower_*`` modules the lowerings, ``_compile`` the driver; ``_print_nki`` prints a module as
an NKI kernel instead (``print_nki``, ``nrtpy-cc --print-nki``).
"""

from __future__ import annotations

from nrtpy.hlo._compile import compile_hlo
from nrtpy.hlo._print_nki import NkiPrintError, print_nki

__all__ = ["compile_hlo", "print_nki", "NkiPrintError"]
