"""HLO compiler, indexing opcodes: gather, scatter, dynamic-slice,
dynamic-update-slice, pad, reduce-window, convolution, sort, top-k and the
Neuron custom calls.  Each JAX function is compiled with
``nrtpy.neff.compile_hlo``, run on the emulator and compared with
``jax.jit`` on XLA:CPU (exactly, unless a tolerance is given)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from jax import lax

import hlo_support as hs
from hlo_support import check_jax, jax, jnp
import nrtpy.neff

RNG = np.random.default_rng(77)
X = RNG.standard_normal((6, 5)).astype(np.float32)
T3 = RNG.standard_normal((4, 5, 3)).astype(np.float32)
TOL = dict(rtol=2e-5, atol=2e-5)


def compiled_ops(fn, args, tmp_path, name="ops", **kw) -> list[dict]:
    """The emulator program ops that compile_hlo writes for ``fn``."""
    seen = []
    orig = nrtpy.neff._write_neff

    def capture(path, program, *a, **k):
        seen.append(program.ops)
        return orig(path, program, *a, **k)

    nrtpy.neff._write_neff = capture
    try:
        hs.compile_jax(fn, args, tmp_path, name, **kw)
    finally:
        nrtpy.neff._write_neff = orig
    return seen[0]


def op_names(ops) -> list[str]:
    out = []
    for op in ops:
        out.append(op["op"])
        for key in ("cond", "body"):
            out += op_names(op.get(key, []))
        for br in op.get("branches", []):
            out += op_names(br)
    return out


# -- gather ---------------------------------------------------------------------


def test_take_rows_is_one_take(tmp_path):
    idx = np.array([0, 5, 2, 5, -1, 6, 100, -7], np.int32)
    for mode in ("clip", "fill"):
        check_jax(lambda x, i: jnp.take(x, i, axis=0, mode=mode), X, idx,
                  tmp_path=tmp_path, name=f"take_{mode}")
    ops = op_names(compiled_ops(lambda x, i: jnp.take(x, i, axis=0, mode="clip"),
                                (X, idx), tmp_path))
    assert ops.count("take") == 1 and "add" not in ops, ops


def test_embedding_lookup_indexing(tmp_path):
    emb = RNG.standard_normal((10, 4)).astype(np.float32)
    ids = np.array([[1, 9, 0], [3, 3, 12]], np.int32)   # 12: out of range
    check_jax(lambda e, i: e[i], emb, ids, tmp_path=tmp_path)
    check_jax(lambda e, i: jnp.take(e, i, axis=0), emb, ids, tmp_path=tmp_path,
              name="take")


def test_take_other_axis_and_negative(tmp_path):
    idx = np.array([[4, -1], [0, 2]], np.int32)
    check_jax(lambda x, i: jnp.take(x, i, axis=1), T3, idx, tmp_path=tmp_path)
    check_jax(lambda x, i: x[:, i], X, np.array([3, -2, 9], np.int32),
              tmp_path=tmp_path, name="neg")


def test_gather_points_and_clamping(tmp_path):
    pts = np.array([[0, 1], [5, 4], [7, -3], [2, 2]], np.int32)
    check_jax(lambda x, p: x[p[:, 0], p[:, 1]], X, pts, tmp_path=tmp_path)
    # A raw gather: windows of 2x3 clamped into the operand.
    dn = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                    start_index_map=(0, 1))
    starts = np.array([[0, 0], [5, 4], [-3, 1], [2, 9]], np.int32)
    check_jax(lambda x, s: lax.gather(x, s, dn, (2, 3),
                                      mode=lax.GatherScatterMode.CLIP),
              X, starts, tmp_path=tmp_path, name="raw")


def test_gather_batching_dims(tmp_path):
    # take_along_axis yields operand_batching_dims in recent JAX.
    idx = RNG.integers(-2, 5, (4, 3, 3)).astype(np.int32)
    check_jax(lambda x, i: jnp.take_along_axis(x, i, axis=1, mode="clip"), T3, idx,
              tmp_path=tmp_path)


def test_gather_int_and_bf16(tmp_path):
    xi = RNG.integers(-100, 100, (6, 5)).astype(np.int16)
    xb = X.astype(ml_dtypes.bfloat16)
    idx = np.array([1, 0, 5], np.uint8)
    check_jax(lambda a, b, i: (a[i], b[:, i % 5]), xi, xb, idx, tmp_path=tmp_path)


# -- scatter ----------------------------------------------------------------------


def test_scatter_add_duplicates(tmp_path):
    idx = np.array([1, 3, 1, 1, 7, -1], np.int32)
    upd = RNG.standard_normal((6, 5)).astype(np.float32)
    # Exact: the duplicates are added in XLA:CPU's order.
    check_jax(lambda x, i, u: x.at[i].add(u, mode="drop"), X, idx, upd * 1e3,
              tmp_path=tmp_path)


def test_scatter_set_mul_max_min(tmp_path):
    idx = np.array([2, 0, 2, 5], np.int32)
    upd = RNG.standard_normal((4, 5)).astype(np.float32)
    check_jax(lambda x, i, u: (x.at[i].set(u), x.at[i].multiply(u),
                               x.at[i].max(u), x.at[i].min(u)),
              X, idx, upd, tmp_path=tmp_path)


def test_scatter_elements_and_oob_windows(tmp_path):
    xi = np.zeros((4, 6), np.int32)
    pts = np.array([[0, 0], [3, 5], [3, 5], [4, 0], [-1, 2], [1, 1]], np.int32)
    vals = np.arange(1, 7, dtype=np.int32)
    check_jax(lambda x, p, v: x.at[p[:, 0], p[:, 1]].add(v, mode="drop"),
              xi, pts, vals, tmp_path=tmp_path)
    # Whole windows that do not fit are skipped (XLA), not clipped.
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,),
                                     inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0, 1))
    starts = np.array([[0, 0], [1, 4], [2, 2], [3, -1]], np.int32)
    upd = np.arange(12, dtype=np.int32).reshape(4, 3) + 1
    check_jax(lambda x, s, u: lax.scatter_add(x, s, u, dn,
                                              mode=lax.GatherScatterMode.FILL_OR_DROP),
              xi, starts, upd, tmp_path=tmp_path, name="raw")


def test_scatter_window_not_trailing(tmp_path):
    # update_window_dims before the scatter dims: XLA's order is kept.
    x = np.zeros((3, 4), np.float32)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(0,),
                                     inserted_window_dims=(1,),
                                     scatter_dims_to_operand_dims=(1,))
    idx = np.array([[2], [0], [2]], np.int32)
    upd = RNG.standard_normal((3, 3)).astype(np.float32)
    check_jax(lambda x, i, u: lax.scatter(x, i, u, dn), x, idx, upd,
              tmp_path=tmp_path)


def test_donated_in_place_update(tmp_path):
    buf = np.zeros((5, 3), np.float32)
    row = np.arange(3, dtype=np.float32) + 1

    def f(b, r, i):
        return b.at[i].set(r)

    i = np.int32(3)
    path, ins, outs = hs.compile_jax(f, (buf, row, i), tmp_path, "donate",
                                     donate_argnums=0)
    assert ins[0].endswith(".must_alias_input")
    got = hs.run_neff(path, dict(zip(ins, (buf, row, i))))
    np.testing.assert_array_equal(got[outs[0]], np.asarray(jax.jit(f)(buf, row, i)))


# -- dynamic slices --------------------------------------------------------------------


def test_dynamic_slice_clamped(tmp_path):
    for i, j in ((0, 0), (2, 1), (5, 4), (-4, 100)):
        check_jax(lambda x, i, j: lax.dynamic_slice(x, (i, j), (3, 2)), X,
                  np.int32(i), np.int32(j), tmp_path=tmp_path, name=f"ds{i}_{j}")
    check_jax(lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, axis=0), T3,
              np.int32(3), tmp_path=tmp_path, name="rows")


def test_dynamic_update_slice_clamped(tmp_path):
    u = np.full((2, 3), 9.0, np.float32)
    for i, j in ((0, 0), (5, 4), (-1, 1)):
        check_jax(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)), X, u,
                  np.int32(i), np.int32(j), tmp_path=tmp_path, name=f"dus{i}_{j}")
    rows = np.ones((1, 5, 3), np.float32)
    check_jax(lambda x, u, i: lax.dynamic_update_slice_in_dim(x, u, i, axis=0), T3,
              rows, np.int32(7), tmp_path=tmp_path, name="rows")


def test_dynamic_slice_ops(tmp_path):
    # run-time starts: one dynamic_slice / dynamic_update_slice (clamping),
    # no index tensors; starts known at compile time: slice / update_slice
    ops = op_names(compiled_ops(
        lambda x, u, i, j: (lax.dynamic_slice(x, (i, j), (3, 2)),
                            lax.dynamic_update_slice(x, u, (i, j))),
        (X, np.ones((2, 3), np.float32), np.int32(1), np.int32(2)), tmp_path))
    assert "dynamic_slice" in ops and "dynamic_update_slice" in ops
    assert not {"take", "scatter", "iota"} & set(ops)
    ops = op_names(compiled_ops(
        lambda x, u: (lax.dynamic_slice(x, (1, 7), (3, 2)),
                      lax.dynamic_update_slice(x, u, (np.int32(-2), np.int32(1)))),
        (X, np.ones((2, 3), np.float32)), tmp_path, "static"))
    assert "slice" in ops and "update_slice" in ops
    assert not {"dynamic_slice", "dynamic_update_slice", "scatter"} & set(ops)


@pytest.mark.parametrize("idt", [np.int32, np.uint32, np.int16])
def test_kv_cache_loop(tmp_path, idt):
    # A decoder's KV cache: a fori_loop writing one row per step at the step
    # (and reading the rows so far through a masked sum), from a start that
    # runs past the end, where XLA clamps the row into the last one.
    cache0 = np.zeros((2, 16, 8), np.float32)
    rows = RNG.standard_normal((20, 2, 1, 8)).astype(np.float32)

    def f(cache, rows, first):
        def body(t, carry):
            cache, acc = carry
            pos = (first + t).astype(idt)
            cache = lax.dynamic_update_slice(cache, rows[t], (idt(0), pos, idt(0)))
            window = lax.dynamic_slice(cache, (idt(0), pos, idt(0)), (2, 1, 8))
            return cache, acc + window.sum()
        return lax.fori_loop(0, rows.shape[0], body, (cache, np.float32(0)))

    for first in (0, 3):
        check_jax(f, cache0, rows, idt(first), tmp_path=tmp_path,
                  name=f"kv_{first}", **TOL)
    ops = compiled_ops(f, (cache0, rows, idt(0)), tmp_path, "kv_ops")
    assert "scatter" not in op_names(ops)
    # the state is updated in place: no copy of the cache per step
    body = next(op for op in ops if op["op"] == "while")["body"]
    dus = [op for op in body if op["op"] == "dynamic_update_slice"]
    assert len(dus) == 1 and dus[0]["out"] == dus[0]["in"][0]
    # ... and the state is the output: the cache is copied in once, the
    # loop's rows are read where they are (no copy of an input the loop
    # only reads), and nothing is copied out at the end.
    copies = [op for op in ops if op["op"] == "copy"]
    assert [op["in"] for op in copies if op["out"] == dus[0]["out"]] == [["cache"]]
    assert not any(op["in"] == ["rows"] for op in copies)
    assert dus[0]["out"] == "output0"


def test_loop_state_read_after_its_update(tmp_path):
    # The old state is still read after the update (returned beside it,
    # or summed): the update must not overwrite it in place.
    cache0 = RNG.standard_normal((6, 4)).astype(np.float32)
    row = np.ones((1, 4), np.float32)

    def keeps_old(cache, row):
        def body(t, carry):
            cache, old, acc = carry
            new = lax.dynamic_update_slice(cache, row * t.astype(np.float32), (t, 0))
            return new, cache, acc + cache.sum() + new.sum()
        return lax.fori_loop(0, 5, body, (cache, cache, np.float32(0)))

    check_jax(keeps_old, cache0, row, tmp_path=tmp_path, **TOL)

    def swaps(a, b, row):
        def body(t, carry):
            a, b = carry
            return lax.dynamic_update_slice(b, row, (t, 0)), a
        return lax.fori_loop(0, 3, body, (a, b))

    check_jax(swaps, cache0, cache0 * 2, row, tmp_path=tmp_path, name="swaps")


# -- pad ------------------------------------------------------------------------------


def test_pad_edges_interior_negative(tmp_path):
    cfgs = [((1, 2, 0), (0, 3, 0)), ((-1, 2, 1), (2, -2, 2)), ((0, 0, 3), (-3, -1, 0))]
    for k, cfg in enumerate(cfgs):
        check_jax(lambda x, v: lax.pad(x, v, cfg), X, np.float32(-7.5),
                  tmp_path=tmp_path, name=f"pad{k}")
    check_jax(lambda x: jnp.pad(x, ((1, 1), (2, 0)), mode="edge"), X,
              tmp_path=tmp_path, name="edge")


# -- reduce-window ------------------------------------------------------------------------

IMG = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)


def test_max_and_avg_pool(tmp_path):
    def pools(x):
        mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 3, 2), (1, 1, 2, 2),
                               ((0, 0), (0, 0), (1, 1), (0, 1)))
        avg = lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2),
                                "VALID") / 4
        return mx, avg
    check_jax(pools, IMG, tmp_path=tmp_path, **TOL)


def test_reduce_window_dilation_min_int_cumsum(tmp_path):
    xi = RNG.integers(-9, 9, (5, 8)).astype(np.int32)
    check_jax(lambda x: (lax.reduce_window(x, np.int32(2**31 - 1), lax.min,
                                           (2, 3), (1, 2), ((1, 0), (2, 2)),
                                           base_dilation=(2, 1),
                                           window_dilation=(1, 2)),
                         jnp.cumsum(x, axis=1), jnp.cumsum(x, axis=0)),
              xi, tmp_path=tmp_path)


def test_reduce_window_large_window(tmp_path):
    x = RNG.standard_normal((3, 80)).astype(np.float32)
    check_jax(lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 70), (1, 3),
                                          "VALID"), x, tmp_path=tmp_path)


# -- convolution ----------------------------------------------------------------------------


def test_conv2d_strides_padding_dilation(tmp_path):
    w = RNG.standard_normal((4, 3, 3, 2)).astype(np.float32)
    check_jax(lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), ((1, 2), (0, 1)), lhs_dilation=(1, 2), rhs_dilation=(2, 1)),
        IMG, w, tmp_path=tmp_path, **TOL)


def test_conv_groups_and_nhwc(tmp_path):
    x = RNG.standard_normal((2, 6, 5, 4)).astype(np.float32)   # NHWC
    w = RNG.standard_normal((3, 3, 2, 6)).astype(np.float32)   # HWIO, 2 groups
    check_jax(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=2), x, w, tmp_path=tmp_path, **TOL)
    # Depthwise, 1-D.
    x1 = RNG.standard_normal((2, 4, 9)).astype(np.float32)
    w1 = RNG.standard_normal((4, 1, 3)).astype(np.float32)
    check_jax(lambda x, w: lax.conv_general_dilated(x, w, (1,), ((2, 0),),
                                                    feature_group_count=4),
              x1, w1, tmp_path=tmp_path, name="depthwise", **TOL)


def test_conv_batch_groups_and_grad(tmp_path):
    x = RNG.standard_normal((4, 2, 6)).astype(np.float32)
    w = RNG.standard_normal((6, 2, 3)).astype(np.float32)
    check_jax(lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID",
                                                    batch_group_count=2),
              x, w, tmp_path=tmp_path, **TOL)
    w2 = RNG.standard_normal((3, 2, 3)).astype(np.float32)

    def loss(w, x):
        return jnp.sum(lax.conv_general_dilated(x, w, (2,), "SAME") ** 2)
    check_jax(jax.grad(loss), w2, x, tmp_path=tmp_path, name="grad", **TOL)


def test_conv_bf16(tmp_path):
    x = RNG.standard_normal((1, 3, 6, 6)).astype(ml_dtypes.bfloat16)
    w = RNG.standard_normal((2, 3, 3, 3)).astype(ml_dtypes.bfloat16)
    check_jax(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"), x, w,
              tmp_path=tmp_path, rtol=1e-2, atol=1e-2)


def test_conv_pool_cnn(tmp_path):
    x = RNG.standard_normal((2, 8, 8, 3)).astype(np.float32)
    w = (RNG.standard_normal((3, 3, 3, 4)) * 0.3).astype(np.float32)

    def cnn(x, w):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.nn.relu(y)
        return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                 "VALID")
    check_jax(cnn, x, w, tmp_path=tmp_path, **TOL)


# -- sort, argsort, top-k ------------------------------------------------------------------------

KEYS = np.array([[3.0, np.nan, -0.0, 1.0, 0.0, -np.inf, 1.0, np.nan, 3.0],
                 [2.0, 2.0, -1.0, np.inf, -0.0, 0.0, 5.0, -2.0, 2.0]], np.float32)


def test_sort_and_argsort_ties_nan(tmp_path):
    check_jax(lambda x: (jnp.sort(x, axis=1), jnp.argsort(x, axis=1),
                         jnp.argsort(x, axis=1, descending=True),
                         jnp.argsort(x, axis=0, stable=True)),
              KEYS, tmp_path=tmp_path)


def test_argsort_is_one_argsort(tmp_path):
    # The permutation is the result: no take for the iota, none for the
    # sorted keys nobody reads.
    ops = op_names(compiled_ops(lambda x: jnp.argsort(x, axis=1), (KEYS,), tmp_path))
    assert ops.count("argsort") == 1 and "take" not in ops, ops


def test_sort_int_multi_operand_lexsort(tmp_path):
    a = np.array([3, 1, 3, 2, 1, 3], np.int32)
    b = np.array([0.5, 2.0, -1.0, 7.0, 2.0, 0.5], np.float32)
    c = np.arange(6, dtype=np.int8)[::-1].copy()
    check_jax(lambda a, b, c: lax.sort((a, b, c), num_keys=2), a, b, c,
              tmp_path=tmp_path)
    check_jax(lambda a, b: jnp.lexsort((b, a)), a, b, tmp_path=tmp_path, name="lex")


def test_top_k(tmp_path):
    x = np.array([[1.0, 5.0, 5.0, -2.0, np.nan, 0.0],
                  [4.0, 3.0, 2.0, 1.0, 0.0, 4.0]], np.float32)
    check_jax(lambda x: lax.top_k(x, 3), x, tmp_path=tmp_path)
    check_jax(lambda x: lax.top_k(x, 5), x[:, :5].copy(), tmp_path=tmp_path, name="all")
    check_jax(lambda x: lax.top_k(x, 1), x.T.copy(), tmp_path=tmp_path, name="one")


def test_top_k_small_k(tmp_path):
    # Small k of long rows: rounds of argmax, in XLA's total order.
    x = np.array([[1.0, 5.0, 5.0, -2.0, np.nan, 0.0, -0.0, 0.0, -np.nan, np.inf,
                   -np.inf, 5.0, 0.0, -0.0, 3.0, 3.0, 1, 1, 1, 1]], np.float32)
    check_jax(lambda x: (lax.top_k(x, 4), lax.top_k(-x, 4)), x, tmp_path=tmp_path)
    xi = RNG.integers(-3, 3, (2, 3, 30)).astype(np.int32)
    check_jax(lambda x: lax.top_k(x, 3), xi, tmp_path=tmp_path, name="int")
    xb = RNG.standard_normal((5, 30)).astype(ml_dtypes.bfloat16)
    check_jax(lambda x: lax.top_k(x, 5), xb, tmp_path=tmp_path, name="bf16")


# -- custom calls: hand-built modules ------------------------------------------------------------


def _custom_call_module(target: str, backend: str) -> bytes:
    F32 = hs.F32
    x_shape = hs.shape(F32, (2, 5))
    out = hs.shape(hs.TUPLE, tuple_shapes=[hs.shape(F32, (2, 2)), hs.shape(hs.S32, (2, 2))])
    p = hs.instr("x.1", "parameter", x_shape, 1)
    cc = hs.instr("topk.2", "custom-call", out, 2, operands=[1],
                  target=hs.f_bytes(28, target), cfg=hs.f_bytes(43, backend))
    comp = hs.computation("main", 1, [p, cc], 2)
    return hs.module("m", [comp], 1)


def test_aws_neuron_topk(tmp_path):
    mod = _custom_call_module("AwsNeuronTopK", "2")
    path = nrtpy.neff.compile_hlo(mod, tmp_path / "topk.neff")
    x = np.array([[1, 9, 3, 9, 0], [-1, -5, 2, 2, 7]], np.float32)
    got = hs.run_neff(path, {"x": x})
    np.testing.assert_array_equal(got["output0"], [[9, 9], [7, 2]])
    np.testing.assert_array_equal(got["output1"], [[1, 3], [4, 2]])


def test_native_kernel_refused(tmp_path):
    mod = _custom_call_module("AwsNeuronCustomNativeKernel", "{}")
    with pytest.raises(NotImplementedError, match="NKI kernel.*topk.2"):
        nrtpy.neff.compile_hlo(mod, tmp_path / "k.neff")
    assert not (tmp_path / "k.neff").exists()
    with pytest.raises(NotImplementedError, match="'Foo'"):
        nrtpy.neff.compile_hlo(_custom_call_module("Foo", ""), tmp_path / "f.neff")


def test_large_index_patterns(tmp_path):
    # Index patterns too large for constants are computed with iota ops.
    big = RNG.standard_normal((300, 260)).astype(np.float32)
    check_jax(lambda x, i, j: (lax.dynamic_slice(x, (i, j), (280, 250)),
                               lax.pad(x, np.float32(1), ((-3, 2, 0), (1, -4, 1)))),
              big, np.uint16(50), np.uint16(3), tmp_path=tmp_path)
    check_jax(lambda x, i: lax.dynamic_slice(x, (i, i), (2, 3)), X, np.int8(-100),
              tmp_path=tmp_path, name="s8")


def test_reduce_window_init_value(tmp_path):
    z = np.array([[-0.0, -0.0, 1.0], [-0.0, -0.0, 2.0]], np.float32)
    check_jax(lambda x: (lax.reduce_window(x, 0.0, lax.add, (1, 2), (1, 1), "VALID"),
                         lax.reduce_window(x, -0.0, lax.add, (1, 2), (1, 1), "VALID"),
                         lax.reduce_window(x, 1.5, lax.add, (2, 2), (1, 1), "SAME"),
                         lax.reduce_window(x, 0.5, lax.max, (2, 2), (1, 1), "SAME")),
              z, tmp_path=tmp_path)


# -- errors: hand-built modules ----------------------------------------------------------------


def _gather_module(slice_size: int) -> bytes:
    """x f32[4], i s32[2,1] -> gather of slices of ``slice_size``."""
    p = hs.instr("x.1", "parameter", hs.shape(hs.F32, (4,)), 1)
    i = hs.instr("i.1", "parameter", hs.shape(hs.S32, (2, 1)), 2, pn=hs.f_int(9, 1))
    dn = hs.f_bytes(33, hs.f_packed(1, [1]) + hs.f_packed(3, [0]) + hs.f_int(4, 1))
    g = hs.instr("g", "gather", hs.shape(hs.F32, (2, slice_size)), 3, operands=[1, 2],
                 dn=dn, sizes=hs.f_packed(34, [slice_size]))
    return hs.module("m", [hs.computation("main", 1, [p, i, g], 3)], 1)


def test_gather_hand_built_and_malformed(tmp_path):
    path = nrtpy.neff.compile_hlo(_gather_module(3), tmp_path / "g.neff")
    x = np.arange(4, dtype=np.float32)
    got = hs.run_neff(path, {"x": x, "i": np.array([[-5], [3]], np.int32)})
    np.testing.assert_array_equal(got["output0"], [[0, 1, 2], [1, 2, 3]])
    with pytest.raises(ValueError, match="'g' \\(gather\\).*gather dimension numbers"):
        nrtpy.neff.compile_hlo(_gather_module(5), tmp_path / "bad.neff")
    assert not (tmp_path / "bad.neff").exists()


def _sort_module(root_opcode: str, operands: tuple[int, int]) -> bytes:
    """A sort of x f32[5] whose comparator is ``root_opcode`` of its
    parameters ``operands``."""
    s = hs.shape(hs.F32)
    pred = hs.shape(hs.PRED)
    cmp_ = hs.computation("cmp", 1, [
        hs.instr("a", "parameter", s, 1),
        hs.instr("b", "parameter", s, 2, pn=hs.f_int(9, 1)),
        hs.instr("r", root_opcode, pred, 3, operands=list(operands),
                 d=hs.f_bytes(63, "LT"))], 3)
    x = hs.shape(hs.F32, (5,))
    main = hs.computation("main", 2, [
        hs.instr("x.1", "parameter", x, 10),
        hs.instr("s", "sort", x, 11, operands=[10], dims=hs.f_packed(14, [0]),
                 to_apply=hs.f_packed(38, [1]))], 11)
    return hs.module("m", [cmp_, main], 2)


def test_sort_comparators(tmp_path):
    path = nrtpy.neff.compile_hlo(_sort_module("compare", (2, 1)), tmp_path / "d.neff")
    got = hs.run_neff(path, {"x": np.array([1, 4, -2, 4, 0], np.float32)})
    np.testing.assert_array_equal(got["output0"], [4, 4, 1, 0, -2])  # b < a: descending
    with pytest.raises(NotImplementedError, match="comparator.*'s'"):
        nrtpy.neff.compile_hlo(_sort_module("compare", (1, 1)), tmp_path / "bad.neff")


def test_scatter_unsupported_combiner(tmp_path):
    # A to_apply of subtract: not a combiner the emulator has.
    bad = _scatter_module([hs.instr("r", "subtract", hs.shape(hs.F32), 3,
                                    operands=[1, 2])], 3)
    with pytest.raises(NotImplementedError, match="scatter.*'sc'"):
        nrtpy.neff.compile_hlo(bad, tmp_path / "s.neff")


def _scatter_module(combiner: list[bytes], root: int) -> bytes:
    """x f32[4], i s32[2,1], u f32[2] -> scatter(x, i, u) whose to_apply is
    the parameters a (id 1), b (id 2) and then ``combiner``, rooted at
    ``root``."""
    s = hs.shape(hs.F32)
    comb = hs.computation("comb", 1, [
        hs.instr("a", "parameter", s, 1),
        hs.instr("b", "parameter", s, 2, pn=hs.f_int(9, 1)), *combiner], root)
    x = hs.shape(hs.F32, (4,))
    dn = hs.f_bytes(48, hs.f_packed(2, [0]) + hs.f_packed(3, [0]) + hs.f_int(4, 1))
    main = hs.computation("main", 2, [
        hs.instr("x.1", "parameter", x, 10),
        hs.instr("i.1", "parameter", hs.shape(hs.S32, (2, 1)), 11, pn=hs.f_int(9, 1)),
        hs.instr("u.1", "parameter", hs.shape(hs.F32, (2,)), 12, pn=hs.f_int(9, 2)),
        hs.instr("sc", "scatter", x, 13, operands=[10, 11, 12], dn=dn,
                 to_apply=hs.f_packed(38, [1]))], 13)
    return hs.module("m", [comb, main], 2)


@pytest.mark.parametrize("combiner, root, want", [
    # neuronx-cc's assignment: copy(b) (nkipy's put_along_axis, slice
    # assignment, rotary embeddings)
    ([hs.instr("c", "copy", hs.shape(hs.F32), 3, operands=[2])], 3, [0, 5, 0, 7]),
    # a chain of no-op wrappers around b
    ([hs.instr("c", "copy", hs.shape(hs.F32), 3, operands=[2]),
      hs.instr("d", "convert", hs.shape(hs.F32), 4, operands=[3])], 4, [0, 5, 0, 7]),
    # add with its operands and result wrapped, as XLA upcasts bfloat16
    ([hs.instr("ca", "convert", hs.shape(hs.F32), 3, operands=[1]),
      hs.instr("cb", "copy", hs.shape(hs.F32), 4, operands=[2]),
      hs.instr("s", "add", hs.shape(hs.F32), 5, operands=[3, 4]),
      hs.instr("r", "copy", hs.shape(hs.F32), 6, operands=[5])], 6, [1, 6, 1, 8]),
])
def test_scatter_wrapped_combiners(tmp_path, combiner, root, want):
    path = nrtpy.neff.compile_hlo(_scatter_module(combiner, root), tmp_path / "s.neff")
    got = hs.run_neff(path, {"x": np.ones(4, np.float32) * (root == 6),
                             "i": np.array([[1], [3]], np.int32),
                             "u": np.array([5, 7], np.float32)})
    np.testing.assert_array_equal(got["output0"], np.array(want, np.float32))


def test_scatter_copy_of_the_first_parameter_is_not_assignment(tmp_path):
    # copy(a) keeps the operand: not a combiner the emulator has.
    bad = _scatter_module([hs.instr("c", "copy", hs.shape(hs.F32), 3, operands=[1])], 3)
    with pytest.raises(NotImplementedError, match="scatter.*'sc'"):
        nrtpy.neff.compile_hlo(bad, tmp_path / "s.neff")


def test_common_subexpressions_are_computed_once(tmp_path):
    # x - m written twice (a layer norm as users write it): one subtract,
    # as XLA's CSE makes it; an rng or a collective is never merged.
    def layernorm(x):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * lax.rsqrt(v + 1e-5)

    x = X + 1
    ops = compiled_ops(layernorm, (x,), tmp_path)
    assert [o["op"] for o in ops].count("sub") == 1
    check_jax(layernorm, x, tmp_path=tmp_path, **TOL)


def test_a_cast_read_by_two_chains_is_cast_again_for_each(tmp_path):
    # A bfloat16 RMS norm reads x.astype(float32) for its mean square and
    # again to scale it: each reader gets a cast of its own, so fusion
    # never writes the float32 copy to memory.
    def rms(x, g):
        xf = x.astype(jnp.float32)
        r = xf * lax.rsqrt((xf * xf).mean(-1, keepdims=True) + 1e-6) * g
        return r.astype(jnp.bfloat16)

    x = X.astype(ml_dtypes.bfloat16)
    g = np.linspace(0.5, 1.5, 5).astype(np.float32)
    ops = compiled_ops(rms, (x, g), tmp_path)
    casts = [o for o in ops if o["op"] == "cast" and o["in"] == ["x"]]
    assert len(casts) == 2 and len({c["out"] for c in casts}) == 2
    readers = [o for o in ops if o["op"] != "cast"
               and {c["out"] for c in casts} & set(o["in"])]
    assert len(readers) == 2
    check_jax(rms, x, g, tmp_path=tmp_path, rtol=1e-2, atol=1e-2)
