"""The bad-input table: every public entry point, called with bad arguments.

Each row is one call (a Python expression over the names of
``make_context``), the exception it must raise, and a regular expression
its message must match; the expression names the bad value, so that a
message which does not say what was wrong fails the row.  The rules the
rows hold the API to:

- a wrong type is TypeError (a bool is never an int, NumPy integers are);
- a wrong value is ValueError: a negative or missing core, a dtype or
  shape that does not match a tensor, an empty or repeated core list, a
  tensor name with a NUL character (libnrt takes names as C strings);
- misuse of live objects is NrtpyError, a runtime failure NrtError.

No row may crash, hang or change anything: rows run in this process
(checking afterwards that the context's tensors still hold their data and
no device memory leaked), except those marked ``SUBPROCESS`` (a FIFO, a
device file, huge sizes) and those that need no runtime at all (``BARE``),
which run in a child process under a timeout.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import nrtpy
import nrtpy.neff
from nrtpy import (
    Nrtpy,
    NrtError,
    NrtpyError,
    NrtpyModel,
    NrtpyTensor,
    SystemTraceSession,
)

HERE = Path(__file__).resolve().parent
T_DATA = np.arange(6, dtype=np.float32).reshape(2, 3)
REF_DATA = bytes(range(16))


def _add(x, y):
    return x + y


def make_context(tmp: Path, live: bool = True) -> dict[str, Any]:
    """The names rows use.  With ``live``, a runtime and its objects: ``t``
    (float32 (2, 3)), ``ref`` (a 16-byte NrtTensor), ``model`` (x + y on
    float32 (2, 3)) with ``ins``/``outs``, ``t_i32``/``t_wide``/``t_core1``
    (tensors the model does not take), ``freed``; always ``neff`` (that
    model's file), ``fifo``, ``garbage``, ``empty``, ``folder``."""
    ns: dict[str, Any] = dict(np=np, nrtpy=nrtpy, ml_dtypes=ml_dtypes,
                              NrtpyTensor=NrtpyTensor, Nrtpy=Nrtpy,
                              NrtpyModel=NrtpyModel,
                              SystemTraceSession=SystemTraceSession,
                              tmp=tmp, f=lambda x: x + 1,
                              a3=np.ones(3, np.float32))
    ns["neff"] = tmp / "add.neff"
    if not ns["neff"].exists():
        x = np.zeros((2, 3), np.float32)
        nrtpy.neff.compile(_add, x, x, path=ns["neff"], name="add")
    for name, data in (("garbage", b"not a neff " * 200), ("empty", b"")):
        ns[name] = tmp / f"{name}.neff"
        ns[name].write_bytes(data)
    ns["folder"] = tmp / "folder"
    ns["folder"].mkdir(exist_ok=True)
    ns["fifo"] = tmp / "fifo.neff"
    if not ns["fifo"].exists():
        os.mkfifo(ns["fifo"])
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    ns["ro"] = ro
    if not live:
        return ns
    rt = nrtpy.get_nrtpy_singleton()
    ns["rt"] = rt
    ns["t"] = NrtpyTensor.from_numpy(T_DATA, name="t")
    ns["ref"] = rt.allocate_tensor(16, name="ref")
    rt.tensor_write(ns["ref"], REF_DATA)
    ns["model"] = NrtpyModel.load_from_neff(ns["neff"])
    ns["m"] = ns["model"].model_ref
    ns["ins"] = {"x": ns["t"], "y": ns["t"]}
    ns["outs"] = {"output_0": NrtpyTensor.from_numpy(np.zeros((2, 3), np.float32))}
    ns["t_i32"] = NrtpyTensor.from_numpy(np.zeros((2, 3), np.int32))
    ns["t_wide"] = NrtpyTensor.from_numpy(np.zeros((2, 4), np.float32))
    ns["t_core1"] = NrtpyTensor.from_numpy(T_DATA, core_id=1)
    ns["freed"] = NrtpyTensor.from_numpy(np.zeros((2, 3), np.float32))
    rt.free_tensor(ns["freed"])
    return ns


# ------------------------------------------------------------------ table
# (id, expression, exception, message regex).  Regexes are searched.

TENSOR_ROWS = [
    # from_numpy: one core-id rule for every entry point
    ("from_numpy-core-true", "NrtpyTensor.from_numpy(a3, core_id=True)", TypeError,
     r"core_id must be an int, got <class 'bool'>: True"),
    ("from_numpy-core-false", "NrtpyTensor.from_numpy(a3, core_id=False)", TypeError,
     r"got <class 'bool'>: False"),
    ("from_numpy-core-np-bool", "NrtpyTensor.from_numpy(a3, core_id=np.True_)", TypeError,
     r"numpy.bool.*True"),
    ("from_numpy-core-neg", "NrtpyTensor.from_numpy(a3, core_id=-1)", ValueError,
     r"^core_id must be non-negative, got -1$"),
    ("from_numpy-core-np-neg", "NrtpyTensor.from_numpy(a3, core_id=np.int64(-3))",
     ValueError, r"non-negative, got np.int64\(-3\)"),
    ("from_numpy-core-missing", "NrtpyTensor.from_numpy(a3, core_id=2)", ValueError,
     r"^core_id 2 does not exist; the visible NeuronCores are core_id 0 to 1$"),
    ("from_numpy-core-np-missing", "NrtpyTensor.from_numpy(a3, core_id=np.uint8(9))",
     ValueError, r"core_id np.uint8\(9\) does not exist"),
    ("from_numpy-core-2**31", "NrtpyTensor.from_numpy(a3, core_id=2**31)", ValueError,
     r"core_id 2147483648 does not exist"),
    ("from_numpy-core-2**70", "NrtpyTensor.from_numpy(a3, core_id=2**70)", ValueError,
     r"core_id 1180591620717411303424 does not exist"),
    ("from_numpy-core-float", "NrtpyTensor.from_numpy(a3, core_id=1.0)", TypeError,
     r"got <class 'float'>: 1.0"),
    ("from_numpy-core-str", "NrtpyTensor.from_numpy(a3, core_id='0')", TypeError,
     r"got <class 'str'>: '0'"),
    ("from_numpy-core-none", "NrtpyTensor.from_numpy(a3, core_id=None)", TypeError,
     r"got <class 'NoneType'>: None"),
    ("from_numpy-core-list", "NrtpyTensor.from_numpy(a3, core_id=[0])", TypeError,
     r"got <class 'list'>: \[0\]"),
    ("from_numpy-core-np-float", "NrtpyTensor.from_numpy(a3, core_id=np.float32(0))",
     TypeError, r"numpy.float32"),
    ("from_numpy-name-int", "NrtpyTensor.from_numpy(a3, name=5)", TypeError,
     r"name must be a str or None, not int"),
    ("from_numpy-name-bytes", "NrtpyTensor.from_numpy(a3, name=b'x')", TypeError,
     r"not bytes"),
    # a name libnrt gets as a C string: a NUL would end it early
    ("from_numpy-name-nul", "NrtpyTensor.from_numpy(a3, name='a\\0b')", ValueError,
     r"^name 'a\\x00b' contains a NUL character, which a tensor name cannot hold"),
    ("from_numpy-name-nul-end", "NrtpyTensor.from_numpy(a3, 'ab\\0')", ValueError,
     r"^name 'ab\\x00' contains a NUL character"),
    ("from_numpy-object-dtype", "NrtpyTensor.from_numpy(np.array([1, None], dtype=object))",
     TypeError, r"dtype\('O'\) hold Python objects"),
    ("from_numpy-object", "NrtpyTensor.from_numpy(object())", TypeError,
     r"dtype\('O'\) hold Python objects"),
    ("from_numpy-no-args", "NrtpyTensor.from_numpy()", TypeError,
     r"missing required argument 'array'"),
    ("from_numpy-bad-keyword", "NrtpyTensor.from_numpy(a3, bogus=1)", TypeError,
     r"unexpected keyword argument 'bogus'"),
    ("from_numpy-too-many", "NrtpyTensor.from_numpy(a3, 'n', 0, 'x')", TypeError,
     r"at most 3 arguments \(4 given\)"),
    ("from_numpy-twice", "NrtpyTensor.from_numpy(a3, 'n', name='m')", TypeError,
     r"multiple values for argument 'name'"),
    # write_from_numpy: dtype and shape, not just the byte count
    ("write-float64-flat", "t.write_from_numpy(np.array([1., 2., 3.]))", ValueError,
     r"^Dtype mismatch: source array of dtype float64 and shape \(3,\), tensor of "
     r"dtype float32 and shape \(2, 3\)"),
    ("write-float64", "t.write_from_numpy(np.zeros((2, 3)))", ValueError,
     r"dtype float64 and shape \(2, 3\), tensor of dtype float32"),
    ("write-int32", "t.write_from_numpy(np.zeros((2, 3), np.int32))", ValueError,
     r"Dtype mismatch: source array of dtype int32"),
    ("write-uint32", "t.write_from_numpy(np.zeros((2, 3), np.uint32))", ValueError,
     r"dtype uint32"),
    ("write-float16", "t.write_from_numpy(np.zeros((2, 3), np.float16))", ValueError,
     r"dtype float16"),
    ("write-bfloat16", "t.write_from_numpy(np.zeros((2, 3), ml_dtypes.bfloat16))",
     ValueError, r"dtype bfloat16"),
    ("write-fp8", "t.write_from_numpy(np.zeros((4, 6), ml_dtypes.float8_e4m3fn))",
     ValueError, r"dtype float8_e4m3fn and shape \(4, 6\)"),
    ("write-complex", "t.write_from_numpy(np.zeros(3, np.complex64))", ValueError,
     r"dtype complex64 and shape \(3,\)"),
    ("write-bool", "t.write_from_numpy(np.zeros((4, 6), bool))", ValueError,
     r"dtype bool"),
    ("write-bytes-dtype", "t.write_from_numpy(np.zeros((2, 3), 'S4'))", ValueError,
     r"dtype \|S4"),
    ("write-unicode", "t.write_from_numpy(np.zeros(6, 'U1'))", ValueError, r"dtype <U1"),
    ("write-structured", "t.write_from_numpy(np.zeros((2, 3), [('a', '<f4')]))",
     ValueError, r"dtype \[\('a', '<f4'\)\]"),
    ("write-swapped-int", "t.write_from_numpy(np.zeros((2, 3), '>i4'))", ValueError,
     r"dtype >i4"),
    ("write-datetime", "t.write_from_numpy(np.zeros((2, 3), 'M8[s]'))", ValueError,
     r"dtype datetime64\[s\]"),
    ("write-transposed", "t.write_from_numpy(np.zeros((3, 2), np.float32))", ValueError,
     r"^Shape mismatch: source array of dtype float32 and shape \(3, 2\), tensor of "
     r"dtype float32 and shape \(2, 3\)"),
    ("write-flat", "t.write_from_numpy(np.zeros(6, np.float32))", ValueError,
     r"Shape mismatch: .*shape \(6,\)"),
    ("write-3d", "t.write_from_numpy(np.zeros((1, 3, 2), np.float32))", ValueError,
     r"shape \(1, 3, 2\)"),
    ("write-larger", "t.write_from_numpy(np.zeros((2, 4), np.float32))", ValueError,
     r"^Size mismatch: source 32 bytes, target 24 bytes$"),
    ("write-smaller", "t.write_from_numpy(np.zeros(5, np.float32))", ValueError,
     r"source 20 bytes, target 24 bytes"),
    ("write-scalar", "t.write_from_numpy(np.float32(1))", ValueError,
     r"source 4 bytes, target 24 bytes"),
    ("write-u8-short", "t.write_from_numpy(np.zeros(23, np.uint8))", ValueError,
     r"source 23 bytes, target 24 bytes"),
    ("write-i8-long", "t.write_from_numpy(np.zeros(25, np.int8))", ValueError,
     r"source 25 bytes"),
    ("write-void-short", "t.write_from_numpy(np.zeros(2, 'V8'))", ValueError,
     r"source 16 bytes"),
    ("write-bytes-short", "t.write_from_numpy(b'x' * 7)", ValueError, r"source 7 bytes"),
    ("write-bytearray-long", "t.write_from_numpy(bytearray(30))", ValueError,
     r"source 30 bytes"),
    ("write-list-of-floats", "t.write_from_numpy([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])",
     ValueError, r"dtype float64 and shape \(2, 3\)"),
    ("write-str", "t.write_from_numpy('abc')", ValueError, r"dtype <U3 and shape \(\)"),
    ("write-tensor", "t.write_from_numpy(t)", TypeError,
     r"takes a NumPy array, not an nrtpy._nrtpy.NrtpyTensor"),
    ("write-nrt-tensor", "t.write_from_numpy(ref)", TypeError,
     r"not an nrtpy._nrtpy.NrtTensor"),
    ("write-none", "t.write_from_numpy(None)", TypeError,
     r"takes a NumPy array \(or numbers\), not None"),
    ("write-object", "t.write_from_numpy(object())", TypeError, r"not <object object"),
    ("write-dict", "t.write_from_numpy({'a': 1})", TypeError, r"not \{'a': 1\}"),
    ("write-object-array", "t.write_from_numpy(np.zeros((2, 3), object))", TypeError,
     r"dtype\('O'\) hold Python objects"),
    ("write-no-args", "t.write_from_numpy()", TypeError, r"exactly one argument \(0 given\)"),
    ("write-two-args", "t.write_from_numpy(T_DATA, T_DATA)", TypeError,
     r"exactly one argument \(2 given\)"),
    ("write-freed", "freed.write_from_numpy(T_DATA)", NrtpyError,
     r"Unable to write to a freed tensor"),
    # numpy(out=)
    ("out-float64-flat", "t.numpy(out=np.zeros(3))", ValueError,
     r"^Dtype mismatch: out array of dtype float64 and shape \(3,\), tensor of dtype "
     r"float32 and shape \(2, 3\)"),
    ("out-int32", "t.numpy(out=np.zeros((2, 3), np.int32))", ValueError, r"dtype int32"),
    ("out-bfloat16", "t.numpy(out=np.zeros((4, 3), ml_dtypes.bfloat16))", ValueError,
     r"dtype bfloat16 and shape \(4, 3\)"),
    ("out-swapped-int", "t.numpy(out=np.zeros((2, 3), '>u4'))", ValueError, r"dtype >u4"),
    ("out-transposed", "t.numpy(out=np.zeros((3, 2), np.float32))", ValueError,
     r"Shape mismatch: out array of dtype float32 and shape \(3, 2\)"),
    ("out-flat", "t.numpy(out=np.zeros(6, np.float32))", ValueError, r"shape \(6,\)"),
    ("out-short", "t.numpy(out=np.zeros(7, np.float32))", ValueError,
     r"^Size mismatch: out has 28 bytes, the tensor 24 bytes$"),
    ("out-u8-long", "t.numpy(out=np.zeros(25, np.uint8))", ValueError, r"out has 25 bytes"),
    ("out-bytearray-short", "t.numpy(out=bytearray(8))", ValueError, r"out has 8 bytes"),
    ("out-strided", "t.numpy(out=np.zeros((2, 6), np.float32)[:, ::2])", ValueError,
     r"ndarray is not C-contiguous"),
    ("out-read-only", "t.numpy(out=ro)", ValueError, r"ndarray is read-only"),
    ("out-bytes", "t.numpy(out=b'x' * 24)", BufferError, r"not writable"),
    ("out-list", "t.numpy(out=[0] * 6)", TypeError, r"not 'list'"),
    ("out-str", "t.numpy(out='abcdef')", TypeError, r"not 'str'"),
    ("out-int", "t.numpy(out=6)", TypeError, r"not 'int'"),
    ("out-object-array", "t.numpy(out=np.zeros((2, 3), object))", TypeError,
     r"dtype\('O'\) hold Python objects"),
    ("out-bad-keyword", "t.numpy(output=np.zeros((2, 3), np.float32))", TypeError,
     r"unexpected keyword argument 'output'"),
    ("out-too-many", "t.numpy(None, None)", TypeError, r"at most 1 arguments \(2 given\)"),
    ("out-freed", "freed.numpy()", NrtpyError, r"Unable to read from a freed tensor"),
    # the constructor
    ("ctor-ref-int", "NrtpyTensor(5, (4,), np.float32)", TypeError,
     r"tensor_ref must be an NrtTensor, not int"),
    ("ctor-ref-tensor", "NrtpyTensor(t, (2, 3), np.float32)", TypeError,
     r"not nrtpy._nrtpy.NrtpyTensor"),
    ("ctor-size", "NrtpyTensor(ref, (5,), np.float32)", ValueError,
     r"shape \(5,\) of dtype\('float32'\) needs 20 bytes, the tensor has 16 bytes"),
    ("ctor-negative-dim", "NrtpyTensor(ref, (-1, 4), np.float32)", ValueError,
     r"shape \(-1, 4\) has a negative dimension"),
    ("ctor-float-dim", "NrtpyTensor(ref, (2.5,), np.float32)", TypeError,
     r"'float' object cannot be interpreted as an integer"),
    ("ctor-str-shape", "NrtpyTensor(ref, 'ab', np.uint8)", TypeError,
     r"'str' object cannot be interpreted as an integer"),
    ("ctor-none-shape", "NrtpyTensor(ref, None, np.uint8)", TypeError,
     r"'NoneType' object is not iterable"),
    ("ctor-too-many-dims", "NrtpyTensor(ref, (1,) * 70, np.uint8)", ValueError,
     r"shape has 70 dimensions"),
    ("ctor-huge", "NrtpyTensor(ref, (2**62, 2**62), np.uint8)", ValueError,
     r"shape \(4611686018427387904, 4611686018427387904\) is too large"),
    ("ctor-bad-dtype", "NrtpyTensor(ref, (4,), 'notadtype')", TypeError, r"notadtype"),
    ("ctor-object-dtype", "NrtpyTensor(ref, (2,), object)", TypeError,
     r"dtype\('O'\) holds Python objects"),
    ("ctor-void0", "NrtpyTensor(ref, 16, 'V0')", ValueError, r"dtype\('V'\) has no item size"),
    ("ctor-name", "NrtpyTensor(ref, 16, np.uint8, name=5)", TypeError,
     r"name must be a str or None, not int"),
    ("ctor-name-nul", "NrtpyTensor(ref, 16, np.uint8, name='r\\0')", ValueError,
     r"^name 'r\\x00' contains a NUL character"),
    ("ctor-no-args", "NrtpyTensor()", TypeError, r"'tensor_ref'"),
]

RUNTIME_ROWS = [
    ("alloc-size-neg", "rt.allocate_tensor(-1)", TypeError, r"got -1"),
    ("alloc-size-float", "rt.allocate_tensor(1.5)", TypeError, r"got float"),
    ("alloc-size-str", "rt.allocate_tensor('8')", TypeError, r"got str"),
    ("alloc-size-none", "rt.allocate_tensor(None)", TypeError, r"got NoneType"),
    ("alloc-size-2**64", "rt.allocate_tensor(2**64)", TypeError, r"got 18446744073709551616"),
    ("alloc-size-0", "rt.allocate_tensor(0)", NrtError, r"cannot allocate a 0-byte tensor"),
    ("alloc-core-neg", "rt.allocate_tensor(16, core_id=-1)", ValueError,
     r"^core_id must be non-negative, got -1$"),
    ("alloc-core-true", "rt.allocate_tensor(16, core_id=True)", TypeError,
     r"got <class 'bool'>: True"),
    ("alloc-core-missing", "rt.allocate_tensor(16, core_id=2)", ValueError,
     r"core_id 2 does not exist"),
    ("alloc-core-float", "rt.allocate_tensor(16, core_id=0.0)", TypeError,
     r"got <class 'float'>: 0.0"),
    ("alloc-name", "rt.allocate_tensor(16, name=b'x')", TypeError,
     r"name must be a str or None, not bytes"),
    ("alloc-name-nul", "rt.allocate_tensor(16, name='x\\0y')", ValueError,
     r"^name 'x\\x00y' contains a NUL character"),
    ("slice-offset", "rt.slice_from_tensor(ref, 17)", NrtpyError,
     r"offset 17 is past the end of the source tensor \(16 bytes\)"),
    ("slice-bound", "rt.slice_from_tensor(ref, 8, 9)", NrtpyError,
     r"The slice \[8, 8 \+ 9\) exceeds the source tensor bound of 16 bytes"),
    ("slice-offset-neg", "rt.slice_from_tensor(ref, -1)", TypeError, r"got -1"),
    ("slice-source", "rt.slice_from_tensor(None)", TypeError, r"NoneType"),
    ("slice-name", "rt.slice_from_tensor(ref, 0, 8, name=5)", TypeError, r"not int"),
    ("slice-name-nul", "rt.slice_from_tensor(ref, 0, 8, name='\\0')", ValueError,
     r"^name '\\x00' contains a NUL character"),
    ("free-int", "rt.free_tensor(5)", TypeError, r"not int"),
    ("free-array", "rt.free_tensor(T_DATA)", TypeError, r"not numpy.ndarray"),
    ("write-bytearray", "rt.tensor_write(ref, bytearray(b'x'))", TypeError, r"bytearray"),
    ("tensor-write-str", "rt.tensor_write(ref, 'ab')", TypeError, r"str"),
    ("write-too-long", "rt.tensor_write(ref, b'x' * 17)", NrtpyError,
     r"Tensor size: 16 bytes; Input size: 17 bytes; Offset: 0 bytes"),
    ("write-offset", "rt.tensor_write(ref, b'x', 16)", NrtpyError, r"Offset: 16 bytes"),
    ("write-offset-neg", "rt.tensor_write(ref, b'x', -1)", TypeError, r"got -1"),
    ("write-offset-huge", "rt.tensor_write(ref, b'x', 2**64)", TypeError,
     r"got 18446744073709551616"),
    ("write-target", "rt.tensor_write(42, b'x')", TypeError, r"not int"),
    ("read-offset", "rt.tensor_read(ref, 17)", NrtpyError, r"Offset: 17 bytes"),
    ("read-size", "rt.tensor_read(ref, 0, 17)", NrtpyError, r"Read size: 17 bytes"),
    ("read-bound", "rt.tensor_read(ref, 8, 9)", NrtpyError,
     r"Read size: 9 bytes; Offset: 8 bytes"),
    ("read-wrap", "rt.tensor_read(ref, 2**63, 2**63)", NrtpyError,
     r"Read size: 9223372036854775808 bytes; Offset: 9223372036854775808 bytes"),
    ("read-size-neg", "rt.tensor_read(ref, 0, -1)", TypeError, r"got -1"),
    ("read-source", "rt.tensor_read(b'x')", TypeError, r"not bytes"),
    ("pybuf-write-list", "rt.tensor_write_from_pybuffer(ref, [1, 2])", RuntimeError,
     r"does not support buffer protocol: TypeError: .*'list'"),
    ("pybuf-write-strided", "rt.tensor_write_from_pybuffer(ref, np.zeros(32, np.uint8)[::2])",
     RuntimeError, r"buffer protocol: ValueError: ndarray is not C-contiguous"),
    ("pybuf-write-object", "rt.tensor_write_from_pybuffer(ref, np.array([None] * 2))",
     RuntimeError, r"TypeError: arrays of dtype dtype\('O'\)"),
    ("pybuf-write-long", "rt.tensor_write_from_pybuffer(ref, np.zeros(17, np.uint8))",
     NrtpyError, r"Input size: 17 bytes"),
    ("pybuf-write-offset", "rt.tensor_write_from_pybuffer(ref, b'xy', 15)", NrtpyError,
     r"Input size: 2 bytes; Offset: 15 bytes"),
    ("pybuf-write-target", "rt.tensor_write_from_pybuffer(5, b'x')", TypeError, r"not int"),
    ("pybuf-read-small", "rt.tensor_read_to_pybuffer(ref, bytearray(8))", NrtpyError,
     r"buffer 8 bytes, read 16 bytes"),
    ("pybuf-read-bytes", "rt.tensor_read_to_pybuffer(ref, b'x' * 16)", RuntimeError,
     r"writable buffer protocol: BufferError: Object is not writable"),
    ("pybuf-read-strided",
     "rt.tensor_read_to_pybuffer(ref, np.zeros((4, 8), np.uint8)[:, ::2])", RuntimeError,
     r"writable buffer protocol: ValueError: ndarray is not C-contiguous"),
    ("pybuf-read-read-only", "rt.tensor_read_to_pybuffer(ref, ro)", RuntimeError,
     r"ValueError: ndarray is read-only"),
    ("pybuf-read-list", "rt.tensor_read_to_pybuffer(ref, [0] * 16)", RuntimeError,
     r"TypeError: .*'list'"),
    ("pybuf-read-offset", "rt.tensor_read_to_pybuffer(ref, bytearray(16), 17)", NrtpyError,
     r"Offset: 17 bytes"),
    ("pybuf-read-size-neg", "rt.tensor_read_to_pybuffer(ref, bytearray(16), 0, -1)",
     TypeError, r"got -1"),
    ("load-missing", "rt.load_model(str(tmp / 'missing.neff'))", NrtError,
     r"NRT_FAILURE.*missing\.neff: No such file"),
    ("load-folder", "rt.load_model(str(folder))", NrtError, r"folder: Is a directory"),
    ("load-garbage", "rt.load_model(str(garbage))", NrtError,
     r"NRT_INVALID.*NEFF header_size is \d+, expected 1024"),
    ("load-empty", "rt.load_model(str(empty))", NrtError, r"empty NEFF image"),
    ("load-path-int", "rt.load_model(5)", TypeError, r"neff_file must be a str, not int"),
    ("load-path-object", "rt.load_model(neff)", TypeError, r"not PosixPath"),
    ("load-core-neg", "rt.load_model(str(neff), -1)", ValueError, r"non-negative, got -1"),
    ("load-core-true", "rt.load_model(str(neff), True)", TypeError, r"<class 'bool'>: True"),
    ("load-core-missing", "rt.load_model(str(neff), 5)", ValueError, r"core_id 5 does not exist"),
    ("load-cc-int", "rt.load_model(str(neff), cc_enabled=1)", TypeError,
     r"expected True or False, got 1"),
    ("load-rank-neg", "rt.load_model(str(neff), rank_id=-1)", TypeError, r"got -1"),
    ("load-world-str", "rt.load_model(str(neff), world_size='1')", TypeError, r"got str"),
    ("unload-int", "rt.unload_model(5)", TypeError, r"model must be an NrtModel, not int"),
    ("info-model", "rt.get_tensor_info(model)", TypeError, r"not NrtpyModel"),
    ("execute-model", "rt.execute(5, {}, {})", TypeError, r"model must be an NrtModel, not int"),
    ("execute-inputs-list", "rt.execute(m, [], {})", TypeError, r"not list"),
    ("execute-input-int", "rt.execute(m, {'x': 5}, {})", TypeError,
     r"must be an NrtTensor or an NrtpyTensor, not int"),
    ("execute-missing", "rt.execute(m, {}, {})", NrtError, r"input 'x' missing"),
    ("execute-input-key-nul", "rt.execute(m, {'x\\0junk': t, 'y': t}, outs)", ValueError,
     r"^inputs key 'x\\x00junk' contains a NUL character"),
    ("execute-output-key-nul", "rt.execute(m, ins, {'output_0\\0': t})", ValueError,
     r"^outputs key 'output_0\\x00' contains a NUL character"),
    ("execute-ntff", "rt.execute(m, {}, {}, 5)", TypeError, r"ntff_name must be a str or None, not int"),
    ("execute-save-trace", "rt.execute(m, {}, {}, None, 1)", TypeError,
     r"expected True or False, got 1"),
    ("nrtpy-second", "Nrtpy()", NrtpyError, r"a previous instance still exists"),
    ("nrtpy-verbose", "Nrtpy(verbose_level='x')", TypeError, r"'str' object"),
    ("configure-active", "nrtpy.configure([0])", NrtpyError, r"runtime is already active"),
    ("memory-neg", "nrtpy.memory_stats(-1)", ValueError, r"non-negative, got -1"),
    ("memory-true", "nrtpy.memory_stats(True)", TypeError, r"<class 'bool'>: True"),
    ("memory-str", "nrtpy.memory_stats('0')", TypeError, r"<class 'str'>: '0'"),
    ("memory-float", "nrtpy.memory_stats(1.5)", TypeError, r"<class 'float'>: 1.5"),
    ("memory-missing", "nrtpy.memory_stats(2)", ValueError, r"core_id 2 does not exist"),
    ("memory-np-missing", "nrtpy.memory_stats(np.int64(7))", ValueError,
     r"core_id np.int64\(7\) does not exist"),
    ("trace-neg", "SystemTraceSession(-1)", ValueError, r"non-negative, got -1"),
    ("trace-true", "SystemTraceSession(True)", TypeError, r"<class 'bool'>: True"),
    ("trace-missing", "SystemTraceSession(99)", ValueError, r"core_id 99 does not exist"),
    ("trace-missing-2", "SystemTraceSession(2)", ValueError, r"core_id 2 does not exist"),
    ("trace-float", "SystemTraceSession(0.0)", TypeError, r"<class 'float'>: 0.0"),
    ("trace-str", "SystemTraceSession('0')", TypeError, r"<class 'str'>: '0'"),
    ("trace-too-many", "SystemTraceSession(0, 1)", TypeError, r"at most 1 argument"),
    ("trace-keyword", "SystemTraceSession(core=0)", TypeError, r"'core'"),
]

MODEL_ROWS = [
    ("call-list", "model([t, t])", TypeError,
     r"^inputs must be a dict of tensor name to NrtpyTensor, got list: \[NrtpyTensor"),
    ("call-none", "model(None)", TypeError, r"inputs must be a dict .*got NoneType: None"),
    ("call-str", "model('x')", TypeError, r"got str: 'x'"),
    ("call-tuple", "model((t, t), outs)", TypeError, r"got tuple"),
    ("call-outputs-list", "model(ins, [outs['output_0']])", TypeError,
     r"outputs must be a dict .*got list"),
    ("call-outputs-int", "model(ins, 5)", TypeError, r"outputs must be a dict .*got int: 5"),
    ("call-key-int", "model({1: t, 'y': t})", TypeError,
     r"inputs keys must be tensor names \(str\), got int: 1"),
    ("call-output-key-none", "model(ins, {None: t})", TypeError,
     r"outputs keys must be .*got NoneType: None"),
    ("call-key-nul", "model({'x\\0': t, 'y': t})", ValueError,
     r"^inputs key 'x\\x00' contains a NUL character, which a tensor name cannot hold"),
    ("call-output-key-nul", "model(ins, {'output_0\\0': outs['output_0']})", ValueError,
     r"^outputs key 'output_0\\x00' contains a NUL character"),
    ("bench-key-nul", "model.benchmark({'x': t, 'y\\0': t})", ValueError,
     r"^inputs key 'y\\x00' contains a NUL character"),
    ("call-missing", "model({'x': t})", ValueError, r"Missing input\(s\) \['y'\]"),
    ("call-unknown", "model({'x': t, 'y': t, 'z': t})", ValueError, r"Unknown input\(s\) \['z'\]"),
    ("call-value-int", "model({'x': t, 'y': 5})", TypeError,
     r"Input 'y' must be an NrtpyTensor, got int"),
    ("call-value-array", "model({'x': t, 'y': T_DATA})", TypeError, r"'y' .*got ndarray"),
    ("call-dtype", "model({'x': t, 'y': t_i32})", ValueError,
     r"Input y: expected dtype float32, got int32"),
    ("call-shape", "model({'x': t, 'y': t_wide})", ValueError,
     r"Input y: expected shape \[2, 3\], got \(2, 4\)"),
    ("call-core", "model({'x': t, 'y': t_core1})", ValueError,
     r"model core_id 0 and tensor core_id 1"),
    ("call-output-dtype", "model(ins, {'output_0': t_i32})", ValueError,
     r"Output output_0: expected dtype float32, got int32"),
    ("call-output-unknown", "model(ins, {'out': t})", ValueError, r"Unknown output\(s\) \['out'\]"),
    ("call-freed", "model({'x': t, 'y': freed})", NrtpyError, r"freed"),
    ("call-ntff", "model(ins, ntff_name=5)", TypeError, r"ntff_name must be a str or None, not int"),
    ("call-keyword", "model(ins, bogus=1)", TypeError, r"unexpected keyword argument 'bogus'"),
    ("call-no-args", "model()", TypeError, r"missing required argument 'inputs'"),
    ("bench-iter-float", "model.benchmark(ins, benchmark_iter=2.0)", TypeError,
     r"^benchmark_iter must be an int, got float: 2.0$"),
    ("bench-iter-true", "model.benchmark(ins, benchmark_iter=True)", TypeError,
     r"got bool: True"),
    ("bench-iter-str", "model.benchmark(ins, benchmark_iter='5')", TypeError, r"got str: '5'"),
    ("bench-iter-none", "model.benchmark(ins, benchmark_iter=None)", TypeError,
     r"got NoneType: None"),
    ("bench-iter-zero", "model.benchmark(ins, benchmark_iter=0)", ValueError,
     r"^benchmark_iter must be at least 1, got 0$"),
    ("bench-iter-neg", "model.benchmark(ins, benchmark_iter=-5)", ValueError, r"got -5"),
    ("bench-iter-np-zero", "model.benchmark(ins, benchmark_iter=np.int64(0))", ValueError,
     r"at least 1, got 0"),
    ("bench-warmup-neg", "model.benchmark(ins, warmup_iter=-1)", ValueError,
     r"^warmup_iter must be a non-negative int, got -1$"),
    ("bench-warmup-float", "model.benchmark(ins, warmup_iter=1.5)", TypeError,
     r"warmup_iter must be an int, got float: 1.5"),
    ("bench-warmup-false", "model.benchmark(ins, warmup_iter=False)", TypeError,
     r"got bool: False"),
    ("bench-mode", "model.benchmark(ins, mode='gpu')", ValueError,
     r"Invalid benchmark mode 'gpu'"),
    ("bench-list", "model.benchmark([t, t])", TypeError, r"inputs must be a dict .*got list"),
    ("bench-none", "model.benchmark(None)", TypeError, r"got NoneType: None"),
    ("bench-outputs-list", "model.benchmark(ins, [t])", TypeError,
     r"outputs must be a dict .*got list"),
    ("bench-missing", "model.benchmark({'y': t})", ValueError, r"Missing input\(s\) \['x'\]"),
    ("from-neff-missing-file", "NrtpyModel.load_from_neff(tmp / 'nope.neff')", NrtError,
     r"nope\.neff: No such file"),
    ("from-neff-folder-path", "NrtpyModel.load_from_neff(folder)", NrtError, r"Is a directory"),
    ("from-neff-garbage-file", "NrtpyModel.load_from_neff(garbage)", NrtError, r"header_size"),
    ("from-neff-path-int", "NrtpyModel.load_from_neff(5)", TypeError, r"not int"),
    ("from-neff-core-true", "NrtpyModel.load_from_neff(neff, core_id=True)", TypeError,
     r"<class 'bool'>: True"),
    ("from-neff-core-neg", "NrtpyModel.load_from_neff(neff, core_id=-1)", ValueError,
     r"non-negative, got -1"),
    ("from-neff-core-missing", "NrtpyModel.load_from_neff(neff, core_id=7)", ValueError,
     r"core_id 7 does not exist"),
    ("from-neff-core-float", "NrtpyModel.load_from_neff(neff, core_id=1.0)", TypeError,
     r"<class 'float'>: 1.0"),
    ("from-neff-name-int", "NrtpyModel.load_from_neff(neff, name=5)", TypeError,
     r"name must be a str or None, got int: 5"),
    ("from-neff-cc-str", "NrtpyModel.load_from_neff(neff, cc_enabled='yes')", TypeError,
     r"got 'yes'"),
]

NEFF_ROWS = [
    ("compile-no-outputs", "nrtpy.neff.compile(lambda x: (), a3, path=tmp / 'o.neff')",
     ValueError, r"<lambda>\(\) returned no outputs \(an empty tuple\)"),
    ("compile-none-output", "nrtpy.neff.compile(lambda x: None, a3, path=tmp / 'o.neff')",
     TypeError, r"unsupported operand of type NoneType"),
    ("compile-name-int", "nrtpy.neff.compile(f, a3, path=tmp / 'o.neff', name=5)", TypeError,
     r"^name must be a str or None, got int: 5$"),
    ("compile-name-bytes", "nrtpy.neff.compile(f, a3, path=tmp / 'o.neff', name=b'n')",
     TypeError, r"got bytes: b'n'"),
    ("compile-output-name-nul",
     "nrtpy.neff.compile(f, a3, path=tmp / 'o.neff', output_names=['o\\0'])", ValueError,
     r"^output name 'o\\x00' contains a NUL character"),
    ("compile-path-folder", "nrtpy.neff.compile(f, a3, path=folder)", IsADirectoryError,
     r"path is a directory.*folder'"),
    ("compile-path-no-folder", "nrtpy.neff.compile(f, a3, path=tmp / 'no' / 'o.neff')",
     FileNotFoundError, r"folder of path does not exist: '.*no/o\.neff'"),
    ("compile-path-int", "nrtpy.neff.compile(f, a3, path=5)", TypeError,
     r"path must be a str or os.PathLike, got int: 5"),
    ("compile-path-none", "nrtpy.neff.compile(f, a3, path=None)", TypeError, r"got NoneType"),
    ("compile-path-missing", "nrtpy.neff.compile(f, a3)", TypeError,
     r"missing 1 required keyword-only argument: 'path'"),
    ("compile-fn-int", "nrtpy.neff.compile(5, a3, path=tmp / 'o.neff')", TypeError,
     r"fn must be a function, got int: 5"),
    ("compile-names-str", "nrtpy.neff.compile(f, a3, path=tmp / 'o.neff', output_names='ab')",
     TypeError, r"output_names must be a sequence of str, got str: 'ab'"),
    ("compile-names-int", "nrtpy.neff.compile(f, a3, path=tmp / 'o.neff', output_names=[3])",
     TypeError, r"output name 3 must be a str, not int"),
    ("compile-names-input", "nrtpy.neff.compile(f, a3, path=tmp / 'o.neff', output_names=['x'])",
     ValueError, r"output name 'x' .*distinct from the inputs"),
    ("compile-names-dot", "nrtpy.neff.compile(f, a3, path=tmp / 'o.neff', output_names=['a.b'])",
     ValueError, r"output name 'a.b'"),
    ("compile-names-count",
     "nrtpy.neff.compile(f, a3, path=tmp / 'o.neff', output_names=['o', 'p'])", ValueError,
     r"2 output names for 1 outputs"),
    ("compile-empty-input", "nrtpy.neff.compile(f, np.zeros(0), path=tmp / 'o.neff')",
     ValueError, r"input 'x' has no elements \(shape \(0,\)\)"),
    ("compile-arity", "nrtpy.neff.compile(f, a3, a3, path=tmp / 'o.neff')", TypeError,
     r"takes 1 positional arguments but 2 example inputs"),
    ("compile-complex", "nrtpy.neff.compile(f, np.zeros(3, np.complex64), path=tmp / 'o.neff')",
     TypeError, r"dtype complex64 is not supported"),
    ("compile-keyword", "nrtpy.neff.compile(f, a3, path=tmp / 'o.neff', bogus=1)", TypeError,
     r"unexpected keyword argument 'bogus'"),
    ("inspect-int", "nrtpy.neff.inspect(5)", TypeError, r"not int"),
    ("inspect-missing", "nrtpy.neff.inspect(tmp / 'nope.neff')", FileNotFoundError,
     r"nope\.neff"),
    ("inspect-folder", "nrtpy.neff.inspect(folder)", IsADirectoryError, r"folder"),
    ("inspect-garbage", "nrtpy.neff.inspect(garbage)", ValueError,
     r"garbage\.neff: not a NEFF"),
    ("inspect-empty", "nrtpy.neff.inspect(empty)", ValueError, r"empty\.neff"),
]

# Rows that could block, crash or take the machine's memory if the checks
# were missing: each runs in a child process, under a timeout.
SUBPROCESS_ROWS = [
    ("load-fifo", "rt.load_model(str(fifo))", NrtError, r"fifo\.neff: .*"),
    ("load-dev-zero", "rt.load_model('/dev/zero')", NrtError, r"/dev/zero"),
    ("inspect-fifo", "nrtpy.neff.inspect(fifo)", OSError, r"fifo\.neff"),
    ("inspect-dev-zero", "nrtpy.neff.inspect('/dev/zero')", OSError, r"/dev/zero"),
    ("alloc-huge", "rt.allocate_tensor(1 << 50)", NrtError,
     r"NRT_RESOURCE.*1125899906842624 bytes requested"),
    ("alloc-huge-2**63", "rt.allocate_tensor(2**63)", NrtError, r"9223372036854775808"),
    ("ctor-wrap", "NrtpyTensor(ref, (2**32, 2**32, 2**32), np.uint8)", ValueError,
     r"is too large"),
    ("write-huge-offset", "rt.tensor_write(ref, b'x', 2**64 - 1)", NrtpyError,
     r"Offset: 18446744073709551615 bytes"),
    ("slice-huge", "rt.slice_from_tensor(ref, 2**64 - 1, 2)", NrtpyError,
     r"18446744073709551615"),
]

# Rows that need no runtime: in a fresh child, before anything starts one,
# on an emulated trn1.32xlarge (32 cores).  Afterwards the child checks
# that NEURON_RT_VISIBLE_CORES was not set.
BARE_ROWS = [
    ("trace-before-runtime", "SystemTraceSession(0)", NrtpyError,
     r"needs a running runtime: start one first, e\.g\. with "
     r"nrtpy\.get_nrtpy_singleton\(\)"),
    ("trace-all-before-runtime", "SystemTraceSession()", NrtpyError, r"get_nrtpy_singleton"),
    ("configure-int", "nrtpy.configure(3)", TypeError, r"not int\. Use \[3\] or \(3,\)"),
    ("configure-bytes", "nrtpy.configure(b'0')", TypeError,
     r"must be an iterable of ints, not bytes: b'0'"),
    ("configure-str", "nrtpy.configure('0-')", TypeError, r"not str: '0-'"),
    ("configure-str-list", "nrtpy.configure('0,1')", TypeError, r"not str: '0,1'"),
    ("configure-bytearray", "nrtpy.configure(bytearray(1))", TypeError,
     r"not bytearray: bytearray\(b'\\x00'\)"),
    ("configure-empty", "nrtpy.configure([])", ValueError, r"visible_cores is empty"),
    ("configure-empty-tuple", "nrtpy.configure(())", ValueError, r"visible_cores is empty"),
    ("configure-duplicate", "nrtpy.configure([0, 0])", ValueError,
     r"lists core 0 twice: \[0, 0\]"),
    ("configure-duplicate-iter", "nrtpy.configure(iter([1, 0, 1]))", ValueError,
     r"core 1 twice"),
    ("configure-missing", "nrtpy.configure([0, 99])", ValueError,
     r"visible_cores: core 99 does not exist; the instance's NeuronCores are 0 to 31"),
    ("configure-decreasing", "nrtpy.configure([1, 0])", ValueError,
     r"visible_cores must be increasing and contiguous \(one range of cores\), "
     r"got \[1, 0\]"),
    ("configure-gap", "nrtpy.configure(range(0, 4, 2))", ValueError,
     r"increasing and contiguous .*got \[0, 2\]"),
    ("configure-negative", "nrtpy.configure([0, -1])", ValueError,
     r"Core ID must be non-negative, got -1"),
    ("configure-bool", "nrtpy.configure([True])", TypeError,
     r"visible_cores must contain integers, got <class 'bool'>: True"),
    ("configure-float", "nrtpy.configure([1.0])", TypeError, r"<class 'float'>: 1.0"),
    ("configure-none-item", "nrtpy.configure([None])", TypeError, r"NoneType'>: None"),
    ("configure-str-item", "nrtpy.configure([0, '1'])", TypeError, r"<class 'str'>: '1'"),
    ("configure-object", "nrtpy.configure(object())", TypeError, r"'object' object is not iterable"),
    ("memory-before-runtime-missing", "nrtpy.memory_stats(32)", ValueError,
     r"core_id 32 does not exist; the visible NeuronCores are core_id 0 to 31"),
]

IN_PROCESS = TENSOR_ROWS + RUNTIME_ROWS + MODEL_ROWS + NEFF_ROWS
ALL_ROWS = IN_PROCESS + SUBPROCESS_ROWS + BARE_ROWS


def check_message(exc: BaseException, expected: type, pattern: str) -> None:
    assert isinstance(exc, expected), f"{type(exc).__name__}: {exc}"
    assert re.search(pattern, str(exc)), f"{str(exc)!r} does not match {pattern!r}"


def test_table_size_and_ids():
    ids = [row[0] for row in ALL_ROWS]
    assert sorted(i for i in ids if ids.count(i) > 1) == []
    assert len(ALL_ROWS) >= 150


# ----------------------------------------------------------- in process


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    from support import quiet_reset

    quiet_reset()
    ns = make_context(tmp_path_factory.mktemp("bad_inputs"))
    ns["T_DATA"] = T_DATA
    yield ns
    ns.clear()
    gc.collect()


@pytest.mark.parametrize("code, exc, pattern",
                         [pytest.param(*row[1:], id=row[0]) for row in IN_PROCESS])
def test_bad_input(ctx, code, exc, pattern):
    gc.collect()
    used = [nrtpy.memory_stats(c).bytes_used for c in (0, 1)]
    with pytest.raises(exc) as ei:
        eval(code, ctx)
    check_message(ei.value, exc, pattern)
    del ei  # (its frames hold what the call allocated before failing)
    # Nothing changed: the tensors hold their data, no memory leaked, no
    # file was left behind.
    np.testing.assert_array_equal(ctx["t"].numpy(), T_DATA)
    assert ctx["rt"].tensor_read(ctx["ref"]) == REF_DATA
    gc.collect()
    assert [nrtpy.memory_stats(c).bytes_used for c in (0, 1)] == used
    assert not list(ctx["tmp"].glob("*.tmp")) and not (ctx["tmp"] / "o.neff").exists()


# ------------------------------------------------------ child processes

CHILD = """
import json, os, sys, traceback
sys.path.insert(0, {here!r})
from pathlib import Path
import test_bad_inputs as table
ns = table.make_context(Path({tmp!r}), live={live!r})
ns["T_DATA"] = table.T_DATA
try:
    eval({code!r}, ns)
    result = {{"raised": None}}
except BaseException as e:
    result = {{"raised": [c.__name__ for c in type(e).__mro__], "message": str(e)}}
result["env"] = os.environ.get("NEURON_RT_VISIBLE_CORES")
print("RESULT " + json.dumps(result))
"""


def run_in_child(tmp: Path, code: str, live: bool) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("NEURON_RT_VISIBLE_CORES", None)
    if not live:
        env["NRTPY_EMU_INSTANCE"] = "trn1.32xlarge"
    # Its own emulated machine: this process holds the cores of its own.
    env["NRTPY_EMU_NAMESPACE"] = f"{env.get('NRTPY_EMU_NAMESPACE', 'bad')}-child"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(here=str(HERE), tmp=str(tmp), live=live,
                                            code=code)],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"child died ({proc.returncode}):\n{proc.stderr[-3000:]}"
    line = [s for s in proc.stdout.splitlines() if s.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize(
    "code, exc, pattern, live",
    [pytest.param(*row[1:], True, id=row[0]) for row in SUBPROCESS_ROWS]
    + [pytest.param(*row[1:], False, id=row[0]) for row in BARE_ROWS])
def test_bad_input_in_child(tmp_path, code, exc, pattern, live):
    result = run_in_child(tmp_path, code, live)
    assert result["raised"] is not None, f"{code} raised nothing"
    assert exc.__name__ in result["raised"], result
    assert re.search(pattern, result["message"]), (result["message"], pattern)
    assert result["env"] is None
    assert not list(tmp_path.glob("*.tmp"))


# ------------------------------------------- fixes beside the table


def test_subpackage_after_plain_import():
    out = subprocess.run(
        [sys.executable, "-c", "import nrtpy, sys; print('nrtpy.neff' in sys.modules); "
         "print(nrtpy.neff.compile.__module__); print('neff' in dir(nrtpy))"],
        capture_output=True, text=True, timeout=60, check=True)
    # not imported by "import nrtpy" (its import time), reachable once asked
    assert out.stdout.split() == ["False", "nrtpy.neff", "True"]


def test_compile_into_a_folder_leaves_nothing(tmp_path):
    folder = tmp_path / "model.neff"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        nrtpy.neff.compile(lambda x: x + 1, np.ones(2, np.float32), path=folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.neff"]
    assert list(folder.iterdir()) == []


def test_copies_of_the_other_byte_order_convert(rt):
    t = NrtpyTensor.from_numpy(np.zeros((2, 3), np.float32))
    big = np.arange(6, dtype=">f4").reshape(2, 3)
    t.write_from_numpy(big)
    np.testing.assert_array_equal(t.numpy(), [[0, 1, 2], [3, 4, 5]])
    assert t.numpy().dtype == np.dtype("<f4")
    out = np.zeros((2, 3), ">f4")
    assert t.numpy(out=out) is out
    np.testing.assert_array_equal(out, big)
    # and a tensor that holds big-endian data takes native arrays
    b = NrtpyTensor.from_numpy(big)
    b.write_from_numpy(np.full((2, 3), 7, np.float32))
    assert b.numpy().dtype == np.dtype(">f4")
    np.testing.assert_array_equal(b.numpy(), np.full((2, 3), 7))


def test_plain_byte_views_and_size_one_dims_are_copies(rt):
    t = NrtpyTensor.from_numpy(np.zeros((2, 3), np.float32))
    src = np.arange(6, dtype=np.float32).reshape(2, 3)
    t.write_from_numpy(src.view(np.uint8))          # bytes, any shape
    np.testing.assert_array_equal(t.numpy(), src)
    t.write_from_numpy(src.reshape(1, 2, 1, 3) * 2)  # the same elements in order
    np.testing.assert_array_equal(t.numpy(), src * 2)
    t.write_from_numpy(bytes((src * 3).data))
    np.testing.assert_array_equal(t.numpy(), src * 3)
    out = np.zeros(24, np.int8)
    assert t.numpy(out=out) is out and out.tobytes() == (src * 3).tobytes()
    void = np.zeros(3, "V8")
    t.numpy(out=void)
    assert void.tobytes() == (src * 3).tobytes()


def test_fp8_into_the_int8_tensors_libnrt_reports(rt):
    # libnrt reports fp8 tensors as int8: fp8 arrays of the same shape fit.
    t = NrtpyTensor.from_numpy(np.zeros(4, np.int8))
    src = np.array([1.0, -2.0, 0.5, 4.0], ml_dtypes.float8_e4m3fn)
    t.write_from_numpy(src)
    out = np.zeros(4, ml_dtypes.float8_e4m3fn)
    t.numpy(out=out)
    np.testing.assert_array_equal(out.astype(np.float32), [1.0, -2.0, 0.5, 4.0])
    with pytest.raises(ValueError, match="Shape mismatch"):
        t.write_from_numpy(src.reshape(2, 2))


def test_numpy_integers_are_core_ids_and_counts(fresh_runtime, tmp_path):
    t = NrtpyTensor.from_numpy(np.zeros(2, np.float32), core_id=np.int64(1))
    assert t.core_id == 1
    assert nrtpy.memory_stats(np.uint8(1)).bytes_used > 0
    x = np.zeros(3, np.float32)
    model = NrtpyModel.load_from_neff(
        nrtpy.neff.compile(lambda x: x + 1, x, path=tmp_path / "p.neff"), core_id=np.int32(1))
    ins = {"x": NrtpyTensor.from_numpy(x, core_id=1)}
    r = model.benchmark(ins, warmup_iter=np.int64(1), benchmark_iter=np.int64(3), mode="host")
    assert (r.iterations, r.warmup_iterations) == (3, 1)
    with SystemTraceSession(np.int16(1)) as trace:
        assert trace.is_started


def test_configure_checks_before_setting(fresh_runtime):
    nrtpy.configure([0, 1])
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "0,1"
    for bad in ([1, 1], [1, 0], [0, 2]):
        with pytest.raises(ValueError):
            nrtpy.configure(bad)
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "0,1"
    assert nrtpy.runtime_info()["visible_cores"] == 2
