"""nrtpy.neff: compile (tracing NumPy code into a NEFF) and inspect.

These tests need no runtime: they check the NEFF that ``compile`` writes
(docs/neff-emulator-format.md) through ``inspect`` and by reading the
archive back.  Executing the NEFFs is tested in test_model.py.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import struct
import tarfile

import ml_dtypes
import numpy as np
import pytest

import nrtpy.neff
from nrtpy.neff import _container
from support import neff_members


def program_of(path):
    """(def.json, program.json, archive files) of a compiled NEFF."""
    files = neff_members(path)
    return (json.loads(files["sg00/def.json"]),
            json.loads(files["sg00/program.json"]), files)


def add(a_input, b_input):
    return a_input + b_input


# -- compile + inspect: the header ----------------------------------------


def test_header_fields(tmp_path):
    a = np.ones((128, 512), np.float16)
    path = nrtpy.neff.compile(add, a, a, path=tmp_path / "add.neff")
    assert path == tmp_path / "add.neff"
    info = nrtpy.neff.inspect(path)
    h = info["header"]
    assert h["header_size"] == 1024
    assert (h["neff_version_major"], h["neff_version_minor"]) == (2, 0)
    assert h["pkg_version"] == 1
    assert h["name"] == "add"
    assert h["feature_bits"] == 0
    assert h["num_tpb"] == 1
    assert h["lnc_size"] == 1
    assert h["neff_build_version"] == "nrtpy.neff 1"
    raw = path.read_bytes()
    assert h["data_size"] == len(raw) - 1024
    payload = raw[1024:]
    assert payload[:2] == b"\x1f\x8b"  # gzip
    assert h["hash"] == hashlib.sha256(payload).hexdigest()
    assert len(h["uuid"]) == 32
    # the raw layout of docs/neff-emulator-format.md §1
    assert struct.unpack_from("<QQQQQ", raw, 0) == (1, 1024, len(payload), 2, 0)
    assert raw[0xDC:0xDC + 4] == b"add\0"
    assert info["subgraphs"] == ["sg00"]
    assert info["emulator_program"] is True
    assert info["files"] == ["neff.json", "sg00/def.json", "sg00/program.json"]
    neff_json = json.loads(neff_members(path)["neff.json"])
    assert neff_json == {"name": "add", "version": "2.0",
                         "generator": "nrtpy.neff", "subgraphs": ["sg00"]}


def test_name_argument(tmp_path):
    a = np.ones(4, np.float32)
    path = nrtpy.neff.compile(add, a, a, path=tmp_path / "x.neff", name="kernel")
    assert nrtpy.neff.inspect(path)["header"]["name"] == "kernel"
    path = nrtpy.neff.compile(lambda x: -x, a, path=tmp_path / "l.neff")
    assert nrtpy.neff.inspect(path)["header"]["name"] == "<lambda>"


def test_compile_accepts_str_path(tmp_path):
    a = np.ones(4, np.float32)
    path = nrtpy.neff.compile(add, a, a, path=str(tmp_path / "s.neff"))
    assert path == tmp_path / "s.neff"
    assert path.is_file()
    assert not list(tmp_path.glob("*.tmp"))


# -- compile + inspect: the I/O table ---------------------------------------


def test_inputs_named_after_parameters_in_order(tmp_path):
    def kernel(zeta, alpha, mid):
        return zeta * alpha + mid.astype(np.float32)

    path = nrtpy.neff.compile(
        kernel, np.ones((2, 3), np.float32), np.ones((3,), np.float32),
        np.ones((2, 1), np.int32), path=tmp_path / "k.neff")
    info = nrtpy.neff.inspect(path)
    assert info["inputs"] == [
        {"name": "zeta", "size": 24, "shape": [2, 3], "dtype": "float32"},
        {"name": "alpha", "size": 12, "shape": [3], "dtype": "float32"},
        {"name": "mid", "size": 8, "shape": [2, 1], "dtype": "int32"},
    ]
    assert info["outputs"] == [
        {"name": "output_0", "size": 24, "shape": [2, 3], "dtype": "float32"}]
    definition, _, _ = program_of(path)
    # NEFF order: inputs, then outputs; ids in that order
    assert [(k, v["type"], v["var_id"]) for k, v in definition["var"].items()] == [
        ("zeta", "input", 0), ("alpha", "input", 1), ("mid", "input", 2),
        ("output_0", "output", 3)]
    assert definition["emulator_program"] == "program.json"


def test_varargs_inputs(tmp_path):
    def kernel(first, *rest):
        return first + rest[0] + rest[1]

    a = np.ones(3, np.int64)
    info = nrtpy.neff.inspect(nrtpy.neff.compile(kernel, a, a, a,
                                                 path=tmp_path / "v.neff"))
    assert [e["name"] for e in info["inputs"]] == ["first", "rest0", "rest1"]


def test_too_many_example_inputs(tmp_path):
    a = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3"):
        nrtpy.neff.compile(add, a, a, a, path=tmp_path / "x.neff")


@pytest.mark.parametrize("dtype, name", [
    (np.float32, "float32"), (np.float16, "float16"),
    (ml_dtypes.bfloat16, "bfloat16"), (ml_dtypes.float8_e4m3, "float8_e4m3"),
    (ml_dtypes.float8_e4m3fn, "float8_e4m3fn"),
    (ml_dtypes.float8_e5m2, "float8_e5m2"), (ml_dtypes.float8_e3m4, "float8_e3m4"),
    (np.float64, "float64"), (np.int8, "int8"), (np.int32, "int32"),
    (np.int64, "int64"), (np.uint8, "uint8"), (np.uint16, "uint16"),
    (np.bool_, "bool"),
])
def test_io_dtypes(tmp_path, dtype, name):
    x = np.zeros((5, 2), dtype)
    info = nrtpy.neff.inspect(nrtpy.neff.compile(lambda x: x, x,
                                                 path=tmp_path / "d.neff"))
    itemsize = np.dtype(dtype).itemsize
    assert info["inputs"] == [{"name": "x", "size": 10 * itemsize,
                               "shape": [5, 2], "dtype": name}]
    assert info["outputs"] == [{"name": "output_0", "size": 10 * itemsize,
                                "shape": [5, 2], "dtype": name}]


def test_example_inputs_need_only_shape_and_dtype(tmp_path):
    class Spec:
        shape = (4, 8)
        dtype = np.dtype(np.float16)

    info = nrtpy.neff.inspect(nrtpy.neff.compile(np.exp, Spec(),
                                                 path=tmp_path / "e.neff"))
    assert info["inputs"][0]["shape"] == [4, 8]
    assert info["inputs"][0]["dtype"] == "float16"


def test_scalar_input(tmp_path):
    info = nrtpy.neff.inspect(nrtpy.neff.compile(
        lambda s, v: s * v, np.float32(2), np.ones(3, np.float32),
        path=tmp_path / "s.neff"))
    assert info["inputs"][0] == {"name": "s", "size": 4, "shape": [],
                                 "dtype": "float32"}
    assert info["outputs"][0]["shape"] == [3]


def test_tuple_return(tmp_path):
    def kernel(x):
        return x + 1, x.sum(axis=0), (x > 0)

    x = np.ones((3, 4), np.float32)
    info = nrtpy.neff.inspect(nrtpy.neff.compile(kernel, x, path=tmp_path / "t.neff"))
    assert info["outputs"] == [
        {"name": "output_0", "size": 48, "shape": [3, 4], "dtype": "float32"},
        {"name": "output_1", "size": 16, "shape": [4], "dtype": "float32"},
        {"name": "output_2", "size": 12, "shape": [3, 4], "dtype": "bool"},
    ]


def test_output_names(tmp_path):
    def kernel(x):
        return x * 2, x - 1

    x = np.ones(4, np.int32)
    path = nrtpy.neff.compile(kernel, x, path=tmp_path / "n.neff",
                              output_names=("doubled", "minus_one"))
    info = nrtpy.neff.inspect(path)
    assert [e["name"] for e in info["outputs"]] == ["doubled", "minus_one"]
    _, program, _ = program_of(path)
    assert program["buffers"]["doubled"]["kind"] == "output"
    assert program["buffers"]["minus_one"]["kind"] == "output"
    assert "output_0" not in program["buffers"]


@pytest.mark.parametrize("names, match", [
    (["a", "b"], "2 output names for 1 outputs"),
    ([], "0 output names for 1 outputs"),
    ([""], "non-empty"),
    (["x"], "distinct from the inputs"),
    (["out.0"], "without '.'"),
])
def test_bad_output_names(tmp_path, names, match):
    with pytest.raises(ValueError, match=match):
        nrtpy.neff.compile(lambda x: x + 1, np.ones(2, np.float32),
                           path=tmp_path / "b.neff", output_names=names)
    assert not (tmp_path / "b.neff").exists()


@pytest.mark.parametrize("names", [[3], "ab", 5])
def test_output_names_of_the_wrong_type(tmp_path, names):
    with pytest.raises(TypeError, match="must be a (str|sequence of str)"):
        nrtpy.neff.compile(lambda x: x + 1, np.ones(2, np.float32),
                           path=tmp_path / "b.neff", output_names=names)
    assert not (tmp_path / "b.neff").exists()


def test_duplicate_output_names(tmp_path):
    with pytest.raises(ValueError, match="distinct"):
        nrtpy.neff.compile(lambda x: (x + 1, x - 1), np.ones(2, np.float32),
                           path=tmp_path / "b.neff", output_names=["o", "o"])


def test_output_that_is_an_input_is_copied(tmp_path):
    x = np.ones(3, np.float32)
    path = nrtpy.neff.compile(lambda x: (x, x), x, path=tmp_path / "id.neff")
    _, program, _ = program_of(path)
    assert program["ops"] == [
        {"op": "copy", "in": ["x"], "out": "output_0"},
        {"op": "copy", "in": ["x"], "out": "output_1"},
    ]


def test_result_written_straight_to_output(tmp_path):
    path = nrtpy.neff.compile(add, np.ones(3, np.float16), np.ones(3, np.float16),
                              path=tmp_path / "a.neff")
    _, program, _ = program_of(path)
    assert program["format"] == "nrtpy-emulator-program"
    assert program["version"] == 1
    assert program["buffers"] == {
        "a_input": {"kind": "input", "dtype": "float16", "shape": [3]},
        "b_input": {"kind": "input", "dtype": "float16", "shape": [3]},
        "output_0": {"kind": "output", "dtype": "float16", "shape": [3]},
    }
    assert program["ops"] == [{"op": "add", "in": ["a_input", "b_input"],
                               "out": "output_0"}]


def test_constants_closed_over(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    bias = np.array([1, 2, 3, 4], np.float32)

    def layer(x):
        # w used twice: one constant; w.sum() is computed now, a constant
        return x @ w + bias + w.sum() + (x @ w)

    path = nrtpy.neff.compile(layer, np.ones((2, 3), np.float32),
                              path=tmp_path / "c.neff")
    definition, program, files = program_of(path)
    consts = {k: v for k, v in definition["var"].items() if v["type"] == "file"}
    assert sorted(consts) == ["const.0", "const.1", "const.2"]
    for cname, v in consts.items():
        assert v["file_name"] == f"{cname}.npy"
        assert program["buffers"][cname]["kind"] == "const"
        assert program["buffers"][cname]["var"] == cname
    arrays = {c: np.load(io.BytesIO(files[f"sg00/{c}.npy"])) for c in consts}
    assert np.array_equal(arrays["const.0"], w)
    assert np.array_equal(arrays["const.1"], bias)
    assert arrays["const.2"].shape == () and arrays["const.2"] == 66
    assert arrays["const.2"].dtype == np.float32
    assert consts["const.0"]["size"] == w.nbytes
    info = nrtpy.neff.inspect(path)
    assert [e["name"] for e in info["inputs"]] == ["x"]  # constants are not I/O
    assert "sg00/const.0.npy" in info["files"]


def test_non_contiguous_constant(tmp_path):
    w = np.arange(12, dtype=np.int32).reshape(3, 4).T  # Fortran order view
    path = nrtpy.neff.compile(lambda x: x + w, np.ones((4, 3), np.int32),
                              path=tmp_path / "nc.neff")
    _, _, files = program_of(path)
    back = np.load(io.BytesIO(files["sg00/const.0.npy"]))
    assert np.array_equal(back, w)
    assert back.flags.c_contiguous


def test_scalar_constant_keeps_its_shape(tmp_path):
    # a NumPy scalar closed over is a 0-d constant: x.sum() + c is 0-d
    c = np.float32(1.5)
    path = nrtpy.neff.compile(lambda x: x.sum() + c, np.ones(3, np.float32),
                              path=tmp_path / "s.neff")
    assert nrtpy.neff.inspect(path)["outputs"][0]["shape"] == []
    _, program, files = program_of(path)
    assert program["buffers"]["const.0"]["shape"] == []
    back = np.load(io.BytesIO(files["sg00/const.0.npy"]))
    assert back.shape == () and back == 1.5


def test_temporary_constants_are_distinct(tmp_path):
    # Temporary arrays die while tracing; a new one may get the id of a dead
    # one.  Each must still be its own constant.
    def kernel(x):
        y = x
        for v in range(1, 30):
            y = y + np.asarray(np.float32(v)).reshape(())
        return y

    path = nrtpy.neff.compile(kernel, np.ones(3, np.float32), path=tmp_path / "t.neff")
    _, _, files = program_of(path)
    values = sorted(float(np.load(io.BytesIO(b))) for n, b in files.items()
                    if n.endswith(".npy"))
    assert values == [float(v) for v in range(1, 30)]


def test_python_scalars_use_weak_promotion(tmp_path):
    # NEP 50: x (float16) * 2.5 stays float16; int32 + 1 stays int32.
    path = nrtpy.neff.compile(lambda h, i: (h * 2.5, i + 1),
                              np.ones(3, np.float16), np.ones(3, np.int32),
                              path=tmp_path / "w.neff")
    info = nrtpy.neff.inspect(path)
    assert [e["dtype"] for e in info["outputs"]] == ["float16", "int32"]
    _, program, _ = program_of(path)
    fulls = [op for op in program["ops"] if op["op"] == "full"]
    assert [op["value"] for op in fulls] == [2.5, 1]


def test_promotion_follows_numpy(tmp_path):
    def kernel(h, f, i, u):
        return h + f, i / i, i + u, h.mean(), i.mean(), (i > 1).sum()

    ex = (np.ones(3, np.float16), np.ones(3, np.float32), np.ones(3, np.int32),
          np.ones(3, np.uint8))
    info = nrtpy.neff.inspect(nrtpy.neff.compile(kernel, *ex, path=tmp_path / "p.neff"))
    expected = [np.asarray(r).dtype.name for r in kernel(*ex)]
    assert [e["dtype"] for e in info["outputs"]] == expected
    assert expected == ["float32", "float64", "int32", "float16", "float64", "int64"]


def test_fp16_matmul_accumulates_wider(tmp_path):
    path = nrtpy.neff.compile(np.matmul, np.ones((2, 3), np.float16),
                              np.ones((3, 4), np.float16), path=tmp_path / "m.neff")
    _, program, _ = program_of(path)
    (op,) = program["ops"]
    assert op["op"] == "matmul"
    assert program["buffers"]["output_0"]["dtype"] == "float16"
    assert program["buffers"]["output_0"]["shape"] == [2, 4]


def test_op_attributes(tmp_path):
    def kernel(x):
        return (x.sum(axis=-1, keepdims=True), x.argmax(axis=1),
                nrtpy.neff.softmax(x, axis=-1), x.T, x[1:, ::-2],
                np.concatenate([x, x], axis=-1))

    path = nrtpy.neff.compile(kernel, np.ones((3, 4), np.float32),
                              path=tmp_path / "o.neff")
    _, program, _ = program_of(path)
    ops = {op["out"]: op for op in program["ops"]}
    assert ops["output_0"]["axes"] == [1] and ops["output_0"]["keepdims"] is True
    assert ops["output_1"]["axis"] == 1 and ops["output_1"]["op"] == "argmax"
    assert ops["output_2"]["axis"] == 1 and ops["output_2"]["op"] == "softmax"
    assert ops["output_3"]["perm"] == [1, 0]
    assert ops["output_4"]["op"] == "slice"
    assert ops["output_4"]["start"] == [1, 3] and ops["output_4"]["step"] == [1, -2]
    assert ops["output_5"]["op"] == "concatenate" and ops["output_5"]["axis"] == 1
    info = nrtpy.neff.inspect(path)
    assert [e["shape"] for e in info["outputs"]] == [
        [3, 1], [3], [3, 4], [4, 3], [2, 2], [3, 8]]
    assert info["outputs"][1]["dtype"] == "int64"


def test_integer_index_drops_dimension(tmp_path):
    info = nrtpy.neff.inspect(nrtpy.neff.compile(
        lambda x: (x[1], x[..., -1], x[0, 1:3]), np.ones((3, 4, 5), np.float32),
        path=tmp_path / "i.neff"))
    assert [e["shape"] for e in info["outputs"]] == [[4, 5], [3, 4], [2, 5]]


def test_arctan2_traced(tmp_path):
    # NumPy's result dtype: float16 stays float16, an int32 operand
    # promotes to float64.
    rng = np.random.default_rng(5)
    for dt in (np.float32, np.float16, np.int32):
        y = (rng.standard_normal(37) * 4).astype(dt)
        x = (rng.standard_normal(37) * 4).astype(dt)
        path = nrtpy.neff.compile(lambda y, x: np.arctan2(y, x), y, x,
                                  path=tmp_path / "a.neff")
        model = nrtpy.NrtpyModel.load_from_neff(path)
        got = model({"y": nrtpy.NrtpyTensor.from_numpy(y, name="y"),
                     "x": nrtpy.NrtpyTensor.from_numpy(x, name="x")})
        got = got["output_0"].numpy()
        want = np.arctan2(y, x)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-3
                                   if dt == np.float16 else 1e-6)



def test_copysign_traced(tmp_path):
    # Bit for bit NumPy's: signed zeros, infinities and NaNs of either sign
    # in both operands, an int32 operand promoted to float64.
    special = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, -np.nan, 1e-40]
    for dt in (np.float32, np.float16, np.float64, np.int32):
        with np.errstate(invalid="ignore", over="ignore"):
            x = np.array([a for a in special for _ in special]).astype(dt)
            y = np.array([b for _ in special for b in special]).astype(dt)
        path = nrtpy.neff.compile(lambda x, y: np.copysign(x, y), x, y,
                                  path=tmp_path / "c.neff")
        model = nrtpy.NrtpyModel.load_from_neff(path)
        got = model({"x": nrtpy.NrtpyTensor.from_numpy(x, name="x"),
                     "y": nrtpy.NrtpyTensor.from_numpy(y, name="y")})
        got = got["output_0"].numpy()
        want = np.copysign(x, y)
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes(), dt


# -- compile: errors --------------------------------------------------------


@pytest.mark.parametrize("fn, op", [
    (lambda x: np.fft.fft(x), "numpy.fft.fft"),
    (lambda x: np.sort(x), "numpy.sort"),
    (lambda x: np.cumsum(x), "numpy.cumsum"),
    (lambda x: np.hypot(x, x), "numpy.hypot"),
    (lambda x: np.exp(x, out=x), "numpy.exp"),
    (lambda x: np.add.reduce(x), "numpy.add.reduce"),
    (lambda x: np.unique(x), "numpy.unique"),
    (lambda x: np.add(x, x, dtype=np.float64), "numpy.add: ['dtype']"),
    (lambda x: np.multiply(x, 2, casting="unsafe"), "numpy.multiply: ['casting']"),
    (lambda x: np.dot(x, x, out=x), "numpy.dot with out="),
    (lambda x: x.cumsum(), "numpy.ndarray.cumsum"),
    (lambda x: x.var(), "numpy.ndarray.var"),
    (lambda x: np.var(x), "numpy.var"),
])
def test_unsupported_op_names_it(tmp_path, fn, op):
    with pytest.raises(TypeError, match="unsupported (operation|arguments)") as ei:
        nrtpy.neff.compile(fn, np.ones(4, np.float32), path=tmp_path / "u.neff")
    assert op in str(ei.value)
    assert not (tmp_path / "u.neff").exists()


def test_ufunc_default_keywords_accepted(tmp_path):
    path = nrtpy.neff.compile(
        lambda x: np.add(x, 1, out=None, where=True, casting="same_kind", order="K"),
        np.ones(3, np.float32), path=tmp_path / "k.neff")
    assert nrtpy.neff.inspect(path)["outputs"][0]["dtype"] == "float32"


def test_missing_attribute_is_attribute_error(tmp_path):
    with pytest.raises(AttributeError, match="no attribute 'frobnicate'"):
        nrtpy.neff.compile(lambda x: x.frobnicate, np.ones(3, np.float32),
                           path=tmp_path / "a.neff")


def test_newaxis_indexing(tmp_path):
    path = nrtpy.neff.compile(
        lambda x: (x[None], x[:, None], x[..., None], x[None, 1, ..., None, ::2],
                   x[np.newaxis, :, np.newaxis], x[:], x[...]),
        np.ones((3, 4), np.float32), path=tmp_path / "n.neff")
    info = nrtpy.neff.inspect(path)
    x = np.ones((3, 4))
    assert [e["shape"] for e in info["outputs"]] == [
        list(x[None].shape), list(x[:, None].shape), list(x[..., None].shape),
        list(x[None, 1, ..., None, ::2].shape), list(x[None, :, None].shape),
        [3, 4], [3, 4]]
    _, program, _ = program_of(path)
    # x[:] and x[...] are x: copied to their outputs, no slice
    assert program["ops"][-2:] == [{"op": "copy", "in": ["x"], "out": "output_5"},
                                   {"op": "copy", "in": ["x"], "out": "output_6"}]


def test_bad_indices(tmp_path):
    x = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match="basic slicing"):
        nrtpy.neff.compile(lambda x: x[True], x, path=tmp_path / "b.neff")
    with pytest.raises(IndexError, match="too many indices"):
        nrtpy.neff.compile(lambda x: x[0, 0, 0], x, path=tmp_path / "b.neff")
    with pytest.raises(IndexError, match="out of bounds"):
        nrtpy.neff.compile(lambda x: x[:, 4], x, path=tmp_path / "b.neff")
    with pytest.raises(IndexError, match="single ellipsis"):
        nrtpy.neff.compile(lambda x: x[..., ...], x, path=tmp_path / "b.neff")


def test_reshape_spellings(tmp_path):
    path = nrtpy.neff.compile(
        lambda x: (x.reshape(6, 2), x.reshape((4, 3)), x.reshape([-1]),
                   np.reshape(x, (2, 6)), np.reshape(x, shape=(12, 1))),
        np.ones((3, 4), np.float32), path=tmp_path / "r.neff")
    assert [e["shape"] for e in nrtpy.neff.inspect(path)["outputs"]] == [
        [6, 2], [4, 3], [12], [2, 6], [12, 1]]
    with pytest.raises(ValueError):
        nrtpy.neff.compile(lambda x: x.reshape(5, 2), np.ones((3, 4), np.float32),
                           path=tmp_path / "r.neff")


def test_data_dependent_control_flow(tmp_path):
    def kernel(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TypeError, match="truth value of a traced array"):
        nrtpy.neff.compile(kernel, np.ones(4, np.float32), path=tmp_path / "d.neff")


def test_conversion_to_numpy_refused(tmp_path):
    with pytest.raises(TypeError, match="cannot be converted to a NumPy array"):
        nrtpy.neff.compile(lambda x: np.asarray(x) + 1, np.ones(4, np.float32),
                           path=tmp_path / "a.neff")


def test_fancy_indexing_refused(tmp_path):
    with pytest.raises(TypeError, match="use np.take for gathers"):
        nrtpy.neff.compile(lambda x: x[x > 0], np.ones(4, np.float32),
                           path=tmp_path / "f.neff")
    with pytest.raises(TypeError, match="basic slicing"):
        nrtpy.neff.compile(lambda x: x[[0, 2]], np.ones(4, np.float32),
                           path=tmp_path / "f.neff")


def test_unsupported_dtype(tmp_path):
    with pytest.raises(TypeError, match="dtype complex64 is not supported"):
        nrtpy.neff.compile(lambda x: x, np.ones(4, np.complex64),
                           path=tmp_path / "c.neff")


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5, 2)])
def test_zero_element_input(tmp_path, shape):
    with pytest.raises(ValueError, match="has no elements"):
        nrtpy.neff.compile(lambda x: x + 1, np.ones(shape, np.float32),
                           path=tmp_path / "z.neff")
    assert not (tmp_path / "z.neff").exists()


def test_zero_element_output(tmp_path):
    with pytest.raises(ValueError, match="output_0 has no elements"):
        nrtpy.neff.compile(lambda x: x[2:1], np.ones(4, np.float32),
                           path=tmp_path / "z.neff")


def test_too_many_dimensions(tmp_path):
    with pytest.raises(ValueError, match="9 dimensions"):
        nrtpy.neff.compile(lambda x: x, np.ones((1,) * 9, np.float32),
                           path=tmp_path / "n.neff")


def test_shape_errors_are_numpy_errors(tmp_path):
    with pytest.raises(ValueError):
        nrtpy.neff.compile(add, np.ones(3, np.float32), np.ones(4, np.float32),
                           path=tmp_path / "s.neff")
    with pytest.raises(ValueError):
        nrtpy.neff.compile(np.matmul, np.ones((2, 3), np.float32),
                           np.ones((4, 2), np.float32), path=tmp_path / "s.neff")
    with pytest.raises(np.exceptions.AxisError):
        nrtpy.neff.compile(lambda x: x.sum(axis=2), np.ones((2, 3), np.float32),
                           path=tmp_path / "s.neff")


# -- inspect ------------------------------------------------------------------


def test_inspect_neff_without_emulator_program(tmp_path):
    definition = {"var": {
        "in0": {"type": "input", "size": 64, "var_id": 0},
        "state": {"type": "state-buffer", "size": 16},
        "out0": {"type": "output", "size": 32, "shape": [8], "dtype": "float32",
                 "var_id": 1},
    }}
    path = _container.write(tmp_path / "hw.neff", {
        "neff.json": b'{"name": "hw"}',
        "sg00/def.json": json.dumps(definition).encode(),
        "sg00/kelp.bin": b"\0" * 100,
    }, name="hw")
    info = nrtpy.neff.inspect(path)
    assert info["emulator_program"] is False
    assert info["subgraphs"] == ["sg00"]
    assert info["header"]["name"] == "hw"
    # without shape/dtype: a 1-D byte shape and dtype unknown
    assert info["inputs"] == [{"name": "in0", "size": 64, "shape": [64],
                               "dtype": "unknown"}]
    assert info["outputs"] == [{"name": "out0", "size": 32, "shape": [8],
                                "dtype": "float32"}]
    assert info["files"] == ["neff.json", "sg00/def.json", "sg00/kelp.bin"]


def test_inspect_several_subgraphs_in_order(tmp_path):
    def sg(i):
        return json.dumps({"var": {f"in{i}": {"type": "input", "size": 4},
                                   f"out{i}": {"type": "output", "size": 4}},
                           "emulator_program": "program.json"}).encode()

    path = _container.write(tmp_path / "m.neff", {
        "sg10/def.json": sg(10), "sg02/def.json": sg(2), "sg01/def.json": sg(1),
    }, name="m")
    info = nrtpy.neff.inspect(path)
    assert info["subgraphs"] == ["sg01", "sg02", "sg10"]
    assert [e["name"] for e in info["inputs"]] == ["in1", "in2", "in10"]
    assert [e["name"] for e in info["outputs"]] == ["out1", "out2", "out10"]


def test_inspect_raw_tar_payload_with_dot_slash(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = json.dumps({"var": {"x": {"type": "input", "size": 8,
                                         "shape": [2], "dtype": "int32"}}}).encode()
        ti = tarfile.TarInfo("./sg00/def.json")
        ti.size = len(data)
        tar.addfile(ti, io.BytesIO(data))
    payload = buf.getvalue()
    header = _container.pack_header({"pkg_version": 2, "header_size": 1024,
                                     "data_size": len(payload),
                                     "neff_version_major": 1, "name": "raw"})
    path = tmp_path / "raw.neff"
    path.write_bytes(header + payload)
    info = nrtpy.neff.inspect(path)
    assert info["header"]["pkg_version"] == 2
    assert info["header"]["neff_version_major"] == 1
    assert info["inputs"] == [{"name": "x", "size": 8, "shape": [2], "dtype": "int32"}]
    assert info["emulator_program"] is False


def test_inspect_garbage(tmp_path):
    path = tmp_path / "garbage.neff"
    path.write_bytes(b"this is not a NEFF")
    with pytest.raises(ValueError, match="not a NEFF"):
        nrtpy.neff.inspect(path)


def test_inspect_corrupt_files(tmp_path):
    good = nrtpy.neff.compile(add, np.ones(3, np.float32), np.ones(3, np.float32),
                              path=tmp_path / "good.neff").read_bytes()
    cases = {
        "truncated": good[:-10],
        "header_size": good[:8] + struct.pack("<Q", 512) + good[16:],
        "random_payload": good[:1024] + bytes(range(256)) * 2,
    }
    cases["random_payload"] = (good[:0x10] + struct.pack("<Q", 512)
                               + good[0x18:1024] + bytes(range(256)) * 2)
    for label, data in cases.items():
        path = tmp_path / f"{label}.neff"
        path.write_bytes(data)
        with pytest.raises(ValueError):
            nrtpy.neff.inspect(path)
    (tmp_path / "trunc.neff").write_bytes(good[:-10])
    with pytest.raises(ValueError, match="data_size"):
        nrtpy.neff.inspect(tmp_path / "trunc.neff")
    (tmp_path / "hs.neff").write_bytes(cases["header_size"])
    with pytest.raises(ValueError, match="header_size is 512, expected 1024"):
        nrtpy.neff.inspect(tmp_path / "hs.neff")


def test_inspect_bad_def_json(tmp_path):
    path = _container.write(tmp_path / "bad.neff",
                            {"sg00/def.json": b"{not json"}, name="bad")
    with pytest.raises(ValueError, match="def.json: invalid JSON"):
        nrtpy.neff.inspect(path)


@pytest.mark.parametrize("definition", [
    [], {"var": []}, {"var": {"x": {"type": "input", "size": "8"}}},
    {"var": {"x": {"type": "output", "size": 8, "shape": "2"}}},
    {"var": {"x": {"type": "input", "size": 8, "shape": [2, -1]}}},
    {"var": {"x": {"type": "input", "size": 8, "dtype": 3}}},
], ids=str)
def test_inspect_bad_var_table(tmp_path, definition):
    path = _container.write(tmp_path / "bad.neff",
                            {"sg00/def.json": json.dumps(definition).encode()}, name="bad")
    with pytest.raises(ValueError, match="def.json"):
        nrtpy.neff.inspect(path)


def test_inspect_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        nrtpy.neff.inspect(tmp_path / "nope.neff")


def test_container_roundtrip(tmp_path):
    files = {"a.txt": b"hello", "sg00/b.bin": bytes(range(256)),
             "sg00/def.json": b"{}"}
    path = _container.write(tmp_path / "r.neff", files, name="r" * 300, num_tpb=2)
    header = nrtpy.neff.inspect(path)["header"]
    assert neff_members(path) == files
    assert header["name"] == "r" * 255  # the field holds 255 bytes + NUL
    assert header["num_tpb"] == 2 and header["requested_tpb_count"] == 2
    raw = path.read_bytes()
    assert gzip.decompress(raw[1024:])[:5] == b"a.txt"


# -- the activation helpers on plain arrays -----------------------------------


def test_helpers_on_numpy_arrays():
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    np.testing.assert_array_equal(nrtpy.neff.relu(x), np.maximum(x, 0))
    np.testing.assert_allclose(nrtpy.neff.sigmoid(x), 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(nrtpy.neff.rsqrt(x[7:]), 1 / np.sqrt(x[7:]), rtol=1e-6)
    c = np.sqrt(2 / np.pi)
    np.testing.assert_allclose(nrtpy.neff.gelu(x),
                               0.5 * x * (1 + np.tanh(c * (x + 0.044715 * x ** 3))),
                               rtol=1e-5, atol=1e-7)
    m = x.reshape(1, 13)
    s = nrtpy.neff.softmax(m, axis=-1)
    np.testing.assert_allclose(s.sum(axis=-1), [1.0], rtol=1e-6)
    assert s.dtype == np.float32
    h = x.astype(np.float16)
    assert nrtpy.neff.gelu(h).dtype == np.float16
    assert nrtpy.neff.relu(h).dtype == np.float16
    b = x.astype(ml_dtypes.bfloat16)
    assert nrtpy.neff.sigmoid(b).dtype == ml_dtypes.bfloat16


def test_helpers_on_numpy_arrays_do_not_cancel_or_overflow(tmp_path):
    """gelu and sigmoid of NumPy arrays in the emulator's forms: gelu
    accurate where 0.5 x (1 + tanh u) cancels (x < -3), sigmoid's
    subnormal results where e^-x overflows; close to the emulator's."""
    x = np.float32([-9.0, -7.0, -5.1, -4.0, -3.0, -1.0, 0.0, 2.0, 12.0, -95.0, -100.0])
    v = x.astype(np.float64)
    m = -2 * np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)
    gelu64 = np.where(m > 0, v * np.exp(-np.abs(m)), v) / (1 + np.exp(-np.abs(m)))
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        g = nrtpy.neff.gelu(x[:9])
        s = nrtpy.neff.sigmoid(x)
    np.testing.assert_allclose(g, gelu64[:9], rtol=1e-5)
    np.testing.assert_allclose(s, np.exp(np.minimum(v, 0)) / (1 + np.exp(-np.abs(v))),
                               rtol=1e-5, atol=1.5e-45)  # a subnormal step
    assert s[-2] > 0 and s[-1] > 0  # subnormal, not 0
    from support import run_compiled
    np.testing.assert_allclose(run_compiled(tmp_path, nrtpy.neff.gelu, x[:9]), g, rtol=1e-5)
    np.testing.assert_allclose(run_compiled(tmp_path, nrtpy.neff.sigmoid, x), s, rtol=1e-5)
    assert np.isnan(nrtpy.neff.gelu(np.float32([-np.inf])))[0]


# -- inspect reads with the emulator's reader and its limits ------------------


def test_inspect_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.neff"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        nrtpy.neff.inspect(fifo)
    with pytest.raises(IsADirectoryError):
        nrtpy.neff.inspect(tmp_path)


def test_inspect_deeply_nested_json_is_a_value_error(tmp_path):
    path = _container.write(tmp_path / "deep.neff",
                            {"sg00/def.json": b"[" * 100_000 + b"]" * 100_000},
                            name="deep")
    with pytest.raises(ValueError, match="def.json: invalid JSON"):
        nrtpy.neff.inspect(path)


def test_inspect_header_fields_round_trip(tmp_path):
    # The writer and the reader share one header description: every field
    # written comes back, at its place.
    path = nrtpy.neff.compile(add, np.ones(3, np.float32), np.ones(3, np.float32),
                              path=tmp_path / "h.neff", name="hdr-é" * 60)
    header = nrtpy.neff.inspect(path)["header"]
    raw = path.read_bytes()
    assert set(header) == {f[0] for f in nrtpy._nrtpy.NEFF_HEADER_FIELDS}
    assert header["header_size"] == 1024
    assert header["data_size"] == len(raw) - 1024
    assert header["neff_build_version"] == "nrtpy.neff 1"
    assert header["hash"] == hashlib.sha256(raw[1024:]).hexdigest()
    assert len(header["uuid"]) == 32
    # a long non-ASCII name is cut to the field, never inside a character
    assert header["name"] == ("hdr-é" * 60).encode()[:255].decode("utf-8", "ignore")
    assert header["name"].encode() == raw[0xDC:0xDC + 255].rstrip(b"\0")


def test_inspect_rejects_bad_path_types(tmp_path):
    with pytest.raises(TypeError):
        nrtpy.neff.inspect(5)


def test_inspect_gzip_bomb_stops_at_the_archive_end(tmp_path):
    # 64 MiB of compressed zeros in a 64 KiB file: the zeros end the tar
    # archive at its first kilobyte, and the stream going on past it is
    # refused there, without inflating the rest.
    import zlib

    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + 15)
    chunk = bytes(1 << 20)
    payload = b"".join(comp.compress(chunk) for _ in range(64)) + comp.flush()
    assert len(payload) < 100_000
    header = _container.pack_header({
        "pkg_version": 1, "header_size": 1024, "data_size": len(payload),
        "neff_version_major": 2, "name": "bomb"})
    path = tmp_path / "bomb.neff"
    path.write_bytes(header + payload)
    with pytest.raises(ValueError, match=r"after the end of its tar archive \(at byte 1024\)"):
        nrtpy.neff.inspect(path)


def test_archive_reads_back_with_tarfile():
    # The ustar members _container writes without tarfile, read by tarfile:
    # sizes around the 512-byte blocks, a name of 100 bytes (UTF-8), one
    # that only fits split into ustar's prefix and name.
    files = {f"sg00/const.{n}.npy": bytes([n % 251]) * n
             for n in (0, 1, 511, 512, 513, 1024, 10_000)}
    files["a" * 98 + "é"] = b"x"
    files["d" * 60 + "/" + "b" * 50] = b"yz"
    archive = _container._tar(files, 1_700_000_000)
    assert len(archive) % tarfile.RECORDSIZE == 0
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == list(files)
        for m in members:
            assert m.isreg() and m.mode == 0o644 and m.mtime == 1_700_000_000
            assert tar.extractfile(m).read() == files[m.name]
