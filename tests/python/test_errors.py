"""Exceptions: the hierarchy, NrtError's status, message formats."""

from __future__ import annotations

import re

import numpy as np
import pytest

import nrtpy
from nrtpy import NrtError, NrtpyError, NrtpyRuntimeError, NrtpyTensor, _nrtpy
from support import MIB

NRT_ERROR_RE = re.compile(r"^NRT Error (NRT_[A-Z_]+)\((\d+)\): (.+)$", re.S)


def test_hierarchy():
    assert issubclass(NrtpyRuntimeError, RuntimeError)
    assert issubclass(NrtpyError, NrtpyRuntimeError)
    assert issubclass(NrtError, NrtpyRuntimeError)
    assert not issubclass(NrtError, NrtpyError)
    assert not issubclass(NrtpyError, NrtError)
    for cls in (NrtpyRuntimeError, NrtpyError, NrtError):
        assert cls.__module__ == "nrtpy._nrtpy"
        assert cls.__doc__
    assert nrtpy.NrtError is _nrtpy.NrtError
    assert nrtpy.NrtpyError is _nrtpy.NrtpyError
    assert nrtpy.NrtpyRuntimeError is _nrtpy.NrtpyRuntimeError


def test_nrt_error_defaults():
    e = NrtError("boom")
    assert e.status_code is None
    assert e.status_name is None
    assert str(e) == "boom"


def test_allocate_zero_bytes(rt):
    with pytest.raises(NrtError) as ei:
        rt.allocate_tensor(0)
    e = ei.value
    assert isinstance(e, RuntimeError)
    assert e.status_code == 4
    assert e.status_name == "NRT_RESOURCE"
    assert e.args == (str(e),)
    m = NRT_ERROR_RE.match(str(e))
    assert m is not None, str(e)
    assert m.group(1, 2) == ("NRT_RESOURCE", "4")
    assert str(e).startswith("NRT Error NRT_RESOURCE(4): Failed to allocate tensor: ")


def test_out_of_memory(fresh_runtime):
    fresh_runtime.setenv("NRTPY_EMU_HBM_PER_CORE", str(MIB))
    assert nrtpy.memory_stats(0) == (0, MIB)
    with pytest.raises(NrtError) as ei:
        NrtpyTensor.from_numpy(np.zeros(2 * MIB, np.uint8))
    e = ei.value
    assert (e.status_code, e.status_name) == (4, "NRT_RESOURCE")
    assert str(e).startswith("NRT Error NRT_RESOURCE(4): Failed to allocate tensor: ")
    assert str(2 * MIB) in str(e)
    assert str(MIB) in str(e)  # all of it is free
    assert nrtpy.memory_stats(0).bytes_used == 0


def test_out_of_memory_reports_free_bytes(fresh_runtime):
    fresh_runtime.setenv("NRTPY_EMU_HBM_PER_CORE", str(MIB))
    r = nrtpy.get_nrtpy_singleton()
    a = r.allocate_tensor(600 * 1024)
    with pytest.raises(NrtError) as ei:
        r.allocate_tensor(600 * 1024)
    msg = str(ei.value)
    assert ei.value.status_code == 4
    assert str(600 * 1024) in msg
    assert str(MIB - 600 * 1024) in msg
    assert nrtpy.memory_stats(0).bytes_used == 600 * 1024
    # what fits still fits, on this core and on the other
    b = r.allocate_tensor(MIB - 600 * 1024)
    assert nrtpy.memory_stats(0).bytes_used == MIB
    c = r.allocate_tensor(MIB, core_id=1)
    r.free_tensor(a)
    d = r.allocate_tensor(600 * 1024)
    assert nrtpy.memory_stats(0).bytes_used == MIB
    del b, c, d


def test_memory_limit_suffix(fresh_runtime):
    fresh_runtime.setenv("NRTPY_EMU_HBM_PER_CORE", "64K")
    assert nrtpy.memory_stats(0).bytes_limit == 65536


def test_bad_memory_limit(fresh_runtime):
    fresh_runtime.setenv("NRTPY_EMU_HBM_PER_CORE", "lots")
    with pytest.raises(NrtError) as ei:
        nrtpy.get_nrtpy_singleton()
    assert ei.value.status_code == 2
    assert "NRTPY_EMU_HBM_PER_CORE" in str(ei.value)
    assert str(ei.value).startswith("NRT Error NRT_INVALID(2): Failed to initialize NRT runtime")


@pytest.mark.parametrize("core", [2, 31, 2**31 - 1])
def test_bad_core_id(rt, core):
    # A core that is not visible is a wrong value, found before the runtime
    # is asked.
    msg = rf"^core_id {core} does not exist; the visible NeuronCores are core_id 0 to 1$"
    with pytest.raises(ValueError, match=msg):
        rt.allocate_tensor(16, core_id=core)
    with pytest.raises(ValueError, match=msg):
        NrtpyTensor.from_numpy(np.zeros(4), core_id=core)


def test_core_id_out_of_int32_range(rt):
    with pytest.raises(ValueError):
        rt.allocate_tensor(16, core_id=2**31)
    with pytest.raises(ValueError):
        NrtpyTensor.from_numpy(np.zeros(4), core_id=2**31)


@pytest.mark.parametrize(
    "code, name",
    [
        (0, "NRT_SUCCESS"),
        (1, "NRT_FAILURE"),
        (2, "NRT_INVALID"),
        (4, "NRT_RESOURCE"),
        (14, "NRT_CLOSED"),
        (101, "NRT_EXEC_UNIT_UNRECOVERABLE"),
        (1006, "NRT_EXEC_OOB"),
        (1206, "NRT_NETWORK_PROXY_FAILURE"),
        (8, "UNKNOWN STATUS"),
        (99999, "UNKNOWN STATUS"),
        (-1, "UNKNOWN STATUS"),
    ],
)
def test_status_names(code, name):
    assert _nrtpy.status_name(code) == name


def test_nrtpy_error_prefix(rt):
    t = rt.allocate_tensor(4)
    with pytest.raises(NrtpyError) as ei:
        rt.tensor_read(t, 5)
    assert str(ei.value).startswith("Nrtpy Error: ")
    assert ei.value.args == (str(ei.value),)
    with pytest.raises(AttributeError):
        ei.value.status_code  # noqa: B018  (NrtpyError carries no status)


def test_errors_catchable_as_runtime_error(rt):
    with pytest.raises(RuntimeError):
        rt.allocate_tensor(0)
    with pytest.raises(RuntimeError):
        rt.tensor_read(rt.allocate_tensor(4), 5)
