"""nc_matmuls of a contraction loop traced as one matmul (isa._MatmulGroup):
the results against NumPy, and the loops that must stay one matmul per
call (an operand written between them, a PSUM access read between them,
operands that are not one box)."""

from __future__ import annotations

import io
import json
import tarfile

import ml_dtypes
import numpy as np

from nrtpy import nki
from nrtpy.neff._container import HEADER_SIZE
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl

RNG = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
    return RNG.uniform(-1.0, 1.0, shape).astype(np.float32).astype(dtype)


def program_ops(kernel, *args) -> list[str]:
    """The op names of the program that ``kernel`` compiles for ``args``."""
    path = kernel.specialize(*args).path
    with open(path, "rb") as f:
        f.seek(HEADER_SIZE)
        with tarfile.open(fileobj=io.BytesIO(f.read())) as tar:
            member = tar.extractfile("sg00/program.json")
            assert member is not None
            return [op["op"] for op in json.load(member)["ops"]]


def blocked(tiles: int, *, between=None):
    """out = lhsT.T @ rhs over `tiles` k tiles held in one SBUF tile each
    for lhsT and rhs ([128, tiles, M] and [128, tiles, N]); `between(k,
    lt, rt, acc)` runs after the k-th matmul."""
    @nki.jit
    def kernel(lhsT, rhs):
        K, M = lhsT.shape
        N = rhs.shape[1]
        out = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
        lt = nl.ndarray((128, tiles, M), lhsT.dtype, buffer=nl.sbuf)
        rt = nl.ndarray((128, tiles, N), rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(tiles):
            nisa.dma_copy(dst=lt[0:128, k, 0:M], src=lhsT[k * 128:(k + 1) * 128, 0:M])
            nisa.dma_copy(dst=rt[0:128, k, 0:N], src=rhs[k * 128:(k + 1) * 128, 0:N])
        acc = nl.ndarray((M, N), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(tiles):
            nisa.nc_matmul(dst=acc, stationary=lt[0:128, k, 0:M],
                           moving=rt[0:128, k, 0:N])
            if between is not None:
                between(k, lt, rt, acc)
        res = nl.ndarray((M, N), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nl.store(out, res)
        return out
    return kernel


def test_k_tiles_of_one_tile_are_one_matmul():
    lhsT, rhs = rand(512, 128), rand(512, 256)
    kernel = blocked(4)
    assert program_ops(kernel, lhsT, rhs).count("matmul") == 1
    np.testing.assert_allclose(kernel(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-4)


def test_bf16_k_tiles_accumulate_in_float32():
    lhsT = rand(384, 96, dtype=ml_dtypes.bfloat16)
    rhs = rand(384, 200, dtype=ml_dtypes.bfloat16)
    kernel = blocked(3)
    ops = program_ops(kernel, lhsT, rhs)
    assert ops.count("matmul") == 1 and "cast" not in ops
    want = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    np.testing.assert_allclose(kernel(lhsT, rhs), want, rtol=1e-4, atol=1e-4)


def test_an_operand_written_between_matmuls_splits_them():
    def scale(k, lt, rt, acc):
        if k == 1:  # the third tile of rhs is doubled before its matmul
            nisa.tensor_scalar(dst=rt[0:128, 2, 0:64], data=rt[0:128, 2, 0:64],
                               op0=nl.multiply, operand0=2.0)
    lhsT, rhs = rand(512, 32), rand(512, 64)
    kernel = blocked(4, between=scale)
    assert program_ops(kernel, lhsT, rhs).count("matmul") == 2
    want = rhs.copy()
    want[256:384] *= 2.0
    np.testing.assert_allclose(kernel(lhsT, rhs), lhsT.T @ want, rtol=1e-4, atol=1e-4)


def test_psum_read_between_matmuls_sees_the_partial_sum():
    @nki.jit
    def kernel(lhsT, rhs):
        out = nl.ndarray((2, 32, 48), nl.float32, buffer=nl.shared_hbm)
        lt = nl.ndarray((128, 2, 32), lhsT.dtype, buffer=nl.sbuf)
        rt = nl.ndarray((128, 2, 48), rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(2):
            nisa.dma_copy(dst=lt[0:128, k, 0:32], src=lhsT[k * 128:(k + 1) * 128, 0:32])
            nisa.dma_copy(dst=rt[0:128, k, 0:48], src=rhs[k * 128:(k + 1) * 128, 0:48])
        acc = nl.ndarray((32, 48), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(2):
            nisa.nc_matmul(dst=acc, stationary=lt[0:128, k, 0:32], moving=rt[0:128, k, 0:48])
            res = nl.ndarray((32, 48), nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nl.store(out[k], res)
        return out
    lhsT, rhs = rand(256, 32), rand(256, 48)
    got = kernel(lhsT, rhs)
    first = lhsT[:128].T @ rhs[:128]
    np.testing.assert_allclose(got[0], first, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], first + lhsT[128:].T @ rhs[128:], rtol=1e-4, atol=1e-4)


def test_tiles_out_of_order_are_one_matmul_each():
    @nki.jit
    def kernel(lhsT, rhs):
        out = nl.ndarray((16, 24), nl.float32, buffer=nl.shared_hbm)
        lt = nl.ndarray((128, 3, 16), lhsT.dtype, buffer=nl.sbuf)
        rt = nl.ndarray((128, 3, 24), rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(3):
            nisa.dma_copy(dst=lt[0:128, k, 0:16], src=lhsT[k * 128:(k + 1) * 128, 0:16])
            nisa.dma_copy(dst=rt[0:128, k, 0:24], src=rhs[k * 128:(k + 1) * 128, 0:24])
        acc = nl.ndarray((16, 24), nl.float32, buffer=nl.psum)
        for k in (0, 2, 1):
            nisa.nc_matmul(dst=acc, stationary=lt[0:128, k, 0:16], moving=rt[0:128, k, 0:24])
        res = nl.ndarray((16, 24), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nl.store(out, res)
        return out
    lhsT, rhs = rand(384, 16), rand(384, 24)
    assert program_ops(kernel, lhsT, rhs).count("matmul") == 2
    np.testing.assert_allclose(kernel(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-4)


def test_k_tiles_into_a_transposed_psum_access():
    # dst is no box in the tensor's order (a scatter of constant indices),
    # emitted again with each k tile: the constants taken back with it.
    @nki.jit
    def kernel(lhsT, rhs):
        out = nl.ndarray((48, 32), nl.float32, buffer=nl.shared_hbm)
        lt = nl.ndarray((128, 3, 32), lhsT.dtype, buffer=nl.sbuf)
        rt = nl.ndarray((128, 3, 48), rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(3):
            nisa.dma_copy(dst=lt[0:128, k, 0:32], src=lhsT[k * 128:(k + 1) * 128, 0:32])
            nisa.dma_copy(dst=rt[0:128, k, 0:48], src=rhs[k * 128:(k + 1) * 128, 0:48])
        acc = nl.ndarray((48, 32), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(3):
            nisa.nc_matmul(dst=acc.permute((1, 0)), stationary=lt[0:128, k, 0:32],
                           moving=rt[0:128, k, 0:48])
        res = nl.ndarray((48, 32), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nl.store(out, res)
        return out
    lhsT, rhs = rand(384, 32), rand(384, 48)
    assert program_ops(kernel, lhsT, rhs).count("matmul") == 1
    np.testing.assert_allclose(kernel(lhsT, rhs), (lhsT.T @ rhs).T, rtol=1e-4, atol=1e-4)


def test_a_group_is_one_nc_matmul_event_in_a_trace(tmp_path):
    from nrtpy import NrtpyModel, NrtpyTensor
    lhsT, rhs = rand(512, 128), rand(512, 256)
    path = blocked(4).specialize(lhsT, rhs).path
    model = NrtpyModel.load_from_neff(path)
    ntff = tmp_path / "k.ntff"
    model(inputs={"lhsT": NrtpyTensor.from_numpy(lhsT, name="lhsT"),
                  "rhs": NrtpyTensor.from_numpy(rhs, name="rhs")},
          save_trace=True, ntff_name=str(ntff))
    events = [e for e in json.loads(ntff.read_text())["traceEvents"]
              if e.get("cat") == "op"]
    # every op is an instruction's, the matmul nc_matmul's
    assert all(e["name"].split(" ")[0] in ("dma_copy", "nc_matmul", "tensor_copy",
                                           "store") for e in events), events
    matmuls = [e for e in events if e["name"].startswith("nc_matmul ")]
    assert len(matmuls) == 1
    assert "matmul" in [o["name"] for o in matmuls[0]["args"]["ops"]]
