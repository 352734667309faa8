"""Register-offset accesses that are boxes of a tensor: the emulator's
dynamic_slice / dynamic_update_slice of the window the box spans
(bounds "check"), against NumPy, and the ops they become."""

from __future__ import annotations

import io
import json
import tarfile

import numpy as np
import pytest

from nrtpy import NrtError, nki
from nrtpy.neff._container import HEADER_SIZE
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.uniform(-2.0, 2.0, shape).astype(np.float32)


def _n(v):
    return np.array([[v]], dtype=np.int32)


def _reg(n):
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    reg = nisa.register_alloc()
    nisa.register_load(reg, n_sb)
    return reg


def _body_ops(kernel, *arrays) -> list[str]:
    data = kernel.specialize(*arrays).path.read_bytes()[HEADER_SIZE:]
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.extractfile("sg00/program.json")
        assert member is not None
        ops = json.load(member)["ops"]
    return [o["op"] for op in ops if op["op"] == "while" for o in op["body"]]


@nki.jit
def strided_rows(x, n):
    """Every other row of row block i (64 of 128) and columns 8..23, for
    i < n, into out's block i."""
    out = nl.ndarray((x.shape[0] // 2, 16), x.dtype, buffer=nl.shared_hbm)
    for i in nl.dynamic_range(_reg(n)):
        t = nl.load(x[i * 128 + nl.arange(64)[:, None] * 2,
                      8 + nl.arange(16)[None, :]])
        nl.store(out[nl.ds(i * 64, 64), :], t)
    return out


def test_strided_read_is_a_window():
    x = rand(384, 32)
    y = strided_rows(x, _n(3))
    np.testing.assert_array_equal(y, x[0::2, 8:24])
    ops = _body_ops(strided_rows, x, _n(3))
    assert "dynamic_slice" in ops and "dynamic_update_slice" in ops
    assert "take" not in ops and "scatter" not in ops
    with pytest.raises(NrtError) as info:
        strided_rows(x, _n(4))
    assert info.value.status_name == "NRT_EXEC_OOB"


@nki.jit
def blocks_transposed(x, n, m):
    """Block (i, j) of 16 x 32 of x, read transposed through its view and
    written to block (j, i) of out, for i < n, j < m."""
    out = nl.ndarray((x.shape[1], x.shape[0]), x.dtype, buffer=nl.shared_hbm)
    mr = _reg(m)
    for i in nl.dynamic_range(_reg(n)):
        for j in nl.dynamic_range(mr):
            t = nl.load_transpose2d(x[nl.ds(i * 16, 16), nl.ds(j * 32, 32)])
            nl.store(out[nl.ds(j * 32, 32), nl.ds(i * 16, 16)], t)
    return out


def test_two_axes_moved():
    x = rand(48, 96)
    y = blocks_transposed(x, _n(3), _n(3))
    np.testing.assert_array_equal(y, x.T)
    y = blocks_transposed(x, _n(2), _n(1))
    np.testing.assert_array_equal(y[:32, :32], x[:32, :32].T)
    with pytest.raises(NrtError) as info:
        blocks_transposed(x, _n(2), _n(4))
    assert info.value.status_name == "NRT_EXEC_OOB"


@nki.jit
def strided_write(x, n):
    """Row i of x into every other column of out's row i (a write with a
    step: a scatter of the moved indices)."""
    out = nl.ndarray((x.shape[0], 2 * x.shape[1]), x.dtype, buffer=nl.shared_hbm)
    z = nl.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
    nl.store(out, z)
    for i in nl.dynamic_range(_reg(n)):
        t = nl.load(x[i, :])
        nl.store(out[i, nl.arange(x.shape[1])[None, :] * 2], t)
    return out


def test_strided_write_keeps_its_scatter():
    x = rand(4, 8)
    y = strided_write(x, _n(4))
    want = np.zeros((4, 16), np.float32)
    want[:, ::2] = x
    np.testing.assert_array_equal(y, want)
    assert "scatter" in _body_ops(strided_write, x, _n(4))
    with pytest.raises(NrtError) as info:
        strided_write(x, _n(5))
    assert info.value.status_name == "NRT_EXEC_OOB"
