"""Hand-built HloModuleProtos that follow nkipy's conventions, for the
nrtpy-cc and compat-layer tests (written with hlo_support's protobuf
writer).

nkipy names each entry parameter with ``frontend_attributes
["neff_input_names"]`` and roots the entry in a ``copy`` whose
``neff_output_names`` names the output (/work/shared/spec/hlo.md).
"""

from __future__ import annotations

from hlo_support import F32, computation, f_bytes, f_int, frontend, instr, module, shape


def multiply_add(dims: list[int], opcode: str = "multiply") -> bytes:
    """``output0 = a <opcode> b + a`` over two f32 arrays, named as nkipy
    names them (inputs ``a`` and ``b``, output ``output0``); parameter 1
    comes first, as XLA may order them."""
    s = shape(F32, dims)
    return module("multiply_add", [computation("main", 1, [
        instr("b.2", "parameter", s, 2, parameter_number=f_int(9, 1),
              attributes=f_bytes(68, frontend(neff_input_names="b"))),
        instr("a.1", "parameter", s, 1,  # parameter_number 0: absent, as proto3 writes it
              attributes=f_bytes(68, frontend(neff_input_names="a"))),
        instr("product.3", opcode, s, 3, operands=(1, 2)),
        instr("sum.4", "add", s, 4, operands=(3, 1)),
        instr("copy.5", "copy", s, 5, operands=(4,),
              attributes=f_bytes(68, frontend(neff_output_names="output0"))),
    ], root=5)], entry_id=1)
