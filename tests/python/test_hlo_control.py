"""HLO compiler, control flow and collectives: while, conditional (pred and
index), and all-reduce / all-gather / reduce-scatter / all-to-all /
collective-permute.  JAX functions are compiled with
``nrtpy.neff.compile_hlo``, run on the emulator and compared with XLA:CPU;
the collectives are checked in the emitted program, executed in a world
of one (JAX's pmap over one device), and across four ranks for a
hand-built module."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from jax import lax

import hlo_support as hs
from hlo_support import check_jax, jax, jnp
import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor

RNG = np.random.default_rng(5)
V = RNG.standard_normal((5,)).astype(np.float32)
M = RNG.standard_normal((3, 4)).astype(np.float32)


def compiled_program(fn, args, tmp_path, name="p", lower=None):
    """(NEFF path, the program's ops) for ``fn`` lowered with ``args``."""
    seen = []
    orig = nrtpy.neff._write_neff

    def capture(path, program, *a, **k):
        seen.append(program.ops)
        return orig(path, program, *a, **k)

    nrtpy.neff._write_neff = capture
    try:
        lowered = (lower or jax.jit)(fn).lower(*args)
        path = nrtpy.neff.compile_hlo(lowered, tmp_path / f"{name}.neff")
    finally:
        nrtpy.neff._write_neff = orig
    return path, seen[0]


def walk(ops):
    for op in ops:
        yield op
        for key in ("cond", "body"):
            yield from walk(op.get(key, []))
        for br in op.get("branches", []):
            yield from walk(br)


# -- while ---------------------------------------------------------------------------


def test_fori_loop(tmp_path):
    def f(x, w):
        return lax.fori_loop(0, 4, lambda i, c: jnp.tanh(c @ w) + i, x)
    w = (RNG.standard_normal((4, 4)) * 0.5).astype(np.float32)
    check_jax(f, M, w, tmp_path=tmp_path, rtol=1e-5, atol=1e-5)
    _, ops = compiled_program(f, (M, w), tmp_path)
    assert [op["op"] for op in ops].count("while") == 1


def test_while_data_dependent_trip_count(tmp_path):
    def collatz_steps(n):
        def body(s):
            n, k = s
            return jnp.where(n % 2 == 0, n // 2, 3 * n + 1), k + 1
        return lax.while_loop(lambda s: s[0] != 1, body, (n, jnp.int32(0)))
    for n in (1, 6, 27):
        check_jax(collatz_steps, np.int32(n), tmp_path=tmp_path, name=f"c{n}")


def test_while_swapping_state(tmp_path):
    # The body passes state elements to each other: the copies back into
    # the state must not read an element already overwritten.
    def f(a, b):
        def body(s):
            i, a, b = s
            return i + 1, b, a + b
        return lax.while_loop(lambda s: s[0] < 5, body, (0, a, b))[1:]
    check_jax(f, V, V[::-1].copy(), tmp_path=tmp_path)


def test_nested_loops_and_scan(tmp_path):
    def f(x):
        def outer(i, c):
            return lax.fori_loop(0, i, lambda j, d: d * 1.5 - j, c)
        return lax.fori_loop(0, 3, outer, x)
    check_jax(f, V, tmp_path=tmp_path, rtol=1e-6)

    def cumsum_scan(xs):
        return lax.scan(lambda c, x: (c + x, c * x), jnp.float32(0), xs)
    check_jax(cumsum_scan, V, tmp_path=tmp_path, name="scan", rtol=1e-6)


# -- conditional ---------------------------------------------------------------------------


def test_cond_pred(tmp_path):
    def f(p, x):
        return lax.cond(p > 0, lambda v: (v + 1, v.sum()), lambda v: (v * 2, v.max()), x)
    for p in (3, -3):
        check_jax(f, np.int32(p), V, tmp_path=tmp_path, name=f"c{p}", rtol=1e-6)


def test_switch_index_clamped(tmp_path):
    def f(i, x):
        return lax.switch(i, [lambda v: v + 1, lambda v: v - 1, lambda v: -v], x)
    for i in (0, 1, 2, 7, -5):
        check_jax(f, np.int32(i), M, tmp_path=tmp_path, name=f"s{i}")
    _, ops = compiled_program(f, (np.int32(0), M), tmp_path)
    cond = [op for op in ops if op["op"] == "conditional"]
    assert len(cond) == 1 and len(cond[0]["branches"]) == 3


def test_cond_inside_loop(tmp_path):
    def f(x):
        def body(i, c):
            return lax.cond(i % 2 == 0, lambda v: v + i, lambda v: v * 0.5, c)
        return lax.fori_loop(0, 5, body, x)
    check_jax(f, V, tmp_path=tmp_path, rtol=1e-6)


# -- collectives ------------------------------------------------------------------------------


def _collectives(x):
    return (lax.psum(x, "i"), lax.all_gather(x, "i", axis=0, tiled=True),
            lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
            lax.all_to_all(x, "i", 0, 0, tiled=True),
            lax.ppermute(x, "i", [(0, 0)]), lax.pmax(x, "i"))


def test_collectives_world_of_one(tmp_path):
    x = RNG.standard_normal((1, 4, 6)).astype(np.float32)
    path, ops = compiled_program(_collectives, (x,), tmp_path,
                                 lower=lambda f: jax.pmap(f, axis_name="i"))
    coll = {op["op"]: op for op in walk(ops) if op["op"] in (
        "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
        "collective_permute")}
    assert coll["all_gather"]["axis"] == 0
    assert coll["all_gather"]["replica_groups"] == [[0]]
    assert coll["reduce_scatter"]["axis"] == 1
    assert coll["reduce_scatter"]["reduce"] == "sum"
    assert coll["collective_permute"]["pairs"] == [[0, 0]]
    reduces = sorted(op["reduce"] for op in walk(ops) if op["op"] == "all_reduce")
    assert reduces == ["max", "sum"]
    got = hs.run_neff(path, {"flat_args_0_": x})
    want = jax.pmap(_collectives, axis_name="i")(x)
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[f"output{k}"], np.asarray(w))


def _hand_module(groups: list[list[int]], reducer: str = "add") -> bytes:
    """x: f32[2,3] -> (all-reduce(x) with ``reducer``, all-gather(x) along 0,
    collective-permute(x) 0->1->2->3->0, all-to-all(x) along 0) over
    ``groups``."""
    F32 = hs.F32
    scalar = hs.shape(F32)
    add = hs.computation("add", 1, [
        hs.instr("a", "parameter", scalar, 1),
        hs.instr("b", "parameter", scalar, 2, pn=hs.f_int(9, 1)),
        hs.instr("s", reducer, scalar, 3, operands=[1, 2])], 3)
    rg = b"".join(hs.f_bytes(49, hs.f_packed(1, g)) for g in groups)
    n = len(groups[0])
    pairs = b"".join(hs.f_bytes(52, hs.f_int(1, s) + hs.f_int(2, (s + 1) % 4))
                     for s in range(4))
    x = hs.shape(F32, (2, 3))
    out = hs.shape(hs.TUPLE, tuple_shapes=[x, hs.shape(F32, (2 * n, 3)), x, x])
    main = hs.computation("main", 2, [
        hs.instr("x.1", "parameter", x, 10),
        hs.instr("ar", "all-reduce", x, 11, operands=[10], rg=rg,
                 to_apply=hs.f_packed(38, [1])),
        hs.instr("ag", "all-gather", hs.shape(F32, (2 * n, 3)), 12, operands=[10],
                 rg=rg, dims=hs.f_packed(14, [0])),
        hs.instr("cp", "collective-permute", x, 13, operands=[10], pairs=pairs),
        hs.instr("aa", "all-to-all", x, 15, operands=[10], rg=rg,
                 dims=hs.f_packed(14, [0])),
        hs.instr("t", "tuple", out, 14, operands=[11, 12, 13, 15])], 14)
    return hs.module("coll", [add, main], 2)


def test_collectives_four_ranks(fresh_runtime, tmp_path):
    fresh_runtime.setenv("NRTPY_EMU_INSTANCE", "trn1.32xlarge")
    path = nrtpy.neff.compile_hlo(_hand_module([[0, 1], [2, 3]]), tmp_path / "c.neff")
    world = 4
    xs = [np.full((2, 3), r + 1, np.float32) * np.arange(1, 4, dtype=np.float32)
          for r in range(world)]
    models = [NrtpyModel.load_from_neff(path, core_id=r, cc_enabled=True,
                                        rank_id=r, world_size=world)
              for r in range(world)]
    results: dict[int, object] = {}

    def work(r):
        try:
            t = NrtpyTensor.from_numpy(xs[r], name="x", core_id=r)
            out = models[r](inputs={"x": t})
            results[r] = {n: v.numpy() for n, v in out.items()}
        except Exception as e:  # reported below
            results[r] = e

    threads = [threading.Thread(target=work, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for r in range(world):
        got = results[r]
        assert isinstance(got, dict), got
        g = [0, 1] if r < 2 else [2, 3]
        np.testing.assert_array_equal(got["output0"], xs[g[0]] + xs[g[1]])
        np.testing.assert_array_equal(got["output1"], np.concatenate([xs[g[0]], xs[g[1]]]))
        np.testing.assert_array_equal(got["output2"], xs[(r - 1) % 4])
        p = g.index(r)
        np.testing.assert_array_equal(got["output3"], np.concatenate(
            [xs[g[0]][p:p + 1], xs[g[1]][p:p + 1]]))
    del models


def test_collective_to_apply_refused(tmp_path):
    bad = _hand_module([[0]], reducer="subtract")
    with pytest.raises(NotImplementedError, match="all-reduce.*'ar'"):
        nrtpy.neff.compile_hlo(bad, tmp_path / "bad.neff")


def test_collective_multiply_refused_as_neuronx_cc_does(tmp_path):
    # Neuron's collectives reduce with add, maximum or minimum; a module
    # that neuronx-cc refuses must not pass here and fail on hardware.
    bad = _hand_module([[0]], reducer="multiply")
    with pytest.raises(NotImplementedError, match=r"all-reduce.*multipl.*'ar'"):
        nrtpy.neff.compile_hlo(bad, tmp_path / "bad.neff")
    assert not (tmp_path / "bad.neff").exists()


def test_branch_operands_lazy_broadcasts(tmp_path):
    # A broadcast passed to both branches and used after the conditional:
    # it is written out before the branches, not inside the first one.
    def f(p, x):
        b = jnp.broadcast_to(x, (3, 5))
        y = lax.cond(p > 0, lambda b: b.T @ b, lambda b: b.T @ (b * 2), b)
        return y, b.T
    for p in (1, 0):
        check_jax(f, np.int32(p), V, tmp_path=tmp_path, name=f"b{p}", rtol=1e-6)

    def g(x):
        return lax.fori_loop(0, 3, lambda i, c: c + jnp.broadcast_to(x, (2, 5)).sum(0),
                             jnp.broadcast_to(x, (2, 5)))
    check_jax(g, V, tmp_path=tmp_path, name="loop", rtol=1e-6)
