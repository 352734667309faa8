"""HLO compiler, whole models: each is compiled from ``jax.jit(f).lower``
with ``compile_hlo``, run through ``NrtpyModel`` on the emulator and
compared with JAX's own CPU result.  Shapes are small (JAX's compile time
dominates); tolerances are those of float32 (or bfloat16) accumulation in
another order than XLA's (docs/hlo.md)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlo_support import check_jax, jax, jnp

RNG = np.random.default_rng(7)
F32_TOL = dict(rtol=2e-5, atol=2e-5)
BF16_TOL = dict(rtol=3e-2, atol=3e-2)


def randn(*shape, dtype=np.float32, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def mlp(x, w1, b1, w2, b2):
    return jax.nn.gelu(x @ w1 + b1) @ w2 + b2


def layernorm(x, g, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * g + b


def rmsnorm(x, g, eps=1e-6):
    return x * jax.lax.rsqrt((x * x).mean(axis=-1, keepdims=True) + eps) * g


def rope(x, base=10000.0):
    # x: [tokens, heads, dim]
    t, _, d = x.shape
    inv = 1.0 / base ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d)
    ang = jnp.arange(t, dtype=jnp.float32)[:, None] * inv[None, :]
    cos, sin = jnp.cos(ang)[:, None, :], jnp.sin(ang)[:, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def attention(x, wq, wk, wv, wo, heads):
    t, dm = x.shape
    hd = dm // heads
    q = (x @ wq).reshape(t, heads, hd)
    k = (x @ wk).reshape(t, heads, hd)
    v = (x @ wv).reshape(t, heads, hd)
    q, k = rope(q), rope(k)
    s = jnp.einsum("qhd,khd->hqk", q, k) / jnp.sqrt(jnp.float32(hd)).astype(x.dtype)
    mask = jnp.tril(jnp.ones((t, t), bool))
    s = jnp.where(mask[None], s, jnp.finfo(s.dtype).min)
    p = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("hqk,khd->qhd", p, v).reshape(t, dm)
    return o @ wo


def test_mlp(tmp_path):
    args = (randn(8, 16), randn(16, 32, scale=0.3), randn(32), randn(32, 8, scale=0.3),
            randn(8))
    check_jax(mlp, *args, tmp_path=tmp_path, **F32_TOL)


def test_mlp_bf16(tmp_path):
    args = (randn(8, 16), randn(16, 32, scale=0.3), randn(32), randn(32, 8, scale=0.3),
            randn(8))
    args = tuple(a.astype(ml_dtypes.bfloat16) for a in args)
    check_jax(mlp, *args, tmp_path=tmp_path, **BF16_TOL)


def test_layernorm_rmsnorm(tmp_path):
    x = randn(6, 32, scale=3.0) + 1.0
    check_jax(lambda x, g, b: (layernorm(x, g, b), rmsnorm(x, g)), x, randn(32), randn(32),
              tmp_path=tmp_path, **F32_TOL)


def test_softmax(tmp_path):
    x = randn(4, 5, 7, scale=4.0)
    check_jax(lambda x: (jax.nn.softmax(x, axis=-1), jax.nn.softmax(x, axis=0),
                         jax.nn.log_softmax(x, axis=1)),
              x, tmp_path=tmp_path, **F32_TOL)


def test_attention_causal_rope(tmp_path):
    dm, heads, t = 32, 4, 8
    args = (randn(t, dm), *(randn(dm, dm, scale=dm ** -0.5) for _ in range(4)))
    check_jax(lambda *a: attention(*a, heads=heads), *args, tmp_path=tmp_path, **F32_TOL)


def test_attention_bf16(tmp_path):
    dm, heads, t = 16, 2, 8
    args = (randn(t, dm), *(randn(dm, dm, scale=dm ** -0.5) for _ in range(4)))
    args = tuple(a.astype(ml_dtypes.bfloat16) for a in args)
    check_jax(lambda *a: attention(*a, heads=heads), *args, tmp_path=tmp_path,
              rtol=5e-2, atol=5e-2)


def test_decoder_block_two_layers(tmp_path):
    dm, heads, t, ff = 16, 2, 8, 32

    def layer(x, p):
        h = x + attention(rmsnorm(x, p["g1"]), p["wq"], p["wk"], p["wv"], p["wo"], heads)
        f = rmsnorm(h, p["g2"])
        return h + jax.nn.silu(f @ p["w1"]) @ p["w2"]

    def decoder(x, layers):
        for p in layers:
            x = layer(x, p)
        return x

    def params():
        return {"g1": 1 + randn(dm, scale=0.1), "g2": 1 + randn(dm, scale=0.1),
                "wq": randn(dm, dm, scale=dm ** -0.5), "wk": randn(dm, dm, scale=dm ** -0.5),
                "wv": randn(dm, dm, scale=dm ** -0.5), "wo": randn(dm, dm, scale=dm ** -0.5),
                "w1": randn(dm, ff, scale=dm ** -0.5), "w2": randn(ff, dm, scale=ff ** -0.5)}

    layers = [params(), params()]
    x = randn(t, dm)
    # check_jax passes positional leaves: flatten the pytree for it
    leaves, tree = jax.tree_util.tree_flatten(layers)

    def flat(x, *leaves):
        return decoder(x, jax.tree_util.tree_unflatten(tree, leaves))

    check_jax(flat, x, *leaves, tmp_path=tmp_path, rtol=1e-4, atol=1e-4)


def test_mlp_fp8_weights(tmp_path):
    # fp8 weights (e4m3fn and e5m2) dequantized in the graph, as inference
    # kernels store them; the values are exact in fp8, so only the
    # accumulation order differs from XLA.
    w1 = randn(16, 32, scale=0.3).astype(ml_dtypes.float8_e4m3fn)
    w2 = randn(32, 8, scale=0.3).astype(ml_dtypes.float8_e5m2)

    def f(x, w1, w2, s):
        h = jax.nn.relu(x @ (w1.astype(jnp.float32) * s))
        y = h @ w2.astype(jnp.float32)
        return y, y.astype(ml_dtypes.float8_e4m3fn)

    got = check_jax(f, randn(8, 16), w1, w2, np.float32(0.5), tmp_path=tmp_path,
                    **F32_TOL)
    assert got["output1"].dtype == ml_dtypes.float8_e4m3fn
