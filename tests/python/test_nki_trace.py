"""Traces of an NKI kernel's NEFF: one event per instruction, named by what
it was (instruction, engine, the kernel's line, its operands), from the
ops' ``note`` field that the emulator's profile groups."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from nrtpy import NrtError, NrtpyModel, NrtpyTensor
from nrtpy import nki
from nrtpy.neff import _attach_outputs, _write_neff
from nrtpy.neff._trace import Program
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl


def kernel(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)                                            # line +2
    y = nl.load(b)                                            # line +3
    z = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=z, data1=x, data2=y, op=nl.add)   # line +5
    e = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=z)                # line +7
    p = nl.ndarray((a.shape[1], a.shape[1]), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=e, moving=e)            # line +9
    nl.store(out, x)                                          # line +10
    return out


def run_traced(path, inputs, tmp_path):
    model = NrtpyModel.load_from_neff(path)
    tensors = {n: NrtpyTensor.from_numpy(v, name=n) for n, v in inputs.items()}
    ntff = tmp_path / "k.ntff"
    model(inputs=tensors, save_trace=True, ntff_name=str(ntff))
    return [e for e in json.loads(ntff.read_text())["traceEvents"]
            if e.get("cat") == "op"]


def test_one_event_per_instruction(tmp_path):
    a = np.ones((128, 64), np.float32)
    compiled = nki.jit(kernel).specialize(a, a)
    events = run_traced(compiled.path, {"a": a, "b": a}, tmp_path)
    first = inspect.getsourcelines(kernel)[1]
    name = "test_nki_trace.py"
    want = [
        ("load", "dma", 2, ["src=float32[128,64]@shared_hbm"]),
        ("load", "dma", 3, ["src=float32[128,64]@shared_hbm"]),
        ("tensor_tensor", "vector", 5, ["dst=float32[128,64]@sbuf",
                                        "data1=float32[128,64]@sbuf",
                                        "data2=float32[128,64]@sbuf"]),
        ("activation", "scalar", 7, ["dst=float32[128,64]@sbuf",
                                     "data=float32[128,64]@sbuf"]),
        ("nc_matmul", "tensor", 9, ["dst=float32[64,64]@psum",
                                    "stationary=float32[128,64]@sbuf",
                                    "moving=float32[128,64]@sbuf"]),
        ("store", "dma", 10, ["dst=float32[128,64]@shared_hbm",
                              "value=float32[128,64]@sbuf"]),
    ]
    assert len(events) == len(want), [e["name"] for e in events]
    for event, (instr, engine, line, operands) in zip(events, want):
        head = f"{instr} [{engine}] {name}:{first + line} "
        assert event["name"].startswith(head), event["name"]
        for o in operands:
            assert f" {o} " in event["name"], (o, event["name"])
        ops = event["args"]["ops"]
        assert event["name"].endswith(f"-> {len(ops)} op{'s' if len(ops) > 1 else ''}")
        assert all("->" in o["shapes"] for o in ops)
        assert event["args"]["note"] == event["name"]
    # the ops of one instruction are consecutive: indices advance by their count
    idx = [e["args"]["index"] for e in events]
    assert idx == sorted(idx) and idx[0] == 0


def program_with_notes():
    p = Program()
    a = p.buffer("input", (4,), np.float32, name="a")
    t = p.emit("neg", [a], (4,), np.float32, note="two ops")
    u = p.emit("exp", [t], (4,), np.float32, note="two ops")
    v = p.emit("abs", [u], (4,), np.float32)
    w = p.emit("neg", [v], (4,), np.float32, note="two ops")  # not next to them
    return p, w


def test_consecutive_ops_with_one_note_are_one_event(tmp_path):
    p, w = program_with_notes()
    outs = _attach_outputs(p, [("output_0", w)])
    path = _write_neff(tmp_path / "n.neff", p, ["a"], outs, neff_name="n", generator="t")
    events = run_traced(path, {"a": np.ones(4, np.float32)}, tmp_path)
    assert [e["name"] for e in events] == ["two ops", "abs", "two ops"]
    assert [o["name"] for o in events[0]["args"]["ops"]] == ["neg", "exp"]
    assert events[0]["args"]["ops"][0]["shapes"] == "float32[4] -> float32[4]"
    assert events[1]["args"] == {"shapes": "float32[4] -> float32[4]", "index": 2,
                                 "exec_id": events[1]["args"]["exec_id"]}
    assert events[2]["args"]["index"] == 3


def test_a_note_must_be_a_string(tmp_path):
    p, w = program_with_notes()
    p.ops[0]["note"] = 7
    outs = _attach_outputs(p, [("output_0", w)])
    path = _write_neff(tmp_path / "bad.neff", p, ["a"], outs, neff_name="n", generator="t")
    with pytest.raises(NrtError, match='"note" must be a string'):
        NrtpyModel.load_from_neff(path)
