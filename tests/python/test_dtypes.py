"""Every fixed-size dtype travels with the tensor and round-trips bit-exactly."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nrtpy import NrtpyTensor
from support import raw

SHAPE = (3, 5, 7)

NUMPY_DTYPES = [
    np.bool_,
    np.int8,
    np.uint8,
    np.int16,
    np.uint16,
    np.int32,
    np.uint32,
    np.int64,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    np.longdouble,
    np.complex64,
    np.complex128,
    ">i4",
    ">f8",
    "S5",
    "U3",
    "V7",
    np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3"), ("d", "u1", (2,))]),
    np.dtype({"names": ["x", "y"], "formats": ["<u2", "<f4"], "offsets": [0, 8], "itemsize": 12}),
    "datetime64[ns]",
    "timedelta64[s]",
]

ML_DTYPES = [
    ml_dtypes.bfloat16,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e4m3,
    ml_dtypes.float8_e5m2,
    ml_dtypes.float8_e3m4,
    ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e5m2fnuz,
    ml_dtypes.int4,
]

# NaN payloads (quiet and signalling, both signs) by item size.
NAN_PATTERNS = {
    2: [0x7E01, 0x7C01, 0xFE55, 0x7FFF, 0x7F81, 0xFF81],
    4: [0x7FC12345, 0x7F800001, 0xFFA00001, 0x7FFFFFFF],
    8: [0x7FF8000000000001, 0x7FF0000000000001, 0xFFF123456789ABCD],
}


def dtype_id(dt) -> str:
    return str(np.dtype(dt))


def random_array(dtype, shape=SHAPE, seed=0):
    """An array of random bit patterns (NaN payloads included for floats)."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    if dt.itemsize == 1:
        # every byte value, then random ones
        pattern = np.resize(np.arange(256, dtype=np.uint8), count)
        buf = rng.permutation(pattern).tobytes()
    else:
        buf = rng.bytes(count * dt.itemsize)
    a = np.frombuffer(buf, dtype=dt).reshape(shape).copy()
    if dt.kind in "fc" and dt.itemsize // (2 if dt.kind == "c" else 1) in NAN_PATTERNS:
        width = dt.itemsize // (2 if dt.kind == "c" else 1)
        bits = a.reshape(-1).view(f"<u{width}")
        for i, p in zip(range(bits.size), NAN_PATTERNS[width]):
            bits[i] = p
    return a


def check_round_trip(src):
    t = NrtpyTensor.from_numpy(src, name="rt")
    assert t.dtype == src.dtype
    assert t.shape == src.shape
    assert t.nbytes == src.nbytes
    out = t.numpy()
    assert out.dtype == src.dtype
    assert out.shape == src.shape
    assert raw(out) == raw(src)
    # again through out= and after an overwrite
    other = random_array(src.dtype, src.shape, seed=1)
    t.write_from_numpy(other)
    out2 = np.empty_like(src)
    assert t.numpy(out=out2) is out2
    assert raw(out2) == raw(other)
    return t


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=dtype_id)
def test_numpy_dtype_round_trip(rt, dtype):
    check_round_trip(random_array(dtype))


@pytest.mark.parametrize("dtype", ML_DTYPES, ids=dtype_id)
def test_ml_dtypes_round_trip(rt, dtype):
    t = check_round_trip(random_array(dtype))
    assert t.dtype == np.dtype(dtype)
    assert t.dtype.name == np.dtype(dtype).name


@pytest.mark.parametrize(
    "dtype", [np.float16, ml_dtypes.bfloat16, np.int16, np.uint16], ids=dtype_id
)
def test_every_16_bit_pattern(rt, dtype):
    src = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dtype)
    t = NrtpyTensor.from_numpy(src)
    out = t.numpy()
    assert out.dtype == np.dtype(dtype)
    assert raw(out) == raw(src)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=dtype_id)
def test_nan_payloads_exact(rt, dtype):
    width = np.dtype(dtype).itemsize
    bits = np.array(NAN_PATTERNS[width] + [0, 1 << (8 * width - 1)], dtype=f"<u{width}")
    src = bits.view(dtype)
    out = NrtpyTensor.from_numpy(src).numpy()
    np.testing.assert_array_equal(out.view(f"<u{width}"), bits)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES[:16] + ML_DTYPES, ids=dtype_id)
def test_0d_round_trip(rt, dtype):
    src = random_array(dtype, shape=(), seed=3)
    t = NrtpyTensor.from_numpy(src)
    out = t.numpy()
    assert out.shape == () and out.dtype == np.dtype(dtype)
    assert raw(out) == raw(src)


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, "U3", "V7"],
                         ids=dtype_id)
def test_zero_element_dtype_kept(rt, dtype):
    t = NrtpyTensor.from_numpy(np.zeros((3, 0), dtype))
    out = t.numpy()
    assert out.shape == (3, 0)
    assert out.dtype == np.dtype(dtype)


def test_non_contiguous_ml_dtype(rt):
    src = random_array(ml_dtypes.bfloat16, (8, 6))[::2, ::3]
    out = NrtpyTensor.from_numpy(src).numpy()
    assert out.dtype == np.dtype(ml_dtypes.bfloat16)
    assert raw(out) == raw(np.ascontiguousarray(src))


def test_bfloat16_values(rt):
    src = np.array([1.0, -2.5, 3.140625, np.inf], dtype=ml_dtypes.bfloat16)
    out = NrtpyTensor.from_numpy(src).numpy()
    np.testing.assert_array_equal(out.astype(np.float32), [1.0, -2.5, 3.140625, np.inf])


def test_dtype_given_to_constructor_is_used_for_reads(rt):
    ref = rt.allocate_tensor(8)
    src = np.array([1.5, -3.0, 0.25, 8.0], dtype=ml_dtypes.bfloat16)
    rt.tensor_write(ref, src.tobytes())
    t = NrtpyTensor(ref, (2, 2), ml_dtypes.bfloat16)
    out = t.numpy()
    assert out.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.reshape(-1).astype(np.float32), [1.5, -3.0, 0.25, 8.0])


@pytest.mark.parametrize(
    "array",
    [
        pytest.param(lambda: np.array([1, "a", None], dtype=object), id="object"),
        pytest.param(lambda: np.zeros(2, dtype=[("a", "i4"), ("o", "O")]), id="struct-with-object"),
    ],
)
def test_object_dtypes_refused(rt, array):
    with pytest.raises(TypeError):
        NrtpyTensor.from_numpy(array())


def test_string_dtype_refused(rt):
    # numpy's variable-width StringDType holds pointers to host memory
    a = np.array(["abc", "a string longer than sixteen bytes"], dtype=np.dtypes.StringDType())
    with pytest.raises(TypeError):
        NrtpyTensor.from_numpy(a)
    ref = rt.allocate_tensor(32)
    with pytest.raises(TypeError):
        NrtpyTensor(ref, 2, np.dtypes.StringDType())


def test_object_dtype_refused_by_constructor(rt):
    ref = rt.allocate_tensor(16)
    with pytest.raises(TypeError, match="Python objects"):
        NrtpyTensor(ref, 2, object)


def test_dtype_table_matches_numpy():
    # The one table (NRTEMU_DTYPE_LIST, through _nrtpy.DTYPES) agrees with
    # NumPy and ml_dtypes on every row's item size and kind.
    from nrtpy import _dtypes
    from nrtpy._nrtpy import DTYPES

    assert DTYPES["unknown"] == (0, 0, "V", "")
    assert len(_dtypes.NAMES) == 17
    for name in _dtypes.NAMES:
        code, size, kind, _neff = DTYPES[name]
        dt = _dtypes.to_numpy(name)
        assert dt.name == name and dt.itemsize == size
        assert _dtypes.is_float(dt) == (kind == "f")
        assert kind == "f" or dt.kind == kind
    assert DTYPES["float32"][0] == 0xA and DTYPES["float8_e5m2"][0] == 0xF
    assert _dtypes.FP8 == {np.dtype(getattr(ml_dtypes, n)) for n in (
        "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "float8_e3m4")}
    with pytest.raises(ValueError, match="unknown dtype name 'complex64'"):
        _dtypes.to_numpy("complex64")
