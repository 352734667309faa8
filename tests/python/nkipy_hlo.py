"""Hand-built HloModuleProtos that follow nkipy's conventions, for the
nrtpy-cc and compat-layer tests (no protobuf or JAX needed).

nkipy names each entry parameter with ``frontend_attributes
["neff_input_names"]`` and roots the entry in a ``copy`` whose
``neff_output_names`` names the output.  Field numbers are XLA's
(``hlo.proto``, ``xla_data.proto``; see /work/shared/spec/hlo.md).
"""

from __future__ import annotations

F32 = 11  # PrimitiveType


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, n: int) -> bytes:
    """A varint field; proto3 leaves zeros out, as XLA's writer does."""
    return _key(field, 0) + _varint(n) if n else b""


def _bytes(field: int, data: bytes | str) -> bytes:
    data = data.encode() if isinstance(data, str) else data
    return _key(field, 2) + _varint(len(data)) + data


def _packed(field: int, values: list[int]) -> bytes:
    return _bytes(field, b"".join(_varint(v) for v in values)) if values else b""


def shape(dims: list[int], element_type: int = F32) -> bytes:
    """A ShapeProto: element_type 2, dimensions 3, layout 5 {minor_to_major 1}."""
    layout = _packed(1, list(reversed(range(len(dims)))))
    return _int(2, element_type) + _packed(3, dims) + _bytes(5, layout)


def _attributes(entries: dict[str, str]) -> bytes:
    return b"".join(_bytes(1, _bytes(1, k) + _bytes(2, v)) for k, v in entries.items())


def instruction(id_: int, name: str, opcode: str, dims: list[int], *,
                operands: tuple[int, ...] = (), parameter_number: int = 0,
                attributes: dict[str, str] | None = None) -> bytes:
    """An HloInstructionProto: name 1, opcode 2, shape 3, parameter_number 9,
    id 35, operand_ids 36, frontend_attributes 68."""
    body = (_bytes(1, name) + _bytes(2, opcode) + _bytes(3, shape(dims))
            + _int(9, parameter_number) + _int(35, id_) + _packed(36, list(operands)))
    if attributes:
        body += _bytes(68, _attributes(attributes))
    return body


def module(name: str, instructions: list[bytes], root_id: int,
           parameters: list[list[int]], result: list[int]) -> bytes:
    """An HloModuleProto of one computation, ``main``, with its program
    shape (parameters 1, result 2) on the computation and the module."""
    program = b"".join(_bytes(1, shape(p)) for p in parameters) + _bytes(2, shape(result))
    computation = (_bytes(1, "main") + b"".join(_bytes(2, i) for i in instructions)
                   + _bytes(4, program) + _int(5, 1) + _int(6, root_id))
    return (_bytes(1, name) + _bytes(2, "main") + _bytes(3, computation)
            + _bytes(4, program) + _int(5, 1) + _int(6, 1))


def multiply_add(dims: list[int], opcode: str = "multiply") -> bytes:
    """``output0 = a <opcode> b + a`` over two f32 arrays, named as nkipy
    names them (inputs ``a`` and ``b``, output ``output0``)."""
    return module("multiply_add", [
        instruction(1, "a.1", "parameter", dims, parameter_number=0,
                    attributes={"neff_input_names": "a"}),
        instruction(2, "b.2", "parameter", dims, parameter_number=1,
                    attributes={"neff_input_names": "b"}),
        instruction(3, "product.3", opcode, dims, operands=(1, 2)),
        instruction(4, "sum.4", "add", dims, operands=(3, 1)),
        instruction(5, "copy.5", "copy", dims, operands=(4,),
                    attributes={"neff_output_names": "output0"}),
    ], root_id=5, parameters=[dims, dims], result=dims)
