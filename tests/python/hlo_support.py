"""Helpers of the HLO compiler tests: compile a JAX function with
``nrtpy.neff.compile_hlo``, run the NEFF through ``NrtpyModel`` on the
emulator, compare with ``jax.jit`` on XLA:CPU; and a tiny protobuf writer
for hand-built modules."""

from __future__ import annotations

import struct

import numpy as np

from nrtpy import NrtpyModel, NrtpyTensor
import nrtpy.neff

import jax  # a test dependency (the Makefile installs it)
import jax.numpy as jnp  # noqa: F401  (re-exported for the tests)

jax.config.update("jax_platforms", "cpu")


def run_neff(path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Execute the NEFF at ``path`` with ``inputs``; outputs by name."""
    model = NrtpyModel.load_from_neff(path)
    tensors = {n: NrtpyTensor.from_numpy(np.ascontiguousarray(a), name=n)
               for n, a in inputs.items()}
    out = model(inputs=tensors)
    return {n: t.numpy() for n, t in out.items()}


def from_neff_io(got: np.ndarray, like: np.ndarray) -> np.ndarray:
    """An output of a NEFF that compile_hlo wrote, in the form XLA returns
    it: neuronx-cc's NEFFs hold pred as uint8 0/1 and a scalar as [1]."""
    if like.dtype == np.bool_ and got.dtype == np.uint8:
        assert set(np.unique(got).tolist()) <= {0, 1}, np.unique(got)
        got = got.astype(np.bool_)
    if like.ndim == 0 and got.shape == (1,):
        got = got.reshape(())
    return got


def compile_jax(fn, args, tmp_path, name="f", **kw):
    """(NEFF path, input names) of ``jax.jit(fn)`` lowered for ``args``."""
    lowered = jax.jit(fn, **kw).lower(*args)
    path = nrtpy.neff.compile_hlo(lowered, tmp_path / f"{name}.neff")
    info = nrtpy.neff.inspect(path)
    return path, [i["name"] for i in info["inputs"]], [o["name"] for o in info["outputs"]]


def check_jax(fn, *args, tmp_path, rtol=0.0, atol=0.0, name="f", **kw):
    """Compile ``fn`` for ``args`` (NumPy arrays), run it on the emulator and
    on XLA:CPU, assert the results agree (exactly by default; NaN equals
    NaN), return them."""
    path, in_names, out_names = compile_jax(fn, args, tmp_path, name, **kw)
    got = run_neff(path, dict(zip(in_names, args)))
    want = jax.jit(fn, **kw)(*args)
    want = want if isinstance(want, (tuple, list)) else (want,)
    want = [np.asarray(w) for w in jax.tree_util.tree_leaves(want)]
    want = [w for w in want if w.size]  # the NEFF leaves empty outputs out
    assert len(got) == len(want)
    for name_, w in zip(out_names, want):
        g = from_neff_io(got[name_], w)
        assert g.dtype == w.dtype, (name_, g.dtype, w.dtype)
        assert g.shape == w.shape, (name_, g.shape, w.shape)
        if rtol == 0 and atol == 0:
            np.testing.assert_array_equal(g, w, err_msg=name_, strict=True)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=rtol, atol=atol, err_msg=name_)
    return got


# -- a tiny protobuf writer, for hand-built modules -------------------------------


def varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(num: int, wire: int) -> bytes:
    return varint(num << 3 | wire)


def f_int(num: int, v: int) -> bytes:
    return key(num, 0) + varint(v)


def f_bytes(num: int, data: bytes | str) -> bytes:
    if isinstance(data, str):
        data = data.encode()
    return key(num, 2) + varint(len(data)) + data


def f_packed(num: int, values) -> bytes:
    return f_bytes(num, b"".join(varint(v) for v in values))


def f_floats(num: int, values) -> bytes:
    return f_bytes(num, struct.pack(f"<{len(values)}f", *values))


F32, S32, PRED, TUPLE = 11, 4, 1, 13


def shape(et: int, dims=(), tuple_shapes=()) -> bytes:
    return (f_int(2, et) + (f_packed(3, dims) if dims else b"")
            + b"".join(f_bytes(4, s) for s in tuple_shapes))


def instr(name, opcode, shp, iid, operands=(), **extra) -> bytes:
    out = f_bytes(1, name) + f_bytes(2, opcode) + f_bytes(3, shp) + f_int(35, iid)
    if operands:
        out += f_packed(36, operands)
    for k, v in extra.items():
        out += v
    return out


def frontend(**attrs: str) -> bytes:
    return b"".join(f_bytes(1, f_bytes(1, k) + f_bytes(2, v)) for k, v in attrs.items())


def computation(name, cid, instrs, root) -> bytes:
    return (f_bytes(1, name) + b"".join(f_bytes(2, i) for i in instrs)
            + f_int(5, cid) + f_int(6, root))


def module(name, comps, entry_id, extra=b"") -> bytes:
    return (f_bytes(1, name) + b"".join(f_bytes(3, c) for c in comps)
            + f_int(6, entry_id) + extra)
