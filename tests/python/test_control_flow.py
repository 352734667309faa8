"""Control flow in emulator programs: the ``while`` and ``conditional`` ops
(docs/neff-emulator-format.md §3, "Control flow"), in programs written by
hand through the NEFF writer and run with NrtpyModel.  Each test starts and
ends without a runtime (fresh_runtime): later test files start processes
that claim the cores."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from nrtpy import NrtError, NrtpyModel, NrtpyTensor
from nrtpy.neff import _container

# I/O of every program here: x float32[4, 8]; n, k int32 scalars; flag a
# bool scalar; y float32[4, 8] and count int32 out.
IO = {"x": ("input", "float32", [4, 8]), "n": ("input", "int32", []),
      "k": ("input", "int32", []), "flag": ("input", "bool", []),
      "y": ("output", "float32", [4, 8]), "count": ("output", "int32", [])}
TEMPS = {"i": ("int32", []), "one": ("int32", []), "go": ("bool", []),
         "half": ("float32", []), "f": ("float32", [])}


def write(path, ops):
    var = {name: {"type": kind, "size": int(np.prod(shape, dtype=np.int64))
                  * np.dtype(dtype).itemsize, "shape": shape, "dtype": dtype}
           for name, (kind, dtype, shape) in IO.items()}
    buffers = {name: {"kind": kind, "dtype": dtype, "shape": shape}
               for name, (kind, dtype, shape) in IO.items()}
    buffers.update({name: {"kind": "temp", "dtype": dtype, "shape": shape}
                    for name, (dtype, shape) in TEMPS.items()})
    program = {"format": "nrtpy-emulator-program", "version": 1,
               "buffers": buffers, "ops": ops}
    return _container.write(path, {
        "sg00/def.json": json.dumps({"var": var, "emulator_program": "program.json"}).encode(),
        "sg00/program.json": json.dumps(program).encode()}, name=path.stem)


def full(out, value):
    return {"op": "full", "out": out, "value": value}


def op(name, ins, out):
    return {"op": name, "in": ins, "out": out}


def loop(cond, pred, body):
    return {"op": "while", "in": [], "cond": cond, "pred": pred, "body": body}


def conditional(selector, *branches):
    return {"op": "conditional", "in": [selector], "branches": list(branches)}


# y = x; n times: y = y * 0.5 + 1; count = the iterations run.
COUNTED = [
    full("i", 0), full("one", 1), full("half", 0.5),
    op("copy", ["x"], "y"),
    loop([op("less", ["i", "n"], "go")], "go",
         [op("mul", ["y", "half"], "y"), op("add", ["y", "one"], "y"),
          op("add", ["i", "one"], "i")]),
    op("copy", ["i"], "count"),
]


def counted_reference(x, n):
    y = x.copy()
    for _ in range(max(n, 0)):
        y = y * np.float32(0.5) + np.float32(1)
    return y


def run(model, x, n=0, k=0, flag=False):
    ins = {"x": x, "n": np.array(n, np.int32), "k": np.array(k, np.int32),
           "flag": np.array(flag)}
    outs = model(inputs={name: NrtpyTensor.from_numpy(a, name=name)
                         for name, a in ins.items()})
    return outs["y"].numpy(), int(outs["count"].numpy())


X = np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32)


@pytest.mark.parametrize("n", [0, 1, 7, -3])
def test_counted_loop(fresh_runtime, tmp_path, n):
    model = NrtpyModel.load_from_neff(write(tmp_path / "loop.neff", COUNTED))
    y, count = run(model, X, n=n)
    assert count == max(n, 0)
    np.testing.assert_array_equal(y, counted_reference(X, n))


def test_nested_loop_in_conditional(fresh_runtime, tmp_path):
    # k = 0: y = -x; k = 1: the counted loop, in the branch; any other k
    # (out of range: the last branch) y = x, count 99.
    ops = [full("count", -1), op("copy", ["x"], "y"),
           conditional("k",
                       [op("neg", ["x"], "y")],
                       COUNTED,
                       [op("copy", ["x"], "y"), full("count", 99)])]
    model = NrtpyModel.load_from_neff(write(tmp_path / "cond.neff", ops))
    y, count = run(model, X, n=4, k=0)
    np.testing.assert_array_equal(y, -X)
    assert count == -1
    y, count = run(model, X, n=4, k=1)
    np.testing.assert_array_equal(y, counted_reference(X, 4))
    assert count == 4
    for k in (2, 3, -1, 2**31 - 1):
        y, count = run(model, X, n=4, k=k)
        np.testing.assert_array_equal(y, X)
        assert count == 99


def test_bool_conditional(fresh_runtime, tmp_path):
    ops = [op("copy", ["x"], "y"),
           conditional("flag", [full("count", 1), op("abs", ["x"], "y")],
                       [full("count", 0)])]
    model = NrtpyModel.load_from_neff(write(tmp_path / "b.neff", ops))
    y, count = run(model, X, flag=True)
    assert count == 1
    np.testing.assert_array_equal(y, np.abs(X))
    y, count = run(model, X, flag=False)
    assert count == 0
    np.testing.assert_array_equal(y, X)


def test_infinite_loop_times_out(fresh_runtime, tmp_path):
    fresh_runtime.setenv("NEURON_RT_EXEC_TIMEOUT", "1")
    ops = [full("count", 0), op("copy", ["x"], "y"),
           loop([], "flag", [op("add", ["y", "x"], "y")])]
    model = NrtpyModel.load_from_neff(write(tmp_path / "inf.neff", ops))
    t0 = time.perf_counter()
    with pytest.raises(NrtError) as ei:
        run(model, X, flag=True)
    elapsed = time.perf_counter() - t0
    e = ei.value
    assert (e.status_code, e.status_name) == (5, "NRT_TIMEOUT")
    assert "ran past its deadline" in str(e)
    assert "op 2 (while)" in str(e)
    assert 0.9 < elapsed < 2.5, elapsed
    # the model still runs when the loop ends
    y, count = run(model, X, flag=False)
    np.testing.assert_array_equal(y, X)


def nest(levels):
    """`levels` loops, each the body of the one around it."""
    inner = loop([], "flag", [])
    for _ in range(levels - 1):
        inner = loop([], "flag", [inner])
    return inner


BAD = [
    ("missing pred",
     [full("count", 0), full("y", 0), {"op": "while", "in": [], "cond": [], "body": []}],
     r"op 2 \(while\): \"pred\" must be the name of a buffer"),
    ("pred not scalar",
     [full("count", 0), full("y", 0), loop([], "x", [])],
     r"op 2 \(while\): pred 'x' is float32\[4,8\]: it must be a scalar"),
    ("pred float",
     [full("count", 0), full("y", 0), full("f", 1), loop([], "f", [])],
     r"op 3 \(while\): pred 'f' is float32\[\]: it must be bool or an integer"),
    ("nested too deep",
     [full("count", 0), full("y", 0), nest(33)],
     r"op 2 \(while\) body op 0 \(while\) body .* body op 0 \(while\): "
     r"control ops nest more than 32 deep"),
    ("writing an input in a body",
     [full("count", 0), full("y", 0),
      conditional("k", [], [loop([], "flag", [op("neg", ["y"], "y"), op("neg", ["y"], "x")])])],
     r"op 2 \(conditional\) branches\[1\] op 0 \(while\) body op 1 \(neg\): "
     r"out 'x' is an input"),
    ("selector not scalar",
     [full("count", 0), full("y", 0), conditional("y", [])],
     r"op 2 \(conditional\): in\[0\] 'y' is float32\[4,8\]: it must be a scalar"),
]


@pytest.mark.parametrize("name,ops,message", BAD, ids=[b[0] for b in BAD])
def test_bad_programs(fresh_runtime, tmp_path, name, ops, message):
    path = write(tmp_path / "bad.neff", ops)
    with pytest.raises(NrtError) as ei:
        NrtpyModel.load_from_neff(path)
    assert (ei.value.status_code, ei.value.status_name) == (2, "NRT_INVALID")
    assert re.search("sg00/program.json: " + message, str(ei.value)), str(ei.value)
