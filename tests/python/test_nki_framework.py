"""A kernel inside a framework's HLO module (as nkipy embeds one): the
framework classes of both namespaces dump a kernel as ``custom-call
AwsNeuronCustomNativeKernel``, and nrtpy-cc inlines it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import nrtpy.neff
import nrtpy.nki.isa as nisa
import nrtpy.nki.language as nl
from hlo_support import F32, TUPLE, computation, f_bytes, f_int, instr, module, run_neff, shape
from nrtpy import nki
from nrtpy.nki import framework
from nrtpy.nki.legacy import compile as old_compile
import nrtpy.nki.legacy as old
import nrtpy.nki.legacy.language as onl


def add_kernel(a, b, bias=0.0):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.add(nl.load(a), nl.load(b)), bias))
    return out


def inplace_kernel(a, b):
    nl.store(a, nl.multiply(nl.load(a), nl.load(b)))
    return a


def grid_kernel(a):
    out = onl.ndarray(a.shape, a.dtype, buffer=onl.shared_hbm)
    i = onl.program_id(0) * 64 + onl.arange(64)[:, None]
    j = onl.arange(a.shape[1])[None, :]
    onl.store(out[i, j], onl.load(a[i, j]) * 2.0)
    return out


def hlo_with_kernel(config: str, arg_dims: list[tuple], out_dims: list[tuple],
                    tuple_result: bool) -> bytes:
    """``f(args) = custom_call(args)``: parameters named p0, p1, ..."""
    ins = [instr(f"p{k}.{k + 1}", "parameter", shape(F32, d), k + 1,
                 **({"parameter_number": f_int(9, k)} if k else {}))
           for k, d in enumerate(arg_dims)]
    n = len(arg_dims)
    outs = [shape(F32, d) for d in out_dims]
    result = shape(TUPLE, tuple_shapes=outs) if tuple_result else outs[0]
    ins.append(instr("kernel.9", "custom-call", result, n + 1,
                     operands=list(range(1, n + 1)),
                     target=f_bytes(28, "AwsNeuronCustomNativeKernel"),
                     cfg=f_bytes(43, config)))
    return module("m", [computation("main", 1, ins, n + 1)], 1)


def run_module(tmp_path, mod: bytes, args: list[np.ndarray]) -> dict[str, np.ndarray]:
    path = nrtpy.neff.compile_hlo(mod, tmp_path / "m.neff")
    return run_neff(path, {f"p{k}": a for k, a in enumerate(args)})


@pytest.fixture
def ab():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((128, 96), dtype=np.float32),
            rng.standard_normal((128, 96), dtype=np.float32))


def test_current_namespace_compile_kernel(tmp_path, ab):
    a, b = ab
    k = nki.jit(add_kernel)
    assert isinstance(k, framework.Kernel)
    fields = {f.name: getattr(k, f.name) for f in dataclasses.fields(k)
              if f.name != "func"}
    ck = framework.CompileKernel(k.func, **fields, lnc=1, target="trn2",
                                 artifacts_dir=str(tmp_path))
    opts = ck._compile_opts().set_pipeline_options("enable-linear-scan-allocation=true")
    nir = ck._cached_compile_to_bir(frontend=ck._frontend_cls(enable_backend_opt=False),
                                    inputs={"a": a, "b": b, "bias": 1.5},
                                    compile_opts=opts)
    cfg = nir.build_config()
    assert nir.is_tuple_return is False
    assert [(s.shape, s.dtype) for s in cfg.output_specs] == [((128, 96), np.float32)]
    assert cfg.operand_output_aliases == {} and cfg.has_collectives is False
    got = run_module(tmp_path, hlo_with_kernel(cfg.backend_config_b64, [a.shape, b.shape],
                                               [a.shape], False), [a, b])
    np.testing.assert_array_equal(got["output0"], a + b + np.float32(1.5))


def test_written_argument_is_an_aliased_result(tmp_path, ab):
    a, b = ab
    ck = framework.CompileKernel(inplace_kernel)
    cfg = ck._cached_compile_to_bir(inputs={"a": a, "b": b}).build_config()
    assert cfg.operand_output_aliases == {0: 0}
    got = run_module(tmp_path, hlo_with_kernel(cfg.backend_config_b64, [a.shape, b.shape],
                                               [a.shape], False), [a, b])
    np.testing.assert_array_equal(got["output0"], a * b)


def test_older_namespace_unified_kernel_with_grid(tmp_path, ab):
    a, _ = ab

    class FrameworkOp(old_compile.UnifiedKernel):
        def is_framework_tensor(self, t):
            return isinstance(t, np.ndarray)

    op = FrameworkOp.trace(grid_kernel, grid=(2,), kernel_return=True,
                           experimental_flags="", enable_cache=False,
                           platform_target="trn1")
    op.opts = dataclasses.replace(op.opts, enable_const_rewrite=True)
    cfg = op.dump_config(a)
    assert cfg.return_types == [(np.float32, (128, 96))]
    assert cfg.constant_values == [] and cfg.result_is_sequence is False
    got = run_module(tmp_path, hlo_with_kernel(cfg.dumped_config, [a.shape],
                                               [a.shape], False), [a])
    np.testing.assert_array_equal(got["output0"], a * 2)


def test_older_jit_is_a_generic_kernel_that_dumps(tmp_path, ab):
    a, b = ab
    k = old.jit(add_kernel)
    assert isinstance(k, old_compile.GenericKernel)
    assert isinstance(k[1], old_compile.GenericKernel)
    np.testing.assert_array_equal(k(a, b), a + b)  # still runs as a kernel

    def pair(a, b):
        return add_kernel(a, b), add_kernel(b, b, 1.0)
    with old.jit(pair).bind_arguments(a, b) as bound:
        cfg = old.jit(pair).dump_config_with_boundargs(bound)
    assert cfg.result_is_sequence is True and len(cfg.return_types) == 2
    got = run_module(tmp_path, hlo_with_kernel(cfg.dumped_config, [a.shape, b.shape],
                                               [a.shape, a.shape], True), [a, b])
    np.testing.assert_array_equal(got["output0"], a + b)
    np.testing.assert_array_equal(got["output1"], b + b + np.float32(1.0))


def test_mismatched_operands_are_refused(tmp_path, ab):
    a, b = ab
    cfg = framework.CompileKernel(add_kernel)._cached_compile_to_bir(
        inputs={"a": a, "b": b}).build_config()
    with pytest.raises(ValueError, match="takes 2 tensors.*passes 1"):
        nrtpy.neff.compile_hlo(hlo_with_kernel(cfg.backend_config_b64, [a.shape],
                                               [a.shape], False), tmp_path / "x.neff")
    with pytest.raises(ValueError, match="operand 1 .*traced"):
        nrtpy.neff.compile_hlo(hlo_with_kernel(cfg.backend_config_b64,
                                               [a.shape, (128, 95)], [a.shape], False),
                               tmp_path / "y.neff")
    with pytest.raises(TypeError, match="dict"):
        framework.CompileKernel(add_kernel)._cached_compile_to_bir(inputs=[a, b])


def test_older_typing_annotations(ab):
    # nkipy re-exports these; a parameter's mutability is what the kernel does
    from nrtpy.nki.legacy import typing as nt

    def scale(a: nt.mutable, b: nt.immutable):
        nl.store(a, nl.multiply(nl.load(a), 3.0))

    a, b = (x.copy() for x in ab)
    old.simulate_kernel(scale, a, b)
    np.testing.assert_array_equal(a, ab[0] * np.float32(3.0))
    np.testing.assert_array_equal(b, ab[1])


def beta2_add(a_input, b_input):
    # NKI's beta 2 frontend provides sbuf and hbm without an import
    a = sbuf.view(dtype=a_input.dtype, shape=a_input.shape)  # noqa: F821
    nisa.dma_copy(dst=a, src=a_input)
    b = sbuf.view(dtype=b_input.dtype, shape=b_input.shape)  # noqa: F821
    nisa.dma_copy(dst=b, src=b_input)
    c = sbuf.view(dtype=a_input.dtype, shape=a_input.shape)  # noqa: F821
    nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
    out = hbm.view(dtype=a_input.dtype, shape=a_input.shape)  # noqa: F821
    nisa.dma_copy(dst=out, src=c)
    return out


def test_beta2_kernels_get_their_implicit_memories(tmp_path, ab):
    a, b = ab
    np.testing.assert_array_equal(nki.jit(beta2_add)(a, b), a + b)
    assert "sbuf" not in globals()  # the module's own names are left alone
    op = old_compile.UnifiedKernel.trace(beta2_add, platform_target="trn2")
    cfg = op.dump_config(a, b)
    got = run_module(tmp_path, hlo_with_kernel(cfg.dumped_config, [a.shape, b.shape],
                                               [a.shape], False), [a, b])
    np.testing.assert_array_equal(got["output0"], a + b)
