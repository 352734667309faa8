"""The process-wide runtime: configure(), reset(), get_nrtpy_singleton(), atexit."""

from __future__ import annotations

import gc
import logging
import os
import warnings

import numpy as np
import pytest

import nrtpy
from nrtpy import NrtError, NrtpyError, NrtpyTensor
from nrtpy import _singleton

RESET_WARNING = r"nrtpy\.reset\(\) called\. All existing NrtpyTensor and NrtpyModel objects are now invalid"


# --------------------------------------------------------------- singleton


def test_singleton_is_shared(fresh_runtime):
    a = nrtpy.get_nrtpy_singleton()
    b = nrtpy.get_nrtpy_singleton()
    assert a is b
    assert isinstance(a, nrtpy.Nrtpy)
    assert _singleton._runtime is a


def test_singleton_started_lazily(fresh_runtime):
    assert _singleton._runtime is None
    NrtpyTensor.from_numpy(np.zeros(1))
    assert _singleton._runtime is not None
    assert not _singleton._runtime.is_closed


def test_singleton_logging(fresh_runtime, caplog):
    with caplog.at_level(logging.INFO, logger="nrtpy"):
        nrtpy.get_nrtpy_singleton()
    messages = [r.getMessage() for r in caplog.records if r.name == "nrtpy"]
    assert messages == ["Initializing Nrtpy Runtime", "Nrtpy Runtime initialized"]


def test_configure_and_reset_logging(fresh_runtime, caplog):
    with caplog.at_level(logging.INFO, logger="nrtpy"):
        nrtpy.configure([0, 1])
        nrtpy.get_nrtpy_singleton()
        with pytest.warns(UserWarning):
            nrtpy.reset()
    messages = [r.getMessage() for r in caplog.records if r.name == "nrtpy"]
    assert messages == [
        "Set NEURON_RT_VISIBLE_CORES to 0,1",
        "Initializing Nrtpy Runtime",
        "Nrtpy Runtime initialized",
        "Nrtpy Runtime closed",
    ]


def test_logger_is_a_library_logger():
    logger = logging.getLogger("nrtpy")
    assert logger.level == logging.NOTSET
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)


# --------------------------------------------------------------- configure


def test_configure_active_runtime(fresh_runtime):
    nrtpy.get_nrtpy_singleton()
    with pytest.raises(NrtpyError, match="already active") as ei:
        nrtpy.configure(visible_cores=[0])
    assert isinstance(ei.value, RuntimeError)
    assert str(ei.value).startswith("Nrtpy Error: Cannot configure:")
    assert "NEURON_RT_VISIBLE_CORES" not in os.environ
    with pytest.raises(NrtpyError, match="already active"):
        nrtpy.configure()


def test_configure_int(fresh_runtime):
    with pytest.raises(TypeError, match=r"not int\. Use \[3\] or \(3,\)"):
        nrtpy.configure(3)
    assert "NEURON_RT_VISIBLE_CORES" not in os.environ


@pytest.mark.parametrize("cores", [[True], [0, False], [1.0], ["0"], [None]])
def test_configure_non_integers(fresh_runtime, cores):
    with pytest.raises(TypeError, match="visible_cores must contain integers"):
        nrtpy.configure(cores)
    assert "NEURON_RT_VISIBLE_CORES" not in os.environ


def test_configure_not_iterable(fresh_runtime):
    with pytest.raises(TypeError):
        nrtpy.configure(object())


def test_configure_negative(fresh_runtime):
    with pytest.raises(ValueError, match="Core ID must be non-negative, got -1"):
        nrtpy.configure([0, -1])
    assert "NEURON_RT_VISIBLE_CORES" not in os.environ


def test_configure_one_core(fresh_runtime):
    assert nrtpy.configure([1]) is None
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "1"
    assert _singleton._runtime is None  # configure does not start anything
    t = NrtpyTensor.from_numpy(np.arange(3, dtype=np.int8))
    assert nrtpy.runtime_info()["visible_cores"] == 1
    assert t.core_id == 0
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2])
    with pytest.raises(ValueError, match="core_id 1 does not exist"):
        NrtpyTensor.from_numpy(np.zeros(1), core_id=1)


def test_configure_iterables(fresh_runtime):
    nrtpy.configure(range(2))
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "0,1"
    nrtpy.configure(c for c in (1,))
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "1"
    assert nrtpy.runtime_info()["visible_cores"] == 1


def test_configure_empty_and_none_change_nothing(fresh_runtime):
    fresh_runtime.setenv("NEURON_RT_VISIBLE_CORES", "0")
    with pytest.raises(ValueError, match="visible_cores is empty"):
        nrtpy.configure([])
    nrtpy.configure(None)
    nrtpy.configure()
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "0"


def test_configure_after_reset(fresh_runtime):
    nrtpy.get_nrtpy_singleton()
    assert nrtpy.runtime_info()["visible_cores"] == 2
    with pytest.warns(UserWarning, match=RESET_WARNING):
        nrtpy.reset()
    nrtpy.configure(visible_cores=[0])
    nrtpy.get_nrtpy_singleton()
    assert nrtpy.runtime_info()["visible_cores"] == 1


def test_configure_non_contiguous_cores_refused(fresh_runtime):
    fresh_runtime.setenv("NRTPY_EMU_INSTANCE", "trn1.32xlarge")
    # configure() says so at once ...
    with pytest.raises(ValueError, match=r"increasing and contiguous .*got \[0, 2\]"):
        nrtpy.configure([0, 2])
    assert "NEURON_RT_VISIBLE_CORES" not in os.environ
    # ... and the runtime refuses the same list set in the environment.
    fresh_runtime.setenv("NEURON_RT_VISIBLE_CORES", "0,2")
    with pytest.raises(NrtError) as ei:
        nrtpy.get_nrtpy_singleton()
    assert ei.value.status_code == 2
    assert _singleton._runtime is None


# ------------------------------------------------------------------- reset


def test_reset_warns_and_closes(fresh_runtime):
    r = nrtpy.get_nrtpy_singleton()
    with pytest.warns(UserWarning, match=RESET_WARNING) as rec:
        assert nrtpy.reset() is None
    assert len(rec) == 1
    assert rec[0].filename == __file__  # stacklevel points at the caller
    assert r.is_closed
    assert _singleton._runtime is None


def test_reset_twice(fresh_runtime):
    nrtpy.get_nrtpy_singleton()
    with pytest.warns(UserWarning, match=RESET_WARNING):
        nrtpy.reset()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        nrtpy.reset()
        nrtpy.reset()
    assert rec == []
    assert _singleton._runtime is None


def test_reset_without_runtime_is_silent(fresh_runtime):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        nrtpy.reset()
    assert rec == []


def test_old_tensor_after_reset(fresh_runtime):
    data = np.arange(6, dtype=np.float32)
    t = NrtpyTensor.from_numpy(data, name="old")
    ref = t.tensor_ref
    with pytest.warns(UserWarning, match=RESET_WARNING):
        nrtpy.reset()
    assert ref.is_freed
    assert ref.va == 0
    with pytest.raises(NrtpyError, match="freed"):
        t.numpy()
    with pytest.raises(NrtpyError, match="freed"):
        t.numpy(out=np.empty(6, np.float32))
    with pytest.raises(NrtpyError, match="freed"):
        t.write_from_numpy(data)
    # none of this started a new runtime
    assert _singleton._runtime is None
    # the properties stay readable
    assert (t.shape, t.dtype, t.name, ref.size, ref.name) == ((6,), np.float32, "old", 24, "old")
    # a new runtime works, and the old tensor stays unusable in it
    t2 = NrtpyTensor.from_numpy(data * 2)
    np.testing.assert_array_equal(t2.numpy(), data * 2)
    assert nrtpy.memory_stats(0).bytes_used == 24
    r = nrtpy.get_nrtpy_singleton()
    with pytest.raises(NrtpyError, match="freed"):
        r.tensor_read(ref)
    with pytest.raises(NrtpyError, match="freed"):
        t.numpy()
    r.free_tensor(t)  # a no-op
    assert nrtpy.memory_stats(0).bytes_used == 24
    del t, ref
    gc.collect()
    assert nrtpy.memory_stats(0).bytes_used == 24  # old tensors never touch the new runtime


def test_old_slice_after_reset(fresh_runtime):
    r = nrtpy.get_nrtpy_singleton()
    parent = r.allocate_tensor(32)
    s = r.slice_from_tensor(parent, 8, 8)
    with pytest.warns(UserWarning):
        nrtpy.reset()
    assert s.is_freed and parent.is_freed
    with pytest.raises(NrtpyError, match="freed"):
        r.tensor_read(s)
    with pytest.raises(NrtpyError):
        r.slice_from_tensor(parent, 0, 4)
    assert _singleton._runtime is None


def test_new_runtime_after_reset_has_fresh_memory(fresh_runtime):
    keep = [NrtpyTensor.from_numpy(np.zeros(1000, np.uint8)) for _ in range(3)]
    assert nrtpy.memory_stats(0).bytes_used == 3000
    with pytest.warns(UserWarning):
        nrtpy.reset()
    assert nrtpy.memory_stats(0).bytes_used == 0
    del keep
    gc.collect()
    assert nrtpy.memory_stats(0).bytes_used == 0


def test_reset_env_change_takes_effect(fresh_runtime):
    nrtpy.get_nrtpy_singleton()
    assert nrtpy.memory_stats(0).bytes_limit == 16 * 2**30
    fresh_runtime.setenv("NRTPY_EMU_HBM_PER_CORE", "1048576")
    assert nrtpy.memory_stats(0).bytes_limit == 16 * 2**30  # read at start only
    with pytest.warns(UserWarning):
        nrtpy.reset()
    assert nrtpy.memory_stats(0).bytes_limit == 1048576


def test_reset_does_not_clear_configuration(fresh_runtime):
    nrtpy.configure([1])
    nrtpy.get_nrtpy_singleton()
    with pytest.warns(UserWarning):
        nrtpy.reset()
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "1"


def test_many_reset_cycles(fresh_runtime):
    for i in range(20):
        t = NrtpyTensor.from_numpy(np.full(4, i, np.int32))
        np.testing.assert_array_equal(t.numpy(), np.full(4, i, np.int32))
        with pytest.warns(UserWarning):
            nrtpy.reset()
        with pytest.raises(NrtpyError):
            t.numpy()
    assert _singleton._runtime is None


# ------------------------------------------------------------------ atexit


def test_close_at_exit_handler(fresh_runtime):
    r = nrtpy.get_nrtpy_singleton()
    t = NrtpyTensor.from_numpy(np.ones(2))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        _singleton._close_at_exit()
    assert rec == []
    assert r.is_closed
    assert _singleton._runtime is None
    assert t.tensor_ref.is_freed
    _singleton._close_at_exit()  # harmless when nothing is running
