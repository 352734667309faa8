#!/usr/bin/env python3
"""Write the emulator-program seeds of the NEFF fuzz target.

Small NEFFs whose programs use every op of docs/neff-emulator-format.md §3
(with broadcasting, every dtype class, negative steps and axes, keepdims,
flattened take/argmax, an out that is also an operand...), written as
tests/fuzz/corpus/neff/prog_*.neff next to the container seeds of
make_corpus.py.  Most are traced with nrtpy.neff.compile; the ops it never
emits (iota) and a few edge cases are written by hand.  compile() stamps a
random uuid and the time, so its members are repacked here into a raw
(uncompressed: mutations then reach the JSON) tar with fixed metadata:
rerunning the script rewrites identical files.  It also writes
tests/fuzz/program.dict, the libFuzzer dictionary of program words (its
ops, attributes and dtypes from _nrtpy.OPS and _nrtpy.DTYPES; with --dict,
only the dictionary).

    .venv/bin/python tests/fuzz/make_program_corpus.py [OUTPUT_DIR | --dict]
"""

import json
import os
import struct
import sys
import tempfile

import ml_dtypes
import numpy as np

import nrtpy.neff

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_corpus  # noqa: E402  (same directory: npy, tar_bytes, neff)

MAX_SIZE = 64 << 10

F32 = np.float32


def x(shape, dtype=F32):
    return np.zeros(shape, dtype)


def compiled(fn, *inputs, **kw):
    """The members of the NEFF compile() writes, as {path: bytes}."""
    with tempfile.TemporaryDirectory() as tmp:
        path = nrtpy.neff.compile(fn, *inputs,
                                  path=os.path.join(tmp, "k.neff"), **kw)
        return make_corpus.members(path)


def repack(files, validate=False):
    """A deterministic raw-tar NEFF of the members."""
    members = sorted(files.items())
    return make_corpus.neff(make_corpus.tar_bytes(members), validate=validate)


# -- traced kernels ------------------------------------------------------

W34 = np.arange(12, dtype=F32).reshape(3, 4) / 7


def unary(a):
    ops = [np.negative, np.absolute, np.exp, np.log, np.sqrt, np.reciprocal,
           np.square, np.tanh, np.sin, np.cos, np.floor, np.ceil, np.sign,
           nrtpy.neff.relu, nrtpy.neff.gelu, nrtpy.neff.sigmoid,
           nrtpy.neff.rsqrt]
    return tuple(op(a) for op in ops) + (np.logical_not(a > 0),)


def unary_f16(a):
    return np.exp(a) + np.tanh(a) * nrtpy.neff.gelu(a) - np.log(a)


def binary_f(a, b):
    return (a + b, a - b, a * b, a / b, a ** b, np.maximum(a, b),
            np.minimum(a, b), a % b, a // b)


def binary_int(a, b):
    return (a + b, a - b, a * b, a / b, a ** 2, np.maximum(a, b),
            np.minimum(a, b), a % b, a // b, -a, np.abs(a), np.sign(a))


def compare(a, b):
    return (a == b, a != b, a < b, a <= b, a > b, a >= b,
            (a > 0) & (b < 1), (a > 0) | (b < 1), (a > 0) ^ (b < 1),
            ~(a > b), np.where(a > b, a, b), np.where(b > 0, 1.5, a))


def casts(a):
    return (a.astype(np.float16), a.astype(ml_dtypes.bfloat16),
            a.astype(ml_dtypes.float8_e4m3fn), a.astype(ml_dtypes.float8_e5m2),
            a.astype(ml_dtypes.float8_e4m3), a.astype(ml_dtypes.float8_e3m4),
            a.astype(np.int8), a.astype(np.uint16), a.astype(np.int64),
            a.astype(np.uint64), a.astype(np.float64), a.astype(np.bool_),
            np.positive(a))


def matmul(a, b, v):
    return (a @ W34, np.matmul(a, b), v @ W34, W34 @ np.ones(4, F32),
            np.matmul(b, b[0]))


def matmul_int(a, b):
    return a @ b, (a.astype(np.float64) @ b.astype(np.float64))


def reduce_f(a):
    return (a.sum(), a.mean(axis=1), a.max(axis=(0, 2), keepdims=True),
            a.min(axis=-1), a.prod(axis=0), a.argmax(), a.argmin(axis=1),
            a.argmax(axis=2, keepdims=True), np.sum(a, axis=(0, 1, 2)))


def reduce_int(a):
    return (a.sum(axis=0), a.mean(), a.max(), a.min(axis=1, keepdims=True),
            a.prod(), a.argmin(), a.argmax(axis=0))


def layout(a, idx):
    t = np.transpose(a, (2, 0, 1))
    return (t, a.reshape(6, 4), np.broadcast_to(a[:, :1, :], (2, 3, 4)),
            np.concatenate([a, a[:, ::-1, :], a[:, 1:2, :]], axis=1),
            a[1, ::-2, 1:4:2], a[None, ..., ::-1], np.take(a, idx, axis=2),
            np.take(a, idx), nrtpy.neff.softmax(a, axis=1),
            nrtpy.neff.softmax(a.astype(np.float16)))


def mixed(a, b):
    c = (a.astype(np.float64) * 2.5 + b) / 3
    d = np.where(c > 0, np.sqrt(np.abs(c)), -np.inf)
    return (d.astype(np.float32), (a > b).sum(axis=0),
            np.maximum(a, np.nan).astype(np.int32))


TRACED = {
    "unary_f32": (unary, (x((2, 3)),)),
    "unary_f16": (unary_f16, (x((4, 5), np.float16),)),
    "binary_f32_broadcast": (binary_f, (x((2, 3)), x((3,)))),
    "binary_bf16": (binary_f, (x((3, 1), ml_dtypes.bfloat16),
                               x((1, 4), ml_dtypes.bfloat16))),
    "binary_int32": (binary_int, (x((2, 3), np.int32), x((2, 1), np.int32))),
    "binary_uint8": (binary_int, (x((5,), np.uint8), x((5,), np.uint8))),
    "compare_where": (compare, (x((2, 3)), x((3,), np.int16))),
    "casts": (casts, (x((3, 2)),)),
    "matmul": (matmul, (x((2, 2, 3)), x((2, 3, 3)), x((3,)))),
    "matmul_int": (matmul_int, (x((2, 3), np.int64), x((3, 2), np.int8))),
    "reduce_f32": (reduce_f, (x((2, 3, 4)),)),
    "reduce_int": (reduce_int, (x((3, 4), np.int16),)),
    "layout": (layout, (x((2, 3, 4)), x((2,), np.int32))),
    "mixed_f64": (mixed, (x((2, 3)), x((2, 3), np.float64))),
}


# -- hand-written programs -----------------------------------------------

def program(buffers, ops):
    return json.dumps({"format": "nrtpy-emulator-program", "version": 1,
                       "buffers": buffers, "ops": ops}).encode()


def io_var(kind, shape, dtype):
    size = int(np.prod(shape, dtype=np.int64)) * np.dtype(
        getattr(ml_dtypes, dtype, None) or dtype).itemsize
    return {"type": kind, "size": size, "shape": shape, "dtype": dtype}


def buf(kind, shape, dtype, **kw):
    return dict({"kind": kind, "dtype": dtype, "shape": shape}, **kw)


def subgraph(sg, variables, buffers, ops, consts=()):
    """Members of one subgraph: def.json, program.json and constants."""
    files = {f"{sg}/def.json": json.dumps(
        {"var": variables, "emulator_program": "program.json"}).encode(),
        f"{sg}/program.json": program(buffers, ops)}
    for name, data in consts:
        files[f"{sg}/{name}"] = data
    return files


def neff_json(*sgs):
    return {"neff.json": json.dumps(
        {"name": "fuzz", "version": "2.0", "generator": "make_program_corpus",
         "subgraphs": list(sgs)}).encode()}


def hand_iota_full():
    """iota over each axis and a scalar; full with nan/inf and ints."""
    v = {"o": io_var("output", [2, 3], "float32"),
         "p": io_var("output", [2, 3], "int8"),
         "q": io_var("output", [], "uint16")}
    b = {"o": buf("output", [2, 3], "float32"),
         "p": buf("output", [2, 3], "int8"),
         "q": buf("output", [], "uint16"),
         "t": buf("temp", [2, 3], "float32"),
         "t3": buf("temp", [3], "float32"),
         "e": buf("temp", [0, 3], "float32"),
         "z": buf("temp", [3, 0, 2], "int64")}
    ops = [{"op": "iota", "out": "o", "axis": 0},
           {"op": "iota", "out": "t", "axis": -1},
           {"op": "add", "in": ["o", "t"], "out": "o"},
           {"op": "iota", "out": "p", "axis": 1},
           {"op": "iota", "out": "q"},
           {"op": "iota", "out": "z", "axis": 2},
           {"op": "full", "out": "e", "value": 1},
           {"op": "full", "out": "t", "value": "nan"},
           {"op": "maximum", "in": ["o", "t"], "out": "o"},
           {"op": "full", "out": "t", "value": "-inf"},
           {"op": "full", "out": "p", "value": -300},
           {"op": "full", "out": "q", "value": 70000.5},
           {"op": "sum", "in": ["e"], "out": "t3", "axes": [0]},
           {"op": "sub", "in": ["o", "t3"], "out": "o"}]
    return dict(neff_json("sg00"), **subgraph("sg00", v, b, ops))


def hand_in_place():
    """Ops whose out is also an operand (computed aside), a const copied
    for alignment, take with negative int8 indices and no axis."""
    w = np.arange(9, dtype=np.float64).reshape(3, 3)
    idx = np.array([-1, 0, 2, -9], np.int8)
    v = {"a": io_var("input", [3, 3], "float64"),
         "w": {"type": "file", "file_name": "w.npy", "size": 72},
         "i": {"type": "file", "file_name": "i.npy", "size": 4},
         "o": io_var("output", [3, 3], "float64"),
         "g": io_var("output", [4], "float64")}
    b = {"a": buf("input", [3, 3], "float64"),
         "w": buf("const", [3, 3], "float64", var="w"),
         "i": buf("const", [4], "int8", var="i"),
         "o": buf("output", [3, 3], "float64"),
         "g": buf("output", [4], "float64")}
    ops = [{"op": "add", "in": ["a", "w"], "out": "o"},
           {"op": "transpose", "in": ["o"], "out": "o", "perm": [1, 0]},
           {"op": "matmul", "in": ["o", "o"], "out": "o"},
           {"op": "softmax", "in": ["o"], "out": "o", "axis": 0},
           {"op": "slice", "in": ["o"], "out": "o", "start": [2, 2],
            "step": [-1, -1]},
           {"op": "take", "in": ["o", "i"], "out": "g"},
           {"op": "prod", "in": ["o"], "out": "o", "axes": [],
            "keepdims": True}]
    # A .npy header of 132 bytes puts the float64 data 4 bytes off
    # alignment in the (512-aligned) tar member: bind_const copies it.
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }"
    header = header.ljust(131 - 10) + "\n"
    odd = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + (
        header.encode())
    assert len(odd) % 8 == 4
    consts = [("w.npy", odd + w.tobytes()),
              ("i.npy", make_corpus.npy("|i1", [4], idx.tobytes()))]
    return dict(neff_json("sg00"), **subgraph("sg00", v, b, ops, consts))


def hand_two_subgraphs():
    """Two programs; the second has zero-size buffers throughout."""
    v0 = {"a": io_var("input", [4], "int32"),
          "o": io_var("output", [2, 2], "int32")}
    b0 = {"a": buf("input", [4], "int32"), "o": buf("output", [2, 2], "int32"),
          "a2": buf("temp", [4, 1], "int32"),
          "r": buf("temp", [4, 1], "int64")}
    ops0 = [{"op": "reshape", "in": ["a"], "out": "o"},
            {"op": "reshape", "in": ["a"], "out": "a2"},
            {"op": "cast", "in": ["a2"], "out": "r"},
            {"op": "argmax", "in": ["r"], "out": "r", "axis": 1,
             "keepdims": True},
            {"op": "broadcast_to", "in": ["o"], "out": "o"},
            {"op": "concatenate", "in": ["o"], "out": "o", "axis": -1}]
    v1 = {"x": io_var("input", [2], "float32"),
          "y": io_var("output", [2], "float32")}
    b1 = {"x": buf("input", [2], "float32"), "y": buf("output", [2], "float32"),
          "e": buf("temp", [4, 0, 2], "float32"),
          "f": buf("temp", [4, 2], "float32"),
          "c": buf("temp", [4, 0, 4], "float32"),
          "s": buf("temp", [0], "int32"),
          "k": buf("temp", [4, 0, 0], "float32")}
    ops1 = [{"op": "full", "out": "e", "value": 2},
            {"op": "sum", "in": ["e"], "out": "f", "axes": [1]},
            {"op": "concatenate", "in": ["e", "e"], "out": "c", "axis": 2},
            {"op": "iota", "out": "s"},
            {"op": "take", "in": ["e", "s"], "out": "k", "axis": 2},
            {"op": "slice", "in": ["e"], "out": "e", "start": [0, 0, 0],
             "step": [1, 1, 1]},
            {"op": "transpose", "in": ["e"], "out": "e", "perm": [0, 1, 2]},
            {"op": "mean", "in": ["f"], "out": "y", "axes": [0]},
            {"op": "add", "in": ["y", "x"], "out": "y"}]
    files = neff_json("sg00", "sg01")
    files.update(subgraph("sg00", v0, b0, ops0))
    files.update(subgraph("sg01", v1, b1, ops1))
    return files


def hand_control():
    """A counted loop around a conditional on an input, a loop in a
    branch, a bool selector and an empty branch."""
    v = {"k": io_var("input", [], "int32"),
         "x": io_var("input", [3], "float32"),
         "y": io_var("output", [3], "float32")}
    b = {"k": buf("input", [], "int32"), "x": buf("input", [3], "float32"),
         "y": buf("output", [3], "float32"),
         "i": buf("temp", [], "int64"), "n": buf("temp", [], "int64"),
         "one": buf("temp", [], "int64"), "go": buf("temp", [], "bool")}
    count = {"op": "while", "in": [], "pred": "go",
             "cond": [{"op": "less", "in": ["i", "n"], "out": "go"}],
             "body": [{"op": "add", "in": ["y", "x"], "out": "y"},
                      {"op": "add", "in": ["i", "one"], "out": "i"}]}
    ops = [{"op": "full", "out": "i", "value": 0},
           {"op": "full", "out": "n", "value": 3},
           {"op": "full", "out": "one", "value": 1},
           {"op": "copy", "in": ["x"], "out": "y"},
           {"op": "conditional", "in": ["k"], "branches": [
               [{"op": "neg", "in": ["y"], "out": "y"}], [count], []]},
           {"op": "less", "in": ["one", "k"], "out": "go"},
           {"op": "conditional", "in": ["go"], "branches": [
               [], [{"op": "full", "out": "i", "value": 0}, count]]}]
    return dict(neff_json("sg00"), **subgraph("sg00", v, b, ops))


HAND = {
    "control": hand_control,
    "iota_full": hand_iota_full,
    "in_place": hand_in_place,
    "two_subgraphs": hand_two_subgraphs,
}


def corpus():
    out = {}
    for name, (fn, inputs) in TRACED.items():
        out[f"prog_{name}.neff"] = repack(compiled(fn, *inputs, name=name))
    for name, make in HAND.items():
        out[f"prog_{name}.neff"] = repack(make())
    # The same program with the payload hash checked.
    out["prog_layout_validated.neff"] = repack(
        compiled(layout, x((2, 3, 4)), x((2,), np.int32), name="layout"),
        validate=True)
    for name, data in out.items():
        assert len(data) < MAX_SIZE, (name, len(data))
    return out


def dictionary():
    """libFuzzer dictionary: the words of programs, quoted as in JSON: the
    op names, attribute keys and dtype names from the tables the extension
    generates from the emulator's own lists (_nrtpy.OPS, _nrtpy.DTYPES)."""
    from nrtpy import _nrtpy

    ops = list(_nrtpy.OPS)
    attrs = sorted({a for row in _nrtpy.OPS.values() for a in row["attrs"]})
    dtypes = [d for d in _nrtpy.DTYPES if d != "unknown"]
    words = ["format", "version", "buffers", "ops", "kind", "dtype", "shape",
             "var", "op", "in", "out", "input", "output", "const", "temp",
             "file", "file_name", "size", "type", "emulator_program", "nan",
             "inf", "-inf"] + attrs + ops + dtypes
    lines = ["# libFuzzer dictionary of the NEFF fuzz target: the words of",
             "# emulator programs.  Written by make_program_corpus.py."]
    lines += ['"\\"%s\\""' % w for w in dict.fromkeys(words)]
    lines += ['"%s"' % w for w in ["[]", "[0]", "[1]", "[-1]", "[0, 0]",
                                   "null", "true", "false",
                                   "-9223372036854775808",
                                   "9223372036854775807", "4294967296",
                                   "1e308"]]
    return "\n".join(lines) + "\n"


def write_dictionary(here):
    with open(os.path.join(here, "program.dict"), "w") as f:
        f.write(dictionary())


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "corpus", "neff")
    os.makedirs(dest, exist_ok=True)
    files = corpus()
    for name, data in sorted(files.items()):
        with open(os.path.join(dest, name), "wb") as f:
            f.write(data)
    write_dictionary(here)
    print("wrote %d files to %s, and program.dict" % (len(files), dest))


if __name__ == "__main__":
    if sys.argv[1:] == ["--dict"]:  # the dictionary only, the corpus as is
        write_dictionary(os.path.dirname(os.path.abspath(__file__)))
    else:
        main()
