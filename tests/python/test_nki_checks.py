"""nrtpy.nki: the compiler's checks at trace time, names not implemented,
run-time failures, NKI_ARTIFACTS_DIR and the NEFF's interface."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from nrtpy import NrtError, NrtpyModel, NrtpyTensor, nki
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl
from support import child_env, namespace

THIS = os.path.abspath(__file__)


def _line_of(fn, text):
    """The line of ``fn``'s source holding ``text``."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def check_error(kernel, args, instruction, rule, marker):
    with pytest.raises(nki.NkiCompileError) as info:
        kernel(*args)
    e = info.value
    assert isinstance(e, ValueError)
    assert e.instruction == instruction
    assert rule in e.rule
    assert e.filename == THIS
    assert e.lineno == _line_of(kernel.fn, marker)
    assert f"{THIS}:{e.lineno}: {instruction}: " in str(e)


def test_partition_axis_over_128():
    @nki.jit
    def kernel(a):
        t = nl.ndarray((256, 4), nl.float32, buffer=nl.sbuf)  # here
        return t
    check_error(kernel, (np.ones(1, np.float32),), "ndarray", "256 partitions", "# here")


def test_tile_over_sbuf_capacity_per_partition():
    @nki.jit
    def kernel(a):
        return nl.load(a)  # here
    # 128 x 60,000 float32 = 240,000 bytes per partition > 192 KiB (trn1)
    check_error(kernel, (np.ones((128, 60000), np.float32),), "load",
                "240000 bytes per partition in SBUF; trn1 has 196608", "# here")


def test_psum_capacity_and_target():
    @nki.jit(platform_target="trn2")
    def kernel(a):
        nl.zeros((128, 8192), nl.float32, buffer=nl.psum)  # here
    check_error(kernel, (np.ones(1, np.float32),), "ndarray",
                "32768 bytes per partition in PSUM; trn2 has 16384", "# here")


@pytest.mark.parametrize("m,n,rule", [
    (256, 512, "stationary free size 256 is over 128"),
    (128, 1024, "moving free size 1024 is over 512"),
])
def test_matmul_limits(m, n, rule):
    from nrtpy.nki.legacy import isa as old_isa  # (a result over 128 partitions)

    @nki.jit
    def kernel(s, mv):
        a = nl.ndarray((128, m), nl.float32)
        b = nl.ndarray((128, n), nl.float32)
        return old_isa.nc_matmul(a, b)  # here
    check_error(kernel, (np.ones(1, np.float32), np.ones(1, np.float32)),
                "nc_matmul", rule, "# here")


@pytest.mark.parametrize("sdt,mdt,rule", [
    (np.int8, np.float32, "does not take stationary of dtype int8"),
    (nl.bfloat16, np.int32, "does not take moving of dtype int32"),
    (np.float32, nl.bfloat16, "stationary is float32, so moving must be float32 "
                              "or tfloat32 too, not bfloat16"),
])
def test_matmul_operand_dtypes(sdt, mdt, rule):
    @nki.jit
    def kernel(s, m):
        st, mv = nl.load(s), nl.load(m)
        p = nl.ndarray((64, 32), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=st, moving=mv)  # here
        return p
    args = (np.ones((128, 64), sdt), np.ones((128, 32), mdt))
    check_error(kernel, args, "nc_matmul", rule, "# here")


def test_matmul_dst_dtype_and_fp8_operands():
    @nki.jit
    def kernel(s, m, out_dtype):
        p = nl.ndarray((64, 32), out_dtype, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=nl.load(s), moving=nl.load(m))  # here
        out = nl.ndarray((64, 32), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, p)
        return out
    s = np.ones((128, 64), nl.float8_e4m3)
    m = np.full((128, 32), 2, nl.float8_e5m2)  # two float8 formats may mix
    np.testing.assert_array_equal(kernel(s, m, nl.float32), np.full((64, 32), 256.0))
    check_error(kernel, (s, m, nl.bfloat16), "nc_matmul",
                "dst must be a float32 tile on NeuronCore-v2 and v3", "# here")


def test_bitvec_operators_need_integer_tiles():
    @nki.jit
    def kernel(a, b):
        x, y = nl.load(a), nl.load(b)
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=t, data1=x, data2=y, op=nl.bitwise_xor)  # tt
        u = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=u, data=t, op0=nl.add, operand0=1,
                           op1=nl.left_shift, operand1=2)  # ts
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, u)
        return out
    a = np.arange(128 * 8, dtype=np.int32).reshape(128, 8)
    np.testing.assert_array_equal(kernel(a, a + 5), ((a ^ (a + 5)) + 1) << 2)
    f = a.astype(np.float32)
    check_error(kernel, (f, f), "tensor_tensor",
                "the bitvec operator bitwise_xor needs integer tiles, but data1 "
                "is float32", "# tt")


def test_compute_engine_reading_hbm():
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(a))  # here
        return out
    check_error(kernel, (np.ones((4, 4), np.float32),), "exp", "in HBM", "# here")


def test_static_access_out_of_bounds():
    @nki.jit
    def kernel(a):
        return a.ap([[8, 4], [1, 16]], offset=0)  # here
    check_error(kernel, (np.ones((4, 8), np.float32),), "ap", "reaches outside",
                "# here")


def test_unimplemented_names_say_so():
    with pytest.raises(NotImplementedError, match=r"nki\.language\.average"):
        nl.average
    with pytest.raises(NotImplementedError, match=r"nki\.isa\.nc_matmul_mx"):
        nisa.nc_matmul_mx
    with pytest.raises(AttributeError):
        nl.no_such_name


def test_errors_for_wrong_types_and_values():
    with pytest.raises(TypeError):
        nki.jit(3)
    with pytest.raises(ValueError, match="unknown mode"):
        nki.jit(mode="fast")
    k = nki.jit(lambda a: a)
    with pytest.raises(TypeError, match="grid dimension"):
        k["x"]
    with pytest.raises(ValueError, match="at least 1"):
        k[0]
    with pytest.raises(RuntimeError, match="inside a kernel"):
        nl.ndarray((4, 4), nl.float32)


@nki.jit
def _gather_rows(src_tensor, row):
    P, F = 128, 64
    idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=idx, value=row)
    dst = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=dst, src=src_tensor.ap(pattern=[[F, P], [1, F]], offset=0,
                                             vector_offset=idx, indirect_dim=0))
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, dst)
    return out


def test_indirect_gather_and_its_oob_at_run_time():
    src = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    np.testing.assert_array_equal(_gather_rows(src, 5), np.broadcast_to(src[5], (128, 64)))
    with pytest.raises(NrtError) as info:
        _gather_rows(src, 128)
    assert info.value.status_code == 1006
    assert info.value.status_name == "NRT_EXEC_OOB"


def test_neff_interface_and_reload():
    src = np.ones((128, 64), np.float32)
    compiled = _gather_rows.specialize(src, 3)
    model = NrtpyModel.load_from_neff(compiled.path)
    assert list(model.input_tensors_info) == ["src_tensor"]
    assert list(model.output_tensors_info) == ["output_0"]
    assert list(model.output_tensors_info["output_0"].shape) == [128, 64]
    outs = model(inputs={"src_tensor": NrtpyTensor.from_numpy(src * 2, name="src_tensor")})
    np.testing.assert_array_equal(outs["output_0"].numpy(), src * 2)


def test_artifacts_dir_read_at_import(tmp_path):
    # In a child: NKI_ARTIFACTS_DIR is read when nrtpy.nki is imported.
    code = textwrap.dedent("""
        import os, sys
        os.environ["NKI_ARTIFACTS_DIR"] = sys.argv[1]
        import numpy as np
        from nrtpy import nki, NrtpyModel
        import nrtpy.nki.language as nl

        @nki.jit
        def double(x):
            out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
            nl.store(out, nl.multiply(nl.load(x), 2.0))
            return out

        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        assert (double(a) == a * 2).all()
        path = os.path.join(sys.argv[1], "kernel.neff")
        print(os.path.getsize(path) > 0,
              list(NrtpyModel.load_from_neff(path).input_tensors_info))
    """)
    folder = tmp_path / "artifacts"
    done = subprocess.run([sys.executable, "-c", code, str(folder)],
                          capture_output=True, text=True,
                          env=child_env(NRTPY_EMU_NAMESPACE=namespace("nki-artifacts")),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True ['x']"


def test_kernel_writing_its_argument_updates_the_array():
    from nrtpy.nki import legacy

    def kernel(a, out):
        nl.store(out, nl.add(nl.load(a), 1.0))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros_like(a)
    assert legacy.simulate_kernel(kernel, a, out) is None
    np.testing.assert_array_equal(out, a + 1)

