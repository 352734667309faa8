"""The low-level runtime: Nrtpy and NrtTensor."""

from __future__ import annotations

import array
import gc

import numpy as np
import pytest

import nrtpy
from nrtpy import NrtError, Nrtpy, NrtpyError, NrtpyTensor, NrtTensor
from nrtpy import _singleton
from support import used

PATTERN = bytes(range(16))
U64_MAX = 2**64 - 1


@pytest.fixture
def t16(rt):
    t = rt.allocate_tensor(16, name="t16")
    rt.tensor_write(t, PATTERN)
    return t


@pytest.fixture
def own_runtime(fresh_runtime):
    """Create Nrtpy instances directly (no singleton); all closed at the end."""
    made = []

    def make(*args, **kwargs):
        r = Nrtpy(*args, **kwargs)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


# ------------------------------------------------------------ allocate


def test_allocate_tensor(rt):
    before = used(0)
    t = rt.allocate_tensor(100)
    assert isinstance(t, NrtTensor)
    assert (t.size, t.core_id, t.name) == (100, 0, "unnamed_tensor")
    assert not t.is_freed
    assert t.va != 0
    assert used(0) == before + 100
    named = rt.allocate_tensor(size=8, core_id=1, name="w")
    assert (named.size, named.core_id, named.name) == (8, 1, "w")
    assert repr(named) == "NrtTensor(name='w', size=8, core_id=1, is_slice=False, freed=False)"


def test_allocate_distinct_addresses(rt):
    a, b = rt.allocate_tensor(64), rt.allocate_tensor(64)
    assert a.va != b.va
    assert abs(a.va - b.va) >= 64


@pytest.mark.parametrize("size", [-1, 1.5, "8", None, 2**64])
def test_allocate_bad_size(rt, size):
    with pytest.raises(TypeError):
        rt.allocate_tensor(size)


def test_allocate_bad_core_and_name(rt):
    with pytest.raises(ValueError, match="core_id must be non-negative, got -1"):
        rt.allocate_tensor(8, core_id=-1)
    with pytest.raises(TypeError):
        rt.allocate_tensor(8, core_id=0.0)
    with pytest.raises(TypeError):
        rt.allocate_tensor(8, name=b"x")


# --------------------------------------------------------- write / read


def test_write_read(rt, t16):
    assert rt.tensor_read(t16) == PATTERN
    assert type(rt.tensor_read(t16)) is bytes
    assert rt.tensor_read(t16, 4) == PATTERN[4:]
    assert rt.tensor_read(t16, offset=4, size=8) == PATTERN[4:12]
    assert rt.tensor_read(t16, 16) == b""
    assert rt.tensor_write(t16, b"\xff\xfe", offset=14) is None
    assert rt.tensor_read(t16) == PATTERN[:14] + b"\xff\xfe"
    rt.tensor_write(t16, b"", 16)
    assert rt.tensor_read(t16) == PATTERN[:14] + b"\xff\xfe"


def test_write_accepts_nrtpy_tensor(rt):
    t = NrtpyTensor.from_numpy(np.zeros(4, np.uint8))
    rt.tensor_write(t, b"\x01\x02", 1)
    assert rt.tensor_read(t) == b"\x00\x01\x02\x00"
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 0])


@pytest.mark.parametrize("data", [bytearray(b"ab"), memoryview(b"ab"), "ab", [1, 2]])
def test_write_bytes_only(rt, t16, data):
    with pytest.raises(TypeError):
        rt.tensor_write(t16, data)
    assert rt.tensor_read(t16) == PATTERN


def test_write_bounds(rt, t16):
    with pytest.raises(NrtpyError) as ei:
        rt.tensor_write(t16, b"x" * 17)
    assert str(ei.value) == (
        "Nrtpy Error: The write operation exceeds the tensor bound. "
        "Tensor size: 16 bytes; Input size: 17 bytes; Offset: 0 bytes."
    )
    with pytest.raises(NrtpyError) as ei:
        rt.tensor_write(t16, b"xyz", offset=14)
    assert str(ei.value) == (
        "Nrtpy Error: The write operation exceeds the tensor bound. "
        "Tensor size: 16 bytes; Input size: 3 bytes; Offset: 14 bytes."
    )
    with pytest.raises(NrtpyError, match="exceeds the tensor bound"):
        rt.tensor_write(t16, b"", offset=17)
    assert rt.tensor_read(t16) == PATTERN


def test_read_bounds(rt, t16):
    with pytest.raises(NrtpyError) as ei:
        rt.tensor_read(t16, 8, 9)
    assert str(ei.value) == (
        "Nrtpy Error: The read operation exceeds the tensor bound. "
        "Tensor size: 16 bytes; Read size: 9 bytes; Offset: 8 bytes."
    )
    with pytest.raises(NrtpyError) as ei:
        rt.tensor_read(t16, 17)
    assert str(ei.value) == (
        "Nrtpy Error: The read operation exceeds the tensor bound. "
        "Tensor size: 16 bytes; Read size: 0 bytes; Offset: 17 bytes."
    )
    with pytest.raises(NrtpyError, match="Read size: 17 bytes; Offset: 0 bytes"):
        rt.tensor_read(t16, 0, 17)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda rt, t: rt.tensor_read(t, U64_MAX), id="read-offset"),
        pytest.param(lambda rt, t: rt.tensor_read(t, U64_MAX, 1), id="read-offset-size"),
        pytest.param(lambda rt, t: rt.tensor_read(t, 1, U64_MAX), id="read-size"),
        pytest.param(lambda rt, t: rt.tensor_read(t, 8, U64_MAX - 7), id="read-wrap"),
        pytest.param(lambda rt, t: rt.tensor_write(t, b"x", U64_MAX), id="write-offset"),
        pytest.param(lambda rt, t: rt.tensor_write(t, b"", U64_MAX), id="write-empty"),
        pytest.param(lambda rt, t: rt.slice_from_tensor(t, U64_MAX), id="slice-offset"),
        pytest.param(lambda rt, t: rt.slice_from_tensor(t, U64_MAX, 1), id="slice-offset-size"),
        pytest.param(lambda rt, t: rt.slice_from_tensor(t, 1, U64_MAX), id="slice-size"),
        pytest.param(lambda rt, t: rt.slice_from_tensor(t, 8, U64_MAX - 7), id="slice-wrap"),
        pytest.param(
            lambda rt, t: rt.tensor_write_from_pybuffer(t, b"x", U64_MAX), id="pybuf-write"
        ),
        pytest.param(
            lambda rt, t: rt.tensor_read_to_pybuffer(t, bytearray(16), U64_MAX), id="pybuf-read"
        ),
        pytest.param(
            lambda rt, t: rt.tensor_read_to_pybuffer(t, bytearray(16), 8, U64_MAX - 7),
            id="pybuf-read-wrap",
        ),
    ],
)
def test_huge_offsets_and_sizes(rt, t16, call):
    with pytest.raises(NrtpyError):
        call(rt, t16)
    assert rt.tensor_read(t16) == PATTERN


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda rt, t: rt.tensor_read(t, -1), id="read-offset"),
        pytest.param(lambda rt, t: rt.tensor_read(t, 0, -5), id="read-size"),
        pytest.param(lambda rt, t: rt.tensor_read(t, 2**64), id="read-2**64"),
        pytest.param(lambda rt, t: rt.tensor_read(t, 1.0), id="read-float"),
        pytest.param(lambda rt, t: rt.tensor_write(t, b"x", -1), id="write-offset"),
        pytest.param(lambda rt, t: rt.slice_from_tensor(t, -1), id="slice-offset"),
        pytest.param(lambda rt, t: rt.slice_from_tensor(t, 0, -1), id="slice-size"),
        pytest.param(lambda rt, t: rt.tensor_write_from_pybuffer(t, b"x", -1), id="pybuf-write"),
        pytest.param(
            lambda rt, t: rt.tensor_read_to_pybuffer(t, bytearray(16), 0, -1), id="pybuf-read"
        ),
        pytest.param(lambda rt, t: rt.tensor_read(b"not a tensor"), id="read-not-tensor"),
        pytest.param(lambda rt, t: rt.tensor_write(42, b"x"), id="write-not-tensor"),
        pytest.param(lambda rt, t: rt.slice_from_tensor(None), id="slice-not-tensor"),
    ],
)
def test_bad_argument_types(rt, t16, call):
    with pytest.raises(TypeError):
        call(rt, t16)
    assert rt.tensor_read(t16) == PATTERN


# ----------------------------------------------------------------- slices


def test_slice_shares_memory(rt, t16):
    s = rt.slice_from_tensor(t16, 4, 8, name="mid")
    assert (s.size, s.core_id, s.name) == (8, 0, "mid")
    assert s.va == t16.va + 4
    assert rt.tensor_read(s) == PATTERN[4:12]
    rt.tensor_write(s, b"\xaa\xbb", offset=1)
    assert rt.tensor_read(t16) == PATTERN[:5] + b"\xaa\xbb" + PATTERN[7:]
    rt.tensor_write(t16, b"\x11", offset=4)
    assert rt.tensor_read(s, 0, 1) == b"\x11"
    assert repr(s) == "NrtTensor(name='mid', size=8, core_id=0, is_slice=True, freed=False)"


def test_slice_defaults(rt, t16):
    s = rt.slice_from_tensor(t16)
    assert (s.size, s.name) == (16, "unnamed_tensor")
    assert rt.tensor_read(s) == PATTERN
    tail = rt.slice_from_tensor(t16, 10)
    assert tail.size == 6
    assert rt.tensor_read(tail) == PATTERN[10:]
    sub = rt.slice_from_tensor(rt.slice_from_tensor(t16, 2, 12), 3, 4)
    assert rt.tensor_read(sub) == PATTERN[5:9]


def test_slice_of_core1_tensor(rt):
    t = rt.allocate_tensor(32, core_id=1)
    assert rt.slice_from_tensor(t, 16).core_id == 1


def test_slice_of_nrtpy_tensor(rt):
    data = np.arange(8, dtype=np.int32)
    t = NrtpyTensor.from_numpy(data)
    s = rt.slice_from_tensor(t, 8, 8)
    assert np.frombuffer(rt.tensor_read(s), np.int32).tolist() == [2, 3]
    view = NrtpyTensor(s, 2, np.int32, name="view")
    view.write_from_numpy(np.array([-1, -2], np.int32))
    np.testing.assert_array_equal(t.numpy(), [0, 1, -1, -2, 4, 5, 6, 7])


def test_slice_out_of_range(rt, t16):
    with pytest.raises(NrtpyError) as ei:
        rt.slice_from_tensor(t16, 8, 9)
    assert str(ei.value) == (
        "Nrtpy Error: The slice [8, 8 + 9) exceeds the source tensor bound of 16 bytes."
    )
    with pytest.raises(NrtpyError, match="past the end"):
        rt.slice_from_tensor(t16, 17)
    with pytest.raises(NrtpyError):
        rt.slice_from_tensor(t16, 0, 17)


def test_empty_slice(rt, t16):
    # Refused by nrtpy itself: libnrt (the real one included) never sees an
    # empty range or the missing handle of a 0-byte tensor.
    with pytest.raises(NrtpyError, match="Cannot slice 0 bytes at offset 16 of a "
                                         "16-byte tensor"):
        rt.slice_from_tensor(t16, 16)
    empty = NrtpyTensor.from_numpy(np.zeros(0, np.int8))
    assert empty.tensor_ref.va == 0
    assert rt.tensor_read(empty) == b""
    with pytest.raises(NrtpyError, match="slices have at least one byte"):
        rt.slice_from_tensor(empty)


def test_slice_keeps_parent_alive(rt):
    before = used(0)
    parent = rt.allocate_tensor(4096, name="parent")
    rt.tensor_write(parent, b"\x5a" * 4096)
    s = rt.slice_from_tensor(parent, 4000, 96)
    del parent
    gc.collect()
    assert used(0) == before + 4096
    assert rt.tensor_read(s) == b"\x5a" * 96
    rt.tensor_write(s, b"\x01" * 96)
    assert rt.tensor_read(s) == b"\x01" * 96
    del s
    gc.collect()
    assert used(0) == before


def test_slice_after_parent_freed_explicitly(rt):
    before = used(0)
    parent = rt.allocate_tensor(64)
    rt.tensor_write(parent, bytes(range(64)))
    s = rt.slice_from_tensor(parent, 32, 32)
    rt.free_tensor(parent)
    assert parent.is_freed
    assert not s.is_freed
    # the storage is shared and lives until its last user is freed
    assert rt.tensor_read(s) == bytes(range(32, 64))
    rt.free_tensor(s)
    assert s.is_freed
    assert used(0) == before


def test_free_slice_then_parent(rt):
    before = used(0)
    parent = rt.allocate_tensor(64)
    s = rt.slice_from_tensor(parent, 0, 16)
    rt.free_tensor(s)
    assert s.is_freed and not parent.is_freed
    rt.tensor_write(parent, b"\x07" * 64)
    assert rt.tensor_read(parent, 60) == b"\x07" * 4
    with pytest.raises(NrtpyError, match="freed"):
        rt.tensor_read(s)
    rt.free_tensor(parent)
    assert used(0) == before


def test_slice_of_freed_tensor(rt, t16):
    rt.free_tensor(t16)
    with pytest.raises(NrtpyError) as ei:
        rt.slice_from_tensor(t16, 0, 4)
    assert "source tensor that is freed" in str(ei.value)


# --------------------------------------------------------------- pybuffer


def test_write_from_pybuffer_memoryview_cast(rt, t16):
    src = np.arange(4, dtype=np.float32)
    rt.tensor_write_from_pybuffer(t16, memoryview(src).cast("B"))
    assert rt.tensor_read(t16) == src.tobytes()


@pytest.mark.parametrize(
    "buf",
    [
        pytest.param(b"\x09" * 4, id="bytes"),
        pytest.param(bytearray(b"\x09" * 4), id="bytearray"),
        pytest.param(memoryview(b"\x09" * 4), id="memoryview-ro"),
        pytest.param(array.array("B", [9] * 4), id="array"),
        pytest.param(np.full(4, 9, np.uint8), id="ndarray"),
        pytest.param(np.frombuffer(b"\x09" * 4, np.uint8), id="ndarray-ro"),
    ],
)
def test_write_from_pybuffer_kinds(rt, t16, buf):
    rt.tensor_write_from_pybuffer(t16, buf, offset=6)
    assert rt.tensor_read(t16) == PATTERN[:6] + b"\x09" * 4 + PATTERN[10:]


def test_write_from_pybuffer_ml_dtype(rt, t16):
    import ml_dtypes

    src = np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype=ml_dtypes.bfloat16)
    rt.tensor_write_from_pybuffer(t16, src)
    assert rt.tensor_read(t16) == src.tobytes()


def test_write_from_pybuffer_not_a_buffer(rt, t16):
    with pytest.raises(RuntimeError, match="Object does not support buffer protocol") as ei:
        rt.tensor_write_from_pybuffer(t16, [1, 2, 3])
    assert not isinstance(ei.value, nrtpy.NrtpyRuntimeError)
    assert isinstance(ei.value.__context__, TypeError)
    assert rt.tensor_read(t16) == PATTERN


def test_write_from_pybuffer_non_contiguous(rt, t16):
    with pytest.raises(RuntimeError, match="buffer protocol") as ei:
        rt.tensor_write_from_pybuffer(t16, np.zeros(8, np.uint8)[::2])
    assert isinstance(ei.value.__context__, ValueError)
    assert "contiguous" in str(ei.value.__context__)
    assert rt.tensor_read(t16) == PATTERN


def test_write_from_pybuffer_bounds(rt, t16):
    with pytest.raises(NrtpyError, match="exceeds the tensor bound"):
        rt.tensor_write_from_pybuffer(t16, bytearray(17))
    with pytest.raises(NrtpyError, match="Input size: 4 bytes; Offset: 13 bytes"):
        rt.tensor_write_from_pybuffer(t16, bytearray(4), 13)
    assert rt.tensor_read(t16) == PATTERN


def test_read_to_pybuffer(rt, t16):
    buf = bytearray(16)
    assert rt.tensor_read_to_pybuffer(t16, buf) is None
    assert bytes(buf) == PATTERN
    out = np.zeros(8, np.uint8)
    rt.tensor_read_to_pybuffer(t16, out, offset=4, size=8)
    assert out.tobytes() == PATTERN[4:12]
    out4 = np.zeros(4, np.uint8)
    rt.tensor_read_to_pybuffer(t16, out4, 12)  # size 0: to the end
    assert out4.tobytes() == PATTERN[12:]
    mv = memoryview(bytearray(16))
    rt.tensor_read_to_pybuffer(t16, mv)
    assert mv.tobytes() == PATTERN


def test_read_to_pybuffer_larger_buffer_keeps_tail(rt, t16):
    buf = bytearray(b"\xaa" * 32)
    rt.tensor_read_to_pybuffer(t16, buf)
    assert bytes(buf) == PATTERN + b"\xaa" * 16
    buf = bytearray(b"\xaa" * 32)
    rt.tensor_read_to_pybuffer(t16, buf, offset=10, size=3)
    assert bytes(buf) == PATTERN[10:13] + b"\xaa" * 29


def test_read_to_pybuffer_too_small(rt, t16):
    buf = bytearray(b"\xaa" * 8)
    with pytest.raises(NrtpyError, match="Buffer too small") as ei:
        rt.tensor_read_to_pybuffer(t16, buf)
    assert "buffer 8 bytes" in str(ei.value) and "read 16 bytes" in str(ei.value)
    assert bytes(buf) == b"\xaa" * 8  # checked before reading
    with pytest.raises(NrtpyError, match="Buffer too small"):
        rt.tensor_read_to_pybuffer(t16, buf, offset=4, size=9)
    assert bytes(buf) == b"\xaa" * 8


@pytest.mark.parametrize(
    "buf, context",
    [
        pytest.param(b"\0" * 16, BufferError, id="bytes"),
        pytest.param(memoryview(b"\0" * 16), BufferError, id="memoryview-ro"),
        pytest.param(np.frombuffer(b"\0" * 16, np.uint8), ValueError, id="ndarray-ro"),
        pytest.param(np.zeros(32, np.uint8)[::2], ValueError, id="ndarray-strided"),
        pytest.param([0] * 16, TypeError, id="list"),
    ],
)
def test_read_to_pybuffer_not_writable(rt, t16, buf, context):
    with pytest.raises(RuntimeError, match="Object does not support writable buffer protocol") as ei:
        rt.tensor_read_to_pybuffer(t16, buf)
    assert isinstance(ei.value.__context__, context)


def test_read_to_pybuffer_bounds(rt, t16):
    buf = bytearray(b"\xaa" * 32)
    with pytest.raises(NrtpyError, match="exceeds the tensor bound"):
        rt.tensor_read_to_pybuffer(t16, buf, 8, 9)
    with pytest.raises(NrtpyError, match="exceeds the tensor bound"):
        rt.tensor_read_to_pybuffer(t16, buf, 17)
    assert bytes(buf) == b"\xaa" * 32


def test_pybuffer_freed_tensor(rt, t16):
    rt.free_tensor(t16)
    with pytest.raises(NrtpyError, match="freed"):
        rt.tensor_write_from_pybuffer(t16, b"x")
    with pytest.raises(NrtpyError, match="freed"):
        rt.tensor_read_to_pybuffer(t16, bytearray(16))


# ---------------------------------------------------------- Nrtpy object


def test_second_instance_refused(rt):
    with pytest.raises(NrtpyError) as ei:
        Nrtpy()
    assert str(ei.value).startswith("Nrtpy Error: Cannot create Nrtpy instance: a previous instance still exists.")
    assert not rt.is_closed
    one = rt.allocate_tensor(1)
    rt.tensor_write(one, b"\x42")
    assert rt.tensor_read(one) == b"\x42"


def test_close_returns_zero_and_is_idempotent(own_runtime):
    r = own_runtime()
    assert not r.is_closed
    t = r.allocate_tensor(8)
    assert r.close() == 0
    assert r.is_closed
    assert r.close() == 0
    assert r.is_closed
    assert t.is_freed
    assert t.va == 0
    with pytest.raises(NrtpyError, match="freed"):
        r.tensor_read(t)
    r.free_tensor(t)  # no-op
    with pytest.raises(NrtpyError, match="runtime is closed"):
        r.allocate_tensor(8)
    # a new one may be created after close()
    r2 = own_runtime()
    assert not r2.is_closed
    t2 = r2.allocate_tensor(4)
    r2.tensor_write(t2, b"abcd")
    assert r2.tensor_read(t2, 0, 4) == b"abcd"
    # a stale close() must not affect the live instance
    assert r.close() == 0
    with pytest.raises(NrtpyError, match="previous instance"):
        Nrtpy()
    assert not r2.is_closed


def test_runtime_closed_by_garbage_collection(own_runtime):
    r = Nrtpy()
    t = r.allocate_tensor(8)
    del r
    gc.collect()
    assert t.is_freed
    r2 = own_runtime()  # the old one released the process's runtime
    assert not r2.is_closed
    del t  # deallocating a tensor of a collected runtime is safe
    gc.collect()


def test_standalone_runtime_refuses_singleton(own_runtime):
    r = own_runtime()
    with pytest.raises(NrtpyError, match="previous instance"):
        nrtpy.get_nrtpy_singleton()
    assert _singleton._runtime is None
    r.close()
    assert not nrtpy.get_nrtpy_singleton().is_closed


def test_verbose_level(own_runtime, capsys):
    own_runtime(verbose_level=1)
    assert "Initializing Nrtpy Runtime" in capsys.readouterr().out


def test_verbose_level_type(fresh_runtime):
    with pytest.raises(TypeError):
        Nrtpy(verbose_level="loud")
    assert _singleton._runtime is None


def test_visible_core_count_without_runtime(fresh_runtime):
    assert Nrtpy.get_visible_neuron_core_count() == 2
    assert _singleton._runtime is None
    fresh_runtime.setenv("NEURON_RT_VISIBLE_CORES", "1")
    assert Nrtpy.get_visible_neuron_core_count() == 1
    assert _singleton._runtime is None
    info = nrtpy.runtime_info()
    assert info["visible_cores"] == 1
    assert _singleton._runtime is None


def test_visible_core_count_static_and_instance(rt):
    assert rt.get_visible_neuron_core_count() == Nrtpy.get_visible_neuron_core_count() == 2


# -------------------------------------------------------------- info, memory


def test_runtime_info(rt):
    info = nrtpy.runtime_info()
    assert set(info) == {
        "library", "emulated", "version", "version_detail", "instance",
        "visible_cores", "total_cores", "hbm_per_core", "host_memory",
        "host_memory_available",
    }
    assert info["emulated"] is True
    assert info["library"].endswith("libnrt.so.1")
    assert info["instance"] == "trn1.2xlarge"
    assert info["visible_cores"] == 2
    assert info["total_cores"] == 2
    assert isinstance(info["version"], str)
    assert len(info["version"].split(".")) == 4
    assert isinstance(info["version_detail"], str)


def test_default_memory_limit(rt):
    stats = nrtpy.memory_stats(0)
    assert isinstance(stats, nrtpy.MemoryStats)
    assert stats.bytes_limit == 16 * 2**30
    assert nrtpy.memory_stats(1).bytes_limit == 16 * 2**30
    assert stats == (stats.bytes_used, stats.bytes_limit)


def test_memory_stats_starts_runtime(fresh_runtime):
    assert nrtpy.memory_stats().bytes_used == 0
    assert _singleton._runtime is not None


def test_memory_stats_arguments(rt):
    with pytest.raises(TypeError):
        nrtpy.memory_stats("0")
    with pytest.raises(TypeError):
        nrtpy.memory_stats(True)
    with pytest.raises(ValueError):
        nrtpy.memory_stats(-1)
    with pytest.raises(ValueError, match="core_id 2 does not exist"):
        nrtpy.memory_stats(2)


@pytest.mark.parametrize(
    "instance, lnc, total, hbm_gib",
    [
        ("inf2.xlarge", None, 2, 16),
        ("inf2.8xlarge", None, 2, 16),
        ("inf2.24xlarge", None, 12, 16),
        ("inf2.48xlarge", None, 24, 16),
        ("trn1.2xlarge", None, 2, 16),
        ("trn1.32xlarge", None, 32, 16),
        ("trn2.48xlarge", None, 64, 24),
        ("trn2.48xlarge", "1", 128, 12),
    ],
)
def test_instances(fresh_runtime, instance, lnc, total, hbm_gib):
    fresh_runtime.setenv("NRTPY_EMU_INSTANCE", instance)
    if lnc is not None:
        fresh_runtime.setenv("NEURON_LOGICAL_NC_CONFIG", lnc)
    t = NrtpyTensor.from_numpy(np.arange(4, dtype=np.int32), core_id=total - 1)
    info = nrtpy.runtime_info()
    assert info["instance"] == instance
    assert info["total_cores"] == total
    assert info["visible_cores"] == total
    assert nrtpy.memory_stats(total - 1) == (16, hbm_gib * 2**30)
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])
    with pytest.raises(ValueError, match=f"core_id {total} does not exist"):
        NrtpyTensor.from_numpy(np.zeros(1), core_id=total)


def test_hbm_per_core_override(fresh_runtime):
    fresh_runtime.setenv("NRTPY_EMU_HBM_PER_CORE", str(3 * 2**20))
    assert nrtpy.memory_stats(0) == (0, 3 * 2**20)
    assert nrtpy.memory_stats(1) == (0, 3 * 2**20)


def test_visible_cores_env(fresh_runtime):
    fresh_runtime.setenv("NEURON_RT_VISIBLE_CORES", "1")
    t = NrtpyTensor.from_numpy(np.ones(3, np.int8), core_id=0)
    assert nrtpy.runtime_info()["visible_cores"] == 1
    np.testing.assert_array_equal(t.numpy(), [1, 1, 1])
    with pytest.raises(ValueError, match="core_id 1 does not exist"):
        NrtpyTensor.from_numpy(np.ones(3, np.int8), core_id=1)


def test_num_cores_env(fresh_runtime):
    fresh_runtime.setenv("NRTPY_EMU_INSTANCE", "trn1.32xlarge")
    fresh_runtime.setenv("NEURON_RT_NUM_CORES", "4")
    nrtpy.get_nrtpy_singleton()
    assert nrtpy.runtime_info()["visible_cores"] == 4
    NrtpyTensor.from_numpy(np.ones(1), core_id=3)
    with pytest.raises(ValueError, match="core_id 4 does not exist"):
        NrtpyTensor.from_numpy(np.ones(1), core_id=4)


def test_bad_instance_name(fresh_runtime):
    fresh_runtime.setenv("NRTPY_EMU_INSTANCE", "p5.48xlarge")
    with pytest.raises(NrtError) as ei:
        nrtpy.get_nrtpy_singleton()
    assert ei.value.status_code == 2
    assert "p5.48xlarge" in str(ei.value)
    assert _singleton._runtime is None


def test_parent_freed_while_slice_lives_keeps_its_memory(rt):
    # The user's free marks the parent freed at once; its device memory
    # goes only when the last slice does, whatever libnrt does with slices.
    parent = rt.allocate_tensor(64)
    rt.tensor_write(parent, bytes(range(64)))
    piece = rt.slice_from_tensor(parent, 16, 8)
    before = used(0)
    rt.free_tensor(parent)
    assert parent.is_freed and parent.va == 0
    assert used(0) == before
    assert rt.tensor_read(piece) == bytes(range(16, 24))
    with pytest.raises(NrtpyError, match="freed"):
        rt.tensor_read(parent)
    del piece
    assert used(0) == before - 64


def test_reinitialising_a_tensor_is_refused(rt):
    t = NrtpyTensor.from_numpy(np.arange(4, dtype=np.float32))
    other = rt.allocate_tensor(16)
    with pytest.raises(NrtpyError, match="already initialised"):
        t.__init__(other, 4, np.float32)
    assert t.numpy().tolist() == [0, 1, 2, 3]


def test_shape_argument_is_not_modified(rt):
    shape = (np.int64(2), np.int32(2))
    t = NrtpyTensor(rt.allocate_tensor(16), shape, np.float32)
    assert type(shape[0]) is np.int64 and type(shape[1]) is np.int32
    assert t.shape == (2, 2) and all(type(d) is int for d in t.shape)


def test_dtype_without_item_size_is_refused(rt):
    with pytest.raises(ValueError, match="no item size"):
        NrtpyTensor(rt.allocate_tensor(4), (4,), "S")


def test_execute_rejects_malformed_mappings(rt, tmp_path):
    import nrtpy.neff

    class BadItems(dict):
        def __init__(self, pairs):
            super().__init__(x=None)
            self.pairs = pairs

        def items(self):
            return self.pairs

    path = nrtpy.neff.compile(lambda x: -x, np.zeros(1, np.float32),
                              path=tmp_path / "neg.neff")
    model = rt.load_model(str(path))
    t = rt.allocate_tensor(4)
    for pairs in ([1, 2], [("x",)], [["x", t]]):
        with pytest.raises(TypeError, match="pairs"):
            rt.execute(model, BadItems(pairs), {"output_0": t})
    with pytest.raises(TypeError, match="mapping"):
        rt.execute(model, [("x", t)], {"output_0": t})


def test_load_model_refuses_a_fifo_without_blocking(rt, tmp_path):
    import os

    fifo = tmp_path / "model.neff"
    os.mkfifo(fifo)
    with pytest.raises(NrtError, match="Failed to open NEFF file") as ei:
        rt.load_model(str(fifo))
    assert ei.value.status_code == 1
