"""NrtpyTensor: the documented API (seed doc), construction, copies, free."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import nrtpy
from nrtpy import NrtpyError, NrtpyTensor, NrtTensor
from support import raw, used


# ----------------------------------------------------- seed doc, verbatim


def test_doc_example_create_write_read():
    import numpy as np
    from nrtpy import NrtpyTensor

    # Allocate a device tensor from a NumPy array
    data = np.random.randn(1, 10).astype(np.float32)
    tensor = NrtpyTensor.from_numpy(data, name="input")

    # Overwrite in place (no reallocation)
    new_data = np.zeros((1, 10), dtype=np.float32)
    tensor.write_from_numpy(new_data)

    # Read back to host
    host_array = tensor.numpy()

    assert tensor.shape == (1, 10)
    assert tensor.dtype == np.float32
    assert tensor.name == "input"
    assert host_array.dtype == np.float32
    assert host_array.shape == (1, 10)
    np.testing.assert_array_equal(host_array, new_data)
    assert repr(tensor) == "NrtpyTensor(shape=(1, 10), dtype=float32, name=input)"


def test_doc_example_multiple_cores(fresh_runtime):
    import numpy as np
    from nrtpy import NrtpyTensor

    data = np.random.randn(1, 10).astype(np.float32)

    import nrtpy
    from nrtpy import NrtpyTensor

    nrtpy.configure(visible_cores=[0, 1])

    # Allocate tensors on different cores
    t0 = NrtpyTensor.from_numpy(data, name="core0_input", core_id=0)
    t1 = NrtpyTensor.from_numpy(data, name="core1_input", core_id=1)

    assert nrtpy.runtime_info()["visible_cores"] == 2
    assert (t0.core_id, t1.core_id) == (0, 1)
    assert (t0.tensor_ref.core_id, t1.tensor_ref.core_id) == (0, 1)
    assert t0.tensor_ref.name == "core0_input"
    assert t1.tensor_ref.name == "core1_input"
    np.testing.assert_array_equal(t0.numpy(), data)
    np.testing.assert_array_equal(t1.numpy(), data)
    assert nrtpy.memory_stats(1).bytes_used >= data.nbytes


def test_doc_free_tensor_via_singleton(rt):
    # "call nrtpy.get_nrtpy_singleton().free_tensor(tensor)"
    tensor = NrtpyTensor.from_numpy(np.ones(8, np.float32))
    nrtpy.get_nrtpy_singleton().free_tensor(tensor)
    assert tensor.tensor_ref.is_freed


# ------------------------------------------------------------ from_numpy


def test_from_numpy_attributes(rt):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    t = NrtpyTensor.from_numpy(a, name="x", core_id=1)
    assert type(t) is NrtpyTensor
    assert t.shape == (2, 3, 4)
    assert all(type(d) is int for d in t.shape)
    assert t.dtype == np.dtype(np.int32)
    assert isinstance(t.dtype, np.dtype)
    assert t.name == "x"
    assert t.nbytes == 96
    assert t.core_id == 1
    ref = t.tensor_ref
    assert isinstance(ref, NrtTensor)
    assert (ref.size, ref.core_id, ref.name) == (96, 1, "x")
    assert ref.va != 0
    assert not ref.is_freed


def test_from_numpy_unnamed(rt):
    t = NrtpyTensor.from_numpy(np.zeros(3, np.uint8))
    assert t.name is None
    assert t.tensor_ref.name == "unnamed_tensor"
    assert repr(t) == "NrtpyTensor(shape=(3,), dtype=uint8, name=None)"


def test_from_numpy_copies_the_data(rt):
    a = np.arange(10, dtype=np.float64)
    t = NrtpyTensor.from_numpy(a)
    a[:] = -1  # the device copy is independent of the host array
    np.testing.assert_array_equal(t.numpy(), np.arange(10, dtype=np.float64))


def test_numpy_returns_a_new_array_each_time(rt):
    t = NrtpyTensor.from_numpy(np.arange(4, dtype=np.int16))
    a, b = t.numpy(), t.numpy()
    assert a is not b
    assert not np.shares_memory(a, b)
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.owndata
    a[0] = 100
    np.testing.assert_array_equal(t.numpy(), np.arange(4, dtype=np.int16))


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda a: a[:, ::2], id="strided"),
        pytest.param(lambda a: np.asfortranarray(a), id="fortran"),
        pytest.param(lambda a: a.T, id="transposed"),
        pytest.param(lambda a: a[::-1], id="reversed"),
    ],
)
def test_from_numpy_non_contiguous(rt, make):
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    src = make(base)
    t = NrtpyTensor.from_numpy(src)
    assert t.shape == src.shape
    assert t.nbytes == src.nbytes
    out = t.numpy()
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, src)
    assert raw(out) == np.ascontiguousarray(src).tobytes()


def test_unaligned_arrays(rt):
    buf = bytearray(8 * 5 + 1)
    src = np.frombuffer(buf, dtype=np.float64, offset=1)
    src[:] = [1.5, -2.0, 3.25, 0.0, 9.0]
    assert not src.flags.aligned and src.flags.c_contiguous
    t = NrtpyTensor.from_numpy(src)
    np.testing.assert_array_equal(t.numpy(), src)
    out_buf = bytearray(8 * 5 + 3)
    out = np.frombuffer(out_buf, dtype=np.float64, offset=3)
    assert t.numpy(out=out) is out
    np.testing.assert_array_equal(out, [1.5, -2.0, 3.25, 0.0, 9.0])
    t.write_from_numpy(out * 2)
    np.testing.assert_array_equal(t.numpy(), [3.0, -4.0, 6.5, 0.0, 18.0])


def test_from_numpy_list(rt):
    t = NrtpyTensor.from_numpy([[1, 2, 3], [4, 5, 6]], name="lst")
    expected = np.array([[1, 2, 3], [4, 5, 6]])
    assert t.shape == (2, 3)
    assert t.dtype == expected.dtype
    np.testing.assert_array_equal(t.numpy(), expected)


def test_from_numpy_read_only_array(rt):
    a = np.arange(5, dtype=np.uint16)
    a.flags.writeable = False
    np.testing.assert_array_equal(NrtpyTensor.from_numpy(a).numpy(), a)


@pytest.mark.parametrize(
    "value, dtype",
    [
        (np.float32(3.5), np.float32),
        (np.array(-7, dtype=np.int16), np.int16),
        (np.complex128(1 - 2j), np.complex128),
        (2.25, np.float64),
        (True, np.bool_),
    ],
)
def test_from_numpy_scalars_and_0d(rt, value, dtype):
    t = NrtpyTensor.from_numpy(value)
    assert t.shape == ()
    assert t.dtype == np.dtype(dtype)
    assert t.nbytes == np.dtype(dtype).itemsize
    out = t.numpy()
    assert out.shape == ()
    assert out.dtype == np.dtype(dtype)
    assert out == value


def test_write_0d(rt):
    t = NrtpyTensor.from_numpy(np.array(1.0, dtype=np.float32))
    t.write_from_numpy(np.float32(-2.5))
    assert t.numpy() == np.float32(-2.5)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)])
def test_zero_element_arrays(rt, shape):
    before = used(0)
    t = NrtpyTensor.from_numpy(np.zeros(shape, np.float32), name="empty")
    assert used(0) == before
    assert t.shape == shape
    assert t.nbytes == 0
    assert t.tensor_ref.size == 0
    assert not t.tensor_ref.is_freed
    out = t.numpy()
    assert out.shape == shape
    assert out.dtype == np.float32
    t.write_from_numpy(np.zeros(shape, np.float32))
    out2 = np.empty(shape, np.float32)
    assert t.numpy(out=out2) is out2
    with pytest.raises(ValueError, match="source 4 bytes, target 0 bytes"):
        t.write_from_numpy(np.zeros(1, np.float32))
    del t, out
    gc.collect()
    assert used(0) == before


def test_zero_element_tensor_free(rt):
    t = NrtpyTensor.from_numpy(np.zeros((3, 0), np.int8))
    rt.free_tensor(t)
    assert t.tensor_ref.is_freed
    with pytest.raises(NrtpyError, match="freed"):
        t.numpy()
    with pytest.raises(NrtpyError, match="freed"):
        t.write_from_numpy(np.zeros((3, 0), np.int8))


def test_from_numpy_memory_accounting(rt):
    before = used(0)
    t = NrtpyTensor.from_numpy(np.zeros(1000, np.uint8), core_id=0)
    assert used(0) == before + 1000
    t2 = NrtpyTensor.from_numpy(np.zeros(24, np.uint8), core_id=1)
    assert used(0) == before + 1000
    assert t2.core_id == 1
    del t, t2


def test_from_numpy_object_dtype(rt):
    before = used(0)
    with pytest.raises(TypeError, match="Python objects"):
        NrtpyTensor.from_numpy(np.array([1, "a", None], dtype=object))
    assert used(0) == before


def test_from_numpy_bad_arguments(rt):
    a = np.zeros(2, np.float32)
    with pytest.raises(TypeError):
        NrtpyTensor.from_numpy(a, name=5)
    with pytest.raises(ValueError):
        NrtpyTensor.from_numpy(a, core_id=-1)
    with pytest.raises(TypeError):
        NrtpyTensor.from_numpy()
    with pytest.raises(TypeError):
        NrtpyTensor.from_numpy(a, bogus=1)
    with pytest.raises(TypeError):
        NrtpyTensor.from_numpy(a, "n", 0, "extra")
    with pytest.raises(TypeError):
        NrtpyTensor.from_numpy(a, "n", name="again")


def test_from_numpy_keywords(rt):
    t = NrtpyTensor.from_numpy(array=np.ones(2, np.int8), name="kw", core_id=1)
    assert (t.name, t.core_id) == ("kw", 1)


def test_from_numpy_subclass(rt):
    class Sub(NrtpyTensor):
        pass

    t = Sub.from_numpy(np.arange(3, dtype=np.int64), name="s")
    assert type(t) is Sub
    assert repr(t) == "Sub(shape=(3,), dtype=int64, name=s)"
    np.testing.assert_array_equal(t.numpy(), np.arange(3))


# ----------------------------------------------------- write_from_numpy


def test_write_from_numpy_in_place(rt):
    t = NrtpyTensor.from_numpy(np.zeros((4, 4), np.float32))
    va = t.tensor_ref.va
    ref = t.tensor_ref
    before = used(0)
    new = np.arange(16, dtype=np.float32).reshape(4, 4)
    assert t.write_from_numpy(new) is None
    assert t.tensor_ref is ref
    assert t.tensor_ref.va == va
    assert used(0) == before
    np.testing.assert_array_equal(t.numpy(), new)


def test_write_from_numpy_only_byte_size_matters(rt):
    t = NrtpyTensor.from_numpy(np.zeros(4, np.float32))
    src = np.arange(16, dtype=np.uint8)
    t.write_from_numpy(src)  # same byte size, other dtype and shape
    assert t.dtype == np.float32 and t.shape == (4,)
    assert raw(t.numpy()) == src.tobytes()


def test_write_from_numpy_non_contiguous_and_list(rt):
    t = NrtpyTensor.from_numpy(np.zeros((3, 2), np.int64))
    src = np.arange(12, dtype=np.int64).reshape(3, 4)[:, 1::2]
    t.write_from_numpy(src)
    np.testing.assert_array_equal(t.numpy(), src)
    t.write_from_numpy(np.asfortranarray(src))
    np.testing.assert_array_equal(t.numpy(), src)
    t.write_from_numpy([[9, 8], [7, 6], [5, 4]])
    np.testing.assert_array_equal(t.numpy(), [[9, 8], [7, 6], [5, 4]])


@pytest.mark.parametrize("n", [3, 5, 0])
def test_write_from_numpy_size_mismatch(rt, n):
    data = np.arange(4, dtype=np.float32)
    t = NrtpyTensor.from_numpy(data)
    with pytest.raises(ValueError) as ei:
        t.write_from_numpy(np.full(n, 7, np.float32))
    msg = str(ei.value)
    assert f"{4 * n} bytes" in msg and "16 bytes" in msg
    assert msg == f"Size mismatch: source {4 * n} bytes, target 16 bytes"
    np.testing.assert_array_equal(t.numpy(), data)


def test_write_from_numpy_object_dtype(rt):
    t = NrtpyTensor.from_numpy(np.zeros(2, np.int64))
    with pytest.raises(TypeError):
        t.write_from_numpy(np.array([1, None], dtype=object))
    np.testing.assert_array_equal(t.numpy(), [0, 0])


# ------------------------------------------------------------ numpy(out)


def test_numpy_out_returns_out(rt):
    data = np.arange(10, dtype=np.float32).reshape(1, 10)
    t = NrtpyTensor.from_numpy(data)
    out = np.full((1, 10), -1, np.float32)
    res = t.numpy(out=out)
    assert res is out
    np.testing.assert_array_equal(out, data)
    # any writable C-contiguous array of the same byte size
    out8 = np.zeros(40, np.uint8)
    assert t.numpy(out8) is out8
    assert out8.tobytes() == data.tobytes()
    assert t.numpy(out=None).shape == (1, 10)


@pytest.mark.parametrize("n", [9, 11])
def test_numpy_out_wrong_size(rt, n):
    t = NrtpyTensor.from_numpy(np.arange(10, dtype=np.float32))
    out = np.full(n, -1, np.float32)
    with pytest.raises(ValueError, match=f"out has {4 * n} bytes, the tensor 40 bytes"):
        t.numpy(out=out)
    np.testing.assert_array_equal(out, np.full(n, -1, np.float32))


def test_numpy_out_non_contiguous(rt):
    t = NrtpyTensor.from_numpy(np.arange(10, dtype=np.float32))
    out = np.zeros(20, np.float32)[::2]
    with pytest.raises(ValueError, match="contiguous"):
        t.numpy(out=out)
    assert not out.any()


def test_numpy_out_read_only(rt):
    t = NrtpyTensor.from_numpy(np.arange(10, dtype=np.float32))
    out = np.zeros(10, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        t.numpy(out=out)
    assert not out.any()


def test_numpy_out_bad_keyword(rt):
    t = NrtpyTensor.from_numpy(np.arange(2, dtype=np.float32))
    with pytest.raises(TypeError):
        t.numpy(output=np.zeros(2, np.float32))


# ----------------------------------------------------------- constructor


def test_constructor(rt):
    ref = rt.allocate_tensor(40, name="raw")
    t = NrtpyTensor(ref, (1, 10), np.float32, name="input")
    assert t.tensor_ref is ref
    assert t.shape == (1, 10)
    assert t.dtype == np.dtype(np.float32) and isinstance(t.dtype, np.dtype)
    assert t.name == "input"
    assert t.nbytes == 40
    assert repr(t) == "NrtpyTensor(shape=(1, 10), dtype=float32, name=input)"
    t.write_from_numpy(np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(rt.tensor_read(ref), np.arange(10, dtype=np.float32).tobytes())


def test_constructor_keywords_and_defaults(rt):
    ref = rt.allocate_tensor(8)
    t = NrtpyTensor(tensor_ref=ref, shape=[2, 2], dtype="int16")
    assert t.shape == (2, 2)
    assert t.dtype == np.dtype("int16")
    assert t.name is None
    assert repr(t) == "NrtpyTensor(shape=(2, 2), dtype=int16, name=None)"


def test_constructor_int_shape(rt):
    ref = rt.allocate_tensor(40)
    t = NrtpyTensor(ref, 10, np.float32)
    assert t.shape == (10,)
    assert NrtpyTensor(ref, (np.int32(2), 5), "f4").shape == (2, 5)
    assert all(type(d) is int for d in NrtpyTensor(ref, (np.int32(2), 5), "f4").shape)


@pytest.mark.parametrize("dtype", [np.float32, "float32", "<f4", np.dtype("f4"), "f"])
def test_constructor_dtype_normalised(rt, dtype):
    ref = rt.allocate_tensor(8)
    t = NrtpyTensor(ref, 2, dtype)
    assert type(t.dtype) is type(np.dtype(np.float32))
    assert t.dtype == np.dtype(np.float32)
    assert t.numpy().dtype == np.dtype(np.float32)


def test_constructor_ml_dtype_by_name(rt):
    import ml_dtypes

    ref = rt.allocate_tensor(4)
    t = NrtpyTensor(ref, 2, "bfloat16")
    assert t.dtype == np.dtype(ml_dtypes.bfloat16)


def test_constructor_size_mismatch(rt):
    ref = rt.allocate_tensor(40)
    with pytest.raises(ValueError, match="needs 44 bytes, the tensor has 40 bytes"):
        NrtpyTensor(ref, 11, np.float32)
    with pytest.raises(ValueError):
        NrtpyTensor(ref, (5, 2), np.float64)
    with pytest.raises(ValueError):
        NrtpyTensor(ref, (-1, 10), np.float32)
    with pytest.raises(ValueError):
        NrtpyTensor(ref, (2**40, 2**40, 2**40), np.float32)


def test_constructor_bad_types(rt):
    ref = rt.allocate_tensor(8)
    arr_tensor = NrtpyTensor.from_numpy(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="tensor_ref must be an NrtTensor"):
        NrtpyTensor(object(), 2, np.float32)
    with pytest.raises(TypeError, match="tensor_ref must be an NrtTensor"):
        NrtpyTensor(arr_tensor, 2, np.float32)
    with pytest.raises(TypeError):
        NrtpyTensor(b"12345678", 2, np.float32)
    with pytest.raises(TypeError):
        NrtpyTensor(ref, 2, np.float32, name=3)
    with pytest.raises(TypeError):
        NrtpyTensor(ref, 2, object)
    with pytest.raises(TypeError):
        NrtpyTensor(ref, 2.0, np.float32)
    with pytest.raises(TypeError):
        NrtpyTensor(ref, 2)


def test_nrt_tensor_cannot_be_instantiated():
    with pytest.raises(TypeError):
        NrtTensor()


def test_tensors_share_a_ref(rt):
    ref = rt.allocate_tensor(16)
    a = NrtpyTensor(ref, 4, np.float32)
    b = NrtpyTensor(ref, (2, 2), np.int32)
    a.write_from_numpy(np.array([1, 2, 3, 4], np.float32))
    assert b.numpy().tobytes() == np.array([1, 2, 3, 4], np.float32).tobytes()
    rt.free_tensor(a)
    with pytest.raises(NrtpyError):
        b.numpy()


# -------------------------------------------------------------------- free


def test_free_nrtpy_tensor(rt):
    before = used(0)
    t = NrtpyTensor.from_numpy(np.ones(1024, np.float32), name="f")
    assert used(0) == before + 4096
    assert t.tensor_ref.va != 0
    assert rt.free_tensor(t) is None
    assert used(0) == before
    assert t.tensor_ref.is_freed
    assert t.tensor_ref.va == 0
    # properties stay readable
    assert (t.shape, t.dtype, t.name, t.nbytes, t.core_id) == ((1024,), np.float32, "f", 4096, 0)
    assert (t.tensor_ref.size, t.tensor_ref.name) == (4096, "f")
    rt.free_tensor(t)  # double free: no-op
    rt.free_tensor(t.tensor_ref)
    assert used(0) == before


def test_free_nrt_tensor(rt):
    before = used(1)
    ref = rt.allocate_tensor(512, core_id=1)
    assert used(1) == before + 512
    rt.free_tensor(ref)
    assert ref.is_freed
    assert ref.va == 0
    assert used(1) == before
    rt.free_tensor(ref)
    assert used(1) == before


def test_use_after_free(rt):
    t = NrtpyTensor.from_numpy(np.ones(4, np.float32))
    rt.free_tensor(t)
    with pytest.raises(NrtpyError, match="freed") as ei:
        t.numpy()
    assert str(ei.value) == (
        "Nrtpy Error: Unable to read from a freed tensor. Please check the lifetime of the tensor."
    )
    with pytest.raises(NrtpyError, match="freed"):
        t.numpy(out=np.zeros(4, np.float32))
    with pytest.raises(NrtpyError, match="freed") as ei:
        t.write_from_numpy(np.ones(4, np.float32))
    assert str(ei.value) == (
        "Nrtpy Error: Unable to write to a freed tensor. Please check the lifetime of the tensor."
    )
    with pytest.raises(NrtpyError, match="freed"):
        rt.tensor_read(t)
    with pytest.raises(NrtpyError, match="freed"):
        rt.tensor_write(t, b"\0" * 16)
    with pytest.raises(NrtpyError, match="freed"):
        rt.slice_from_tensor(t, 0, 4)


def test_free_type_error(rt):
    with pytest.raises(TypeError, match="must be an NrtTensor or an NrtpyTensor"):
        rt.free_tensor(np.zeros(2))
    with pytest.raises(TypeError):
        rt.free_tensor(None)


def test_memory_returned_when_last_reference_dropped(rt):
    before = used(0)
    t = NrtpyTensor.from_numpy(np.zeros(MIB_F32, np.float32))
    assert used(0) == before + 4 * MIB_F32
    ref = t.tensor_ref
    del t
    gc.collect()
    assert used(0) == before + 4 * MIB_F32  # the NrtTensor is still alive
    del ref
    gc.collect()
    assert used(0) == before


def test_memory_returned_from_reference_cycle(rt):
    before = used(0)

    class Holder:
        pass

    h = Holder()
    h.self = h
    h.t = NrtpyTensor.from_numpy(np.zeros(1000, np.uint8))
    assert used(0) == before + 1000
    del h
    gc.collect()
    assert used(0) == before


def test_many_tensors_freed(rt):
    before = used(0)
    tensors = [NrtpyTensor.from_numpy(np.full(16, i, np.int32)) for i in range(200)]
    assert used(0) == before + 200 * 64
    for i, t in enumerate(tensors):
        np.testing.assert_array_equal(t.numpy(), np.full(16, i, np.int32))
    del tensors, t
    gc.collect()
    assert used(0) == before


MIB_F32 = 1 << 18  # float32 elements in 1 MiB


# ------------------------------------------------------------- subclasses


def test_subclass_constructed_with_keywords(rt):
    """nkipy's DeviceTensor pattern: cls(tensor_ref=..., shape=<tuple
    subclass>, dtype=<scalar type>, name=...) on a subclass without
    __init__, then reads through the low-level runtime into a bytearray."""

    class Shape(tuple):
        pass

    class DeviceTensor(NrtpyTensor):
        def as_bytes(self):
            buf = bytearray(self.nbytes)
            nrtpy.get_nrtpy_singleton().tensor_read_to_pybuffer(self.tensor_ref, buf)
            return bytes(buf)

    src = np.arange(6, dtype=np.float32)
    ref = rt.allocate_tensor(size=src.nbytes, core_id=0, name="dev")
    rt.tensor_write_from_pybuffer(ref, memoryview(src).cast("B"))
    t = DeviceTensor(tensor_ref=ref, shape=Shape((2, 3)), dtype=np.float32, name="dev")
    assert type(t.shape) is tuple and t.shape == (2, 3)
    assert t.dtype == np.dtype(np.float32)
    assert t.as_bytes() == src.tobytes()
    np.testing.assert_array_equal(t.numpy(), src.reshape(2, 3))


def test_subclass_with_own_init(rt):
    class Tagged(NrtpyTensor):
        def __init__(self, tensor_ref, shape, dtype, name=None, tag=None):
            super().__init__(tensor_ref, shape, dtype, name)
            self.tag = tag

    ref = rt.allocate_tensor(8)
    t = Tagged(ref, 2, np.float32, name="x", tag="weights")
    assert (t.tag, t.shape, t.name) == ("weights", (2,), "x")
    u = Tagged.from_numpy(np.ones(2, np.float32), name="y")
    assert (u.tag, u.name) == (None, "y")


def test_subclass_instances_in_cycles_are_collected(rt):
    class Node(NrtpyTensor):
        pass

    before = used(0)
    a = Node.from_numpy(np.zeros(500, np.uint8))
    b = Node.from_numpy(np.zeros(300, np.uint8))
    a.peer, b.peer = b, a
    a.me = a
    assert used(0) == before + 800
    del a, b
    gc.collect()
    assert used(0) == before


def test_uninitialised_tensor(rt):
    t = NrtpyTensor.__new__(NrtpyTensor)
    assert repr(t) == "<NrtpyTensor, not initialised>"
    with pytest.raises(NrtpyError, match="not initialised"):
        t.numpy()
    with pytest.raises(NrtpyError, match="not initialised"):
        t.write_from_numpy(np.zeros(1))
    with pytest.raises(TypeError, match="uninitialised"):
        rt.free_tensor(t)
    with pytest.raises(TypeError, match="uninitialised"):
        rt.tensor_read(t)
    with pytest.raises(TypeError, match="uninitialised"):
        rt.slice_from_tensor(t)
    t.__init__(rt.allocate_tensor(8), 2, np.float32, name="late")
    t.write_from_numpy(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    assert repr(t) == "NrtpyTensor(shape=(2,), dtype=float32, name=late)"


def test_subclass_init_without_super(rt):
    class Forgetful(NrtpyTensor):
        def __init__(self, *args, **kwargs):
            self.args = args

    t = Forgetful(rt.allocate_tensor(4), 1, np.float32)
    assert len(t.args) == 3
    with pytest.raises(NrtpyError, match="not initialised"):
        t.numpy()


def test_name_cycle_is_collected(rt):
    class Name(str):
        pass

    before = used(0)
    name = Name("cyclic")
    t = NrtpyTensor.from_numpy(np.zeros(1000, np.uint8), name=name)
    name.tensor = t
    assert t.name == "cyclic"
    del name, t
    gc.collect()
    assert used(0) == before
