"""HLO compiler: module input forms, naming (JAX's and nkipy's
conventions), aliasing, the command line, malformed and unsupported
modules (each a clear exception, nothing written), a 5,000-instruction module."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor
from nrtpy.hlo import _wire

from hlo_support import (F32, PRED, S32, TUPLE, check_jax, compile_jax, computation,
                         f_bytes, f_floats, f_int, f_packed, frontend, instr,
                         jax, jnp, module, run_neff, shape)
from support import child_env

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.full((2, 3), 0.5, np.float32)


def inspect_io(path):
    info = nrtpy.neff.inspect(path)
    return ([(i["name"], i["shape"], i["dtype"]) for i in info["inputs"]],
            [(o["name"], o["shape"], o["dtype"]) for o in info["outputs"]])


def nkipy_module(alias=True, reverse_params=True):
    """What nkipy writes for `def kernel(a, b): b += a; return a * 2`:
    neff_input_names / neff_output_names, b updated in place."""
    s23 = shape(F32, (2, 3))
    # (parameter_number 0 is absent, as proto3 writes it)
    pa = instr("a.1", "parameter", s23, 1,
               frontend_attributes=f_bytes(68, frontend(neff_input_names="a")))
    pb = instr("b.2", "parameter", s23, 2,
               parameter_number=f_int(9, 1),
               frontend_attributes=f_bytes(68, frontend(neff_input_names="b.must_alias_input")))
    c2 = instr("c", "constant", shape(F32), 3,
               literal=f_bytes(8, f_bytes(1, shape(F32)) + f_floats(8, [2.0])))
    bc = instr("bc", "broadcast", s23, 4, [3])
    mul = instr("mul", "multiply", s23, 5, [1, 4])
    add = instr("add", "add", s23, 6, [2, 1])
    root = instr("out", "tuple", shape(TUPLE, tuple_shapes=[s23, s23]), 7, [5, 6],
                 frontend_attributes=f_bytes(68, frontend(neff_output_names="output0,b")))
    params = [pb, pa] if reverse_params else [pa, pb]
    comp = computation("main", 1, params + [c2, bc, mul, add, root], 7)
    extra = b""
    if alias:
        entry = f_packed(1, [1]) + f_int(2, 1) + f_int(4, 2)
        extra = f_bytes(8, f_bytes(1, entry))
    return module("kernel", [comp], 1, extra)


# -- input forms and naming -------------------------------------------------------


def test_input_forms(tmp_path):
    def f(x, y):
        return x * y + 1.0

    lowered = jax.jit(f).lower(A, B)
    hlo = lowered.compiler_ir("hlo")
    raw = hlo.as_serialized_hlo_module_proto()
    (tmp_path / "m.pb").write_bytes(raw)
    for i, form in enumerate([raw, bytearray(raw), memoryview(raw),
                              str(tmp_path / "m.pb"), tmp_path / "m.pb", hlo,
                              lowered]):
        path = nrtpy.neff.compile_hlo(form, tmp_path / f"m{i}.neff")
        assert path == tmp_path / f"m{i}.neff"
        ins, outs = inspect_io(path)
        assert ins == [("x", [2, 3], "float32"), ("y", [2, 3], "float32")]
        assert outs == [("output0", [2, 3], "float32")]
        np.testing.assert_array_equal(run_neff(path, {"x": A, "y": B})["output0"],
                                      A * B + 1)
    assert nrtpy.neff.inspect(tmp_path / "m0.neff")["header"]["name"] == "jit_f"
    with pytest.raises(TypeError, match="HloModuleProto"):
        nrtpy.neff.compile_hlo(42, tmp_path / "bad.neff")


def test_names_arguments(tmp_path):
    def f(x, y):
        return x + y, x - y

    path = nrtpy.neff.compile_hlo(jax.jit(f).lower(A, B), tmp_path / "n.neff",
                                  name="kern", input_names=["p", "q"],
                                  output_names=["s", "d"])
    ins, outs = inspect_io(path)
    assert [n for n, *_ in ins] == ["p", "q"]
    assert [n for n, *_ in outs] == ["s", "d"]
    assert nrtpy.neff.inspect(path)["header"]["name"] == "kern"
    with pytest.raises(ValueError, match="duplicate tensor name 'p'"):
        nrtpy.neff.compile_hlo(jax.jit(f).lower(A, B), tmp_path / "d.neff",
                               input_names=["p", "q"], output_names=["p", "r"])
    with pytest.raises(ValueError, match="1 names for 2"):
        nrtpy.neff.compile_hlo(jax.jit(f).lower(A, B), tmp_path / "d.neff",
                               input_names=["p"])
    with pytest.raises(ValueError, match="reserved"):
        nrtpy.neff.compile_hlo(jax.jit(f).lower(A, B), tmp_path / "d.neff",
                               input_names=["tmp.0", "q"])
    assert not (tmp_path / "d.neff").exists()


def test_names_with_nul_are_refused(tmp_path):
    """Tensor names reach libnrt as C strings, where a NUL would end one
    early: refused with ValueError naming them, whether given as arguments
    or read from the module's frontend attributes."""
    for kw, shown in ((dict(input_names=["a\0x", "b"]), "input name 'a\\x00x'"),
                      (dict(output_names=["o", "p\0"]), "output name 'p\\x00'")):
        with pytest.raises(ValueError, match=re.escape(shown) + " contains a NUL"):
            nrtpy.neff.compile_hlo(nkipy_module(alias=False), tmp_path / "n.neff", **kw)
    s23 = shape(F32, (2, 3))
    p = instr("p.1", "parameter", s23, 1,
              frontend_attributes=f_bytes(68, frontend(neff_input_names="p\0q")))
    comp = computation("main", 1, [p, instr("neg", "negate", s23, 2, [1])], 2)
    with pytest.raises(ValueError, match=r"input name 'p\\x00q' contains a NUL"):
        nrtpy.neff.compile_hlo(module("m", [comp], 1), tmp_path / "n.neff")
    assert not (tmp_path / "n.neff").exists()


def test_jax_pytree_names(tmp_path):
    def f(params, x, unused):
        return jnp.tanh(x @ params["w"] + params["b"])

    params = {"w": np.ones((3, 4), np.float32), "b": np.zeros(4, np.float32)}
    path = nrtpy.neff.compile_hlo(jax.jit(f).lower(params, A, B), tmp_path / "p.neff")
    ins, _ = inspect_io(path)
    names = [n for n, *_ in ins]
    # pytree leaves in sorted-key order; JAX drops the unused parameter
    assert names == ["params__b__", "params__w__", "x"]
    got = run_neff(path, dict(zip(names, [params["b"], params["w"], A])))
    np.testing.assert_allclose(got["output0"], np.tanh(A @ params["w"]), rtol=1e-6)


def test_nkipy_names_and_in_place_alias(tmp_path):
    path = nrtpy.neff.compile_hlo(nkipy_module(), tmp_path / "k.neff")
    ins, outs = inspect_io(path)
    assert ins == [("a", [2, 3], "float32"), ("b.must_alias_input", [2, 3], "float32")]
    assert outs == [("output0", [2, 3], "float32"), ("b", [2, 3], "float32")]
    model = NrtpyModel.load_from_neff(path)
    b = NrtpyTensor.from_numpy(B.copy())
    out = model(inputs={"a": NrtpyTensor.from_numpy(A), "b.must_alias_input": b})
    assert out["b"] is b  # the input tensor, updated in place
    np.testing.assert_array_equal(b.numpy(), B + A)
    np.testing.assert_array_equal(out["output0"].numpy(), A * 2)
    # Executed again: b accumulates.
    model(inputs={"a": NrtpyTensor.from_numpy(A), "b.must_alias_input": b})
    np.testing.assert_array_equal(b.numpy(), B + 2 * A)


def test_jax_donation_becomes_must_alias_pair(tmp_path):
    def step(state, x):
        return state * 0.5 + x, jnp.sum(x)

    lowered = jax.jit(step, donate_argnums=0).lower(A, B)
    path = nrtpy.neff.compile_hlo(lowered, tmp_path / "s.neff")
    ins, outs = inspect_io(path)
    assert [n for n, *_ in ins] == ["state.must_alias_input", "x"]
    assert [n for n, *_ in outs] == ["state", "output1"]
    model = NrtpyModel.load_from_neff(path)
    st = NrtpyTensor.from_numpy(A.copy())
    out = model(inputs={"state.must_alias_input": st, "x": NrtpyTensor.from_numpy(B)})
    assert out["state"] is st
    np.testing.assert_array_equal(st.numpy(), A * 0.5 + B)
    assert out["output1"].numpy() == pytest.approx(B.sum())


def test_cli(tmp_path):
    raw = jax.jit(lambda x: x * 3).lower(A).compiler_ir("hlo").as_serialized_hlo_module_proto()
    (tmp_path / "m.pb").write_bytes(raw)
    run = subprocess.run([sys.executable, "-m", "nrtpy", "compile-hlo", "m.pb",
                          "-o", "out.neff"], cwd=tmp_path, env=child_env(),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    np.testing.assert_array_equal(run_neff(tmp_path / "out.neff", {"x": A})["output0"], A * 3)
    (tmp_path / "bad.pb").write_bytes(raw[:100])  # inside a computation
    run = subprocess.run([sys.executable, "-m", "nrtpy", "compile-hlo", "bad.pb",
                          "-o", "bad.neff"], cwd=tmp_path, env=child_env(),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert len(run.stderr.strip().splitlines()) == 1
    assert "ValueError" in run.stderr and "byte offset" in run.stderr
    assert not (tmp_path / "bad.neff").exists()


# -- malformed and unsupported modules ----------------------------------------------


def simple(ops, root, params=1, extra=b""):
    s2 = shape(F32, (2,))
    ps = [instr(f"p{i}", "parameter", s2, 100 + i, parameter_number=f_int(9, i))
          for i in range(params)]
    return module("m", [computation("main", 1, ps + ops, root)], 1, extra)


def assert_nothing_written(tmp_path):
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".neff", ".tmp")) == []


@pytest.mark.parametrize("cut", [1, 7, 40])
def test_truncated(tmp_path, cut):
    raw = nkipy_module()
    with pytest.raises(ValueError, match="byte offset"):
        nrtpy.neff.compile_hlo(raw[:-cut], tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_empty_and_garbage(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        nrtpy.neff.compile_hlo(b"", tmp_path / "t.neff")
    with pytest.raises(ValueError, match="byte offset 0"):
        nrtpy.neff.compile_hlo(b"\xff" * 12, tmp_path / "t.neff")
    with pytest.raises(ValueError, match="wire type 7"):
        nrtpy.neff.compile_hlo(b"\x0f", tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_wrong_wire_type(tmp_path):
    # the opcode (field 2, a string) written as a varint
    bad = f_bytes(1, "p0") + f_int(2, 7) + f_bytes(3, shape(F32, (2,)))
    raw = module("m", [computation("main", 1, [bad], 0)], 1)
    with pytest.raises(ValueError, match=r"field 2 at byte offset \d+: wire type 0"):
        nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_unknown_opcode(tmp_path):
    raw = simple([instr("weird.3", "frobnicate", shape(F32, (2,)), 1, [100])], 1)
    with pytest.raises(NotImplementedError,
                       match=r"'frobnicate'.*'weird\.3'.*computation 'main'"):
        nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def argmax_module(or_operands):
    """argmax of f32[4] as JAX writes it (a variadic reduce of values and
    indices), its reducer's ``or`` given ``or_operands``."""
    f, i, p = shape(F32), shape(S32), shape(PRED)
    reducer = computation("argmax_reducer", 2, [
        instr("av", "parameter", f, 10, parameter_number=f_int(9, 0)),
        instr("ai", "parameter", i, 11, parameter_number=f_int(9, 1)),
        instr("bv", "parameter", f, 12, parameter_number=f_int(9, 2)),
        instr("bi", "parameter", i, 13, parameter_number=f_int(9, 3)),
        instr("gt", "compare", p, 14, [10, 12], cmp=f_bytes(63, "GT")),
        instr("nan", "compare", p, 15, [10, 10], cmp=f_bytes(63, "NE")),
        instr("keep", "or", p, 16, or_operands),
        instr("v", "select", f, 17, [16, 10, 12]),
        instr("eq", "compare", p, 20, [10, 12], cmp=f_bytes(63, "EQ")),
        instr("lt", "compare", p, 21, [11, 13], cmp=f_bytes(63, "LT")),
        instr("tie", "and", p, 22, [20, 21]),
        instr("first", "or", p, 23, [16, 22]),
        instr("i", "select", i, 18, [23, 11, 13]),
        instr("t", "tuple", shape(TUPLE, tuple_shapes=[f, i]), 19, [17, 18])], 19)
    entry = computation("main", 1, [
        instr("x", "parameter", shape(F32, (4,)), 1, parameter_number=f_int(9, 0)),
        instr("k", "iota", shape(S32, (4,)), 2),
        instr("lo", "constant", f, 3,
              literal=f_bytes(8, f_bytes(1, f) + f_floats(8, [-np.inf]))),
        instr("zero", "constant", i, 4,
              literal=f_bytes(8, f_bytes(1, i) + f_packed(4, [0]))),
        instr("r", "reduce", shape(TUPLE, tuple_shapes=[f, i]), 5, [1, 2, 3, 4],
              dims=f_packed(14, [0]), called=f_packed(38, [2])),
        instr("argmax", "get-tuple-element", i, 6, [5], index=f_int(13, 1))], 6)
    return module("m", [reducer, entry], 1)


def test_argmax_reducer_compiles(tmp_path):
    path = nrtpy.neff.compile_hlo(argmax_module([14, 15]), tmp_path / "t.neff")
    x = np.array([1.0, 7.0, 3.0, 7.0], np.float32)
    got = run_neff(path, {"x": x})
    assert [v.tolist() for v in got.values()] == [[1]]  # a scalar is [1]


def test_reducer_with_an_operand_missing(tmp_path):
    # A one-byte mutation of a JAX module: the reducer's `or` lost an
    # operand.  It is a malformed module naming its instruction, never an
    # internal exception.
    with pytest.raises(ValueError, match=r"malformed HLO: instruction 'keep' \(or\) "
                                         r"in computation 'argmax_reducer': has 1 "
                                         r"operands, or takes 2"):
        nrtpy.neff.compile_hlo(argmax_module([14]), tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_cycle(tmp_path):
    s2 = shape(F32, (2,))
    raw = simple([instr("a", "add", s2, 1, [100, 2]), instr("b", "negate", s2, 2, [1])], 2)
    with pytest.raises(ValueError, match="cycle"):
        nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_call_cycle(tmp_path):
    s2 = shape(F32, (2,))
    p = instr("p", "parameter", s2, 1)
    c = instr("c", "call", s2, 2, [1], called=f_packed(38, [2]))
    comp2 = computation("sub", 2, [p, c], 2)
    comp1 = computation("main", 1, [instr("q", "parameter", s2, 1),
                                    instr("c", "call", s2, 2, [1], called=f_packed(38, [2]))], 2)
    with pytest.raises(ValueError, match="calls itself"):
        nrtpy.neff.compile_hlo(module("m", [comp2, comp1], 1), tmp_path / "t.neff")


def test_parameter_number_out_of_range(tmp_path):
    s2 = shape(F32, (2,))
    raw = module("m", [computation("main", 1, [
        instr("p", "parameter", s2, 1, parameter_number=f_int(9, 3))], 1)], 1)
    with pytest.raises(ValueError, match=r"parameter numbers \[3\]"):
        nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_shape_mismatch(tmp_path):
    s3 = shape(F32, (3,))
    raw = simple([instr("n", "negate", s3, 1, [100])], 1)
    with pytest.raises(ValueError, match=r"'n' \(negate\).*shape"):
        nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    raw = simple([instr("r", "reshape", s3, 1, [100])], 1)
    with pytest.raises(ValueError, match="element count"):
        nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    raw = simple([instr("t", "transpose", shape(F32, (2,)), 1, [100],
                        dims=f_packed(14, [1]))], 1)
    with pytest.raises(ValueError, match="permutation"):
        nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_operand_missing_and_duplicate_ids(tmp_path):
    s2 = shape(F32, (2,))
    with pytest.raises(ValueError, match="operand id 77"):
        nrtpy.neff.compile_hlo(simple([instr("n", "negate", s2, 1, [77])], 1),
                               tmp_path / "t.neff")
    with pytest.raises(ValueError, match="same id"):
        nrtpy.neff.compile_hlo(simple([instr("n", "negate", s2, 100, [100])], 100),
                               tmp_path / "t.neff")


def test_duplicate_parameter_names(tmp_path):
    s2 = shape(F32, (2,))
    ps = [instr("x.1", "parameter", s2, 1),
          instr("x.2", "parameter", s2, 2, parameter_number=f_int(9, 1))]
    raw = module("m", [computation("main", 1, ps + [instr("a", "add", s2, 3, [1, 2])], 3)], 1)
    with pytest.raises(ValueError, match="duplicate tensor name 'x'"):
        nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_unsupported_reducer(tmp_path):
    def f(x):
        return jax.lax.reduce(x, np.float32(0), lambda a, b: a * 2 + b, (0,))

    with pytest.raises(NotImplementedError, match="reduce.*to_apply"):
        nrtpy.neff.compile_hlo(jax.jit(f).lower(A), tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_wire_reader():
    # negative int64 (10-byte varint), packed and unpacked repeated fields
    raw = f_int(1, -5) + f_packed(2, [1, 300, -1]) + f_int(2, 7) + \
        f_floats(3, [1.5]) + b"\x1d" + np.float32(2.5).tobytes()
    m = _wire.Message(raw)
    assert m.int64(1) == -5
    assert m.ints(2) == [1, 300, -1, 7]
    assert m.fixed(3, "<f4").tolist() == [1.5, 2.5]
    with pytest.raises(ValueError, match="wire type 0"):
        m.string(1)
    with pytest.raises(ValueError, match="runs past"):
        _wire.Message(b"\x0a\x05ab")
    deep = b""
    for _ in range(70):
        deep = f_bytes(1, deep)
    msg = _wire.Message(deep)
    with pytest.raises(ValueError, match="nested more than 64"):
        for _ in range(70):
            msg = msg.message(1)


# -- a large module -----------------------------------------------------------------------


def test_compile_5000_instructions(tmp_path):
    # Its speed (the issue: under 2 s) is measured by bench/bench_hlo.py,
    # not here: a timed test fails on a loaded machine.
    s = shape(F32, (4, 8))
    ins = [instr("p", "parameter", s, 1), instr("q", "parameter", s, 2,
                                                parameter_number=f_int(9, 1))]
    prev = 1
    for i in range(3, 5003):
        op = ("add", "multiply", "maximum", "subtract")[i % 4]
        ins.append(instr(f"v.{i}", op, s, i, [prev, 2]))
        prev = i
    raw = module("big", [computation("main", 1, ins, prev)], 1)
    path = nrtpy.neff.compile_hlo(raw, tmp_path / "big.neff")
    x = np.full((4, 8), 0.25, np.float32)
    y = np.full((4, 8), 1.0, np.float32)
    got = run_neff(path, {"p": x, "q": y})["output0"]
    want = x.copy()
    for i in range(3, 5003):
        want = {0: want + y, 1: want * y, 2: np.maximum(want, y), 3: want - y}[i % 4]
    np.testing.assert_array_equal(got, want)


def test_outputs_that_are_inputs_or_constants(tmp_path):
    def f(x, y):
        return x, jnp.float32(3.0) * jnp.ones(2), y, x

    path = nrtpy.neff.compile_hlo(jax.jit(f).lower(A, B), tmp_path / "o.neff")
    got = run_neff(path, {"x": A, "y": B})
    np.testing.assert_array_equal(got["output0"], A)
    np.testing.assert_array_equal(got["output1"], [3.0, 3.0])
    np.testing.assert_array_equal(got["output2"], B)
    np.testing.assert_array_equal(got["output3"], A)


def test_neff_output_names_count_mismatch(tmp_path):
    s2 = shape(F32, (2,))
    ins = [instr("p", "parameter", s2, 1),
           instr("n", "negate", s2, 2, [1],
                 fa=f_bytes(68, frontend(neff_output_names="a,b")))]
    raw = module("m", [computation("main", 1, ins, 2)], 1)
    with pytest.raises(ValueError, match="neff_output_names names 2 outputs"):
        nrtpy.neff.compile_hlo(raw, tmp_path / "t.neff")
    assert_nothing_written(tmp_path)


def test_lazy_broadcast_written_per_op_list():
    # A broadcast first written out inside a nested op list (a loop body or
    # branch, which may not run) is written again when used outside it; one
    # written outside is reused inside.
    from nrtpy.hlo._lower import Broadcast, Lowering
    from nrtpy.hlo._module import parse_module

    ctx = Lowering(parse_module(nkipy_module()))
    c = ctx.const(np.ones((1, 3), np.float32))
    lazy = ctx.broadcast_to(c, (4, 3), lazy=True)
    assert isinstance(lazy, Broadcast) and lazy.shape == (4, 3)
    with ctx.op_list() as body:
        inner = ctx.materialize(lazy)
        assert ctx.materialize(lazy) is inner
    outer = ctx.materialize(lazy)
    assert outer is not inner and outer.name != inner.name
    assert [op["op"] for op in body] == ["broadcast_to"]
    assert [op["out"] for op in ctx.program.ops] == [outer.name]
    with ctx.op_list() as body2:
        assert ctx.materialize(lazy) is outer
    assert body2 == []


def test_io_as_neuronx_cc_writes_it(tmp_path):
    # pred I/O is uint8 0/1, a scalar is a [1] tensor, a zero-element output
    # is left out of the NEFF (nkipy makes it on the host).
    def f(mask, s, x):
        return jnp.logical_not(mask), x.sum() * s, x[:0], mask.any()

    mask = np.array([True, False, True])
    s = np.float32(2.0)
    x = np.arange(3, dtype=np.float32)
    path, _, _ = compile_jax(f, (mask, s, x), tmp_path)
    inputs, outputs = inspect_io(path)
    assert inputs == [("mask", [3], "uint8"), ("s", [1], "float32"),
                      ("x", [3], "float32")]
    assert outputs == [("output0", [3], "uint8"), ("output1", [1], "float32"),
                       ("output3", [1], "uint8")]
    # NrtpyModel takes the arrays a user has: bool for pred, 0-d for a scalar.
    for m, sv in ((mask, s), (mask.astype(np.uint8), np.array([s]))):
        got = run_neff(path, {"mask": m, "s": sv, "x": x})
        assert got["output0"].tolist() == [0, 1, 0]
        assert got["output1"].tolist() == [6.0]
        assert got["output3"].tolist() == [1]
    # uint8 other than 0/1 is true, as a pred converted from it.
    got = run_neff(path, {"mask": np.array([7, 0, 255], np.uint8), "s": s, "x": x})
    assert got["output0"].tolist() == [0, 1, 0]


def test_only_empty_outputs_give_a_neff_without_outputs(tmp_path):
    # nkipy compiles x[:0] and runs the NEFF, making the result on the host.
    path, _, outs = compile_jax(lambda x: x[:0], (np.ones(3, np.float32),), tmp_path)
    assert outs == []
    model = NrtpyModel.load_from_neff(path)
    assert model({"x": NrtpyTensor.from_numpy(np.ones(3, np.float32), "x")}) == {}
