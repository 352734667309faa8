"""HLO modules from JAX on the emulator against XLA:CPU (issue 8).

Each model is lowered with ``jax.jit(f).lower``, compiled with
``nrtpy.neff.compile_hlo``, checked once against ``jax.jit(f)`` and then
timed, in alternating phases, against ``jax.jit(f)`` on the same inputs
(``block_until_ready``).  Reported: the median time per execution of
each, and XLA's time / ours (1.0 = as fast as XLA:CPU; issue 8's goal
was >= 0.5, issue 28's is >= 1.0).  Also the compile time of a 5,000-instruction module.

Needs JAX (a test dependency: ``make test`` installs it in .venv).

Usage: python bench/bench_hlo.py [--quick | --full] [--only NAME,...] [--phases N]
  --quick  small shapes (seconds)
  (none)   mid-size shapes
  --full   the issue's sizes: MLP 64x4096->11008->4096, attention 8 heads
           x 1024 tokens x 128, decoder block 512 tokens x 1024 hidden
  --only   the models whose row names start with one of these (rmsnorm,
           decoder, kv-cache, ...), and no compile-time row
  --phases alternating phases per model (default 5, 3 with --full): more
           steady figures on a busy machine
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

import nrtpy
import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import per_call  # noqa: E402

jax.config.update("jax_platforms", "cpu")


def mlp(x, w1, w2):
    return jax.nn.gelu(x @ w1) @ w2


def attention(q, k, v):
    # [heads, tokens, dim], causal
    t = q.shape[1]
    s = jnp.einsum("hqd,hkd->hqk", q, k) / np.sqrt(q.shape[-1]).astype(q.dtype)
    mask = jnp.tril(jnp.ones((t, t), bool))
    s = jnp.where(mask[None], s, jnp.finfo(s.dtype).min)
    return jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(s, axis=-1), v)


def decoder(x, wqkv, wo, w1, w2, g, heads):
    t, d = x.shape

    def rms(x):
        return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g

    qkv = rms(x) @ wqkv
    q, k, v = (qkv[:, i * d:(i + 1) * d].reshape(t, heads, d // heads).transpose(1, 0, 2)
               for i in range(3))
    h = x + attention(q, k, v).transpose(1, 0, 2).reshape(t, d) @ wo
    return h + jax.nn.silu(rms(h) @ w1) @ w2


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def layernorm(x):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5)


def rmsnorm(x, g):
    xf = x.astype(jnp.float32)
    return (xf * jax.lax.rsqrt((xf * xf).mean(-1, keepdims=True) + 1e-6)
            * g).astype(x.dtype)


def kv_cache(cache, rows, first):
    # A decoder's KV cache [heads, tokens, dim]: a loop writing one token's
    # row per step at a run-time position (dynamic_update_slice), each row
    # the step's input plus the row before it, read back (dynamic_slice).
    h, _, d = cache.shape

    def body(t, cache):
        pos = first + t
        prev = jax.lax.dynamic_slice(cache, (0, pos - 1, 0), (h, 1, d))
        return jax.lax.dynamic_update_slice(cache, rows[t][:, None] + 0.5 * prev,
                                            (0, pos, 0))
    return jax.lax.fori_loop(0, rows.shape[0], body, cache)


def cases(size: str):
    rng = np.random.default_rng(0)

    def r(*s, scale=1.0, dt=np.float32):
        return (rng.standard_normal(s, dtype=np.float32) * scale).astype(dt)

    b, d, f = {"quick": (8, 256, 512), "mid": (32, 1024, 2816),
               "full": (64, 4096, 11008)}[size]
    h, t, hd = {"quick": (2, 64, 32), "mid": (8, 256, 64), "full": (8, 1024, 128)}[size]
    tt, dd = {"quick": (64, 128), "mid": (256, 512), "full": (512, 1024)}[size]
    for dt, tag in ((np.float32, "f32"), (ml_dtypes.bfloat16, "bf16")):
        yield (f"mlp {b}x{d}->{f}->{d} {tag}", mlp,
               (r(b, d, dt=dt), r(d, f, scale=d ** -0.5, dt=dt), r(f, d, scale=f ** -0.5, dt=dt)))
    yield (f"attention {h}x{t}x{hd} f32", attention,
           (r(h, t, hd), r(h, t, hd), r(h, t, hd)))
    rows, cols = {"quick": (256, 256), "mid": (1024, 1024), "full": (4096, 1024)}[size]
    yield (f"softmax {rows}x{cols} f32", softmax, (r(rows, cols),))
    yield (f"layernorm {rows}x{cols} f32", layernorm, (r(rows, cols),))
    yield (f"rmsnorm {rows}x{cols} bf16", rmsnorm,
           (r(rows, cols, dt=ml_dtypes.bfloat16), 1 + r(cols, scale=0.1)))
    kh, kt, kd, steps = {"quick": (4, 256, 64, 64), "mid": (8, 1024, 64, 256),
                         "full": (8, 4096, 128, 1024)}[size]
    yield (f"kv-cache {kh}x{kt}x{kd} {steps} steps f32", kv_cache,
           (np.zeros((kh, kt, kd), np.float32), r(steps, kh, kd), np.int32(3)))
    heads = max(1, dd // 64)
    yield (f"decoder {tt}x{dd} f32", lambda *a: decoder(*a, heads=heads),
           (r(tt, dd), r(dd, 3 * dd, scale=dd ** -0.5), r(dd, dd, scale=dd ** -0.5),
            r(dd, 4 * dd, scale=dd ** -0.5), r(4 * dd, dd, scale=(4 * dd) ** -0.5),
            1 + r(dd, scale=0.1)))


def bench_model(work: Path, name: str, fn, args, phases: int):
    jitted = jax.jit(fn)
    t0 = time.perf_counter()
    path = nrtpy.neff.compile_hlo(jitted.lower(*args), work / "m.neff")
    compile_s = time.perf_counter() - t0
    model = NrtpyModel.load_from_neff(path)
    inputs = {k: NrtpyTensor.from_numpy(a, name=k)
              for k, a in zip(model.input_tensors_info, args)}
    outputs = {t.name: t for t in model.allocate_output_tensors()}
    rt = nrtpy.get_nrtpy_singleton()
    ins = {k: v.tensor_ref for k, v in inputs.items()}
    outs = {k: v.tensor_ref for k, v in outputs.items()}
    dev_args = [jax.device_put(a) for a in args]

    def ours():
        rt.execute(model.model_ref, ins, outs)

    def xla():
        jitted(*dev_args).block_until_ready()

    ours()
    want = np.asarray(jitted(*dev_args)).astype(np.float32)
    got = next(iter(outputs.values())).numpy().astype(np.float32)
    err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) or 1.0))
    for _ in range(2):
        ours()
        xla()
    t_ours, t_xla = [], []
    number = 1
    for _ in range(phases):
        t_xla.append(per_call(xla, number))
        t_ours.append(per_call(ours, number))
    o, x = statistics.median(t_ours), statistics.median(t_xla)
    print(f"{name:<34} {compile_s * 1e3:8.1f} {o * 1e3:10.2f} {x * 1e3:10.2f} "
          f"{x / o:7.2f}  {err:.1e}", flush=True)


def bench_compile():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
    from hlo_support import computation, f_int, instr, module, shape

    s = shape(11, (4, 8))
    ins = [instr("p", "parameter", s, 1),
           instr("q", "parameter", s, 2, pn=f_int(9, 1))]
    for i in range(3, 5003):
        ins.append(instr(f"v.{i}", ("add", "multiply", "maximum", "subtract")[i % 4],
                         s, i, [i - 1 if i > 3 else 1, 2]))
    raw = module("big", [computation("main", 1, ins, 5002)], 1)
    with tempfile.TemporaryDirectory() as d:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            nrtpy.neff.compile_hlo(raw, Path(d) / "big.neff")
            times.append(time.perf_counter() - t0)
    print(f"compile_hlo, 5,000 instructions ({len(raw)} bytes): "
          f"{min(times) * 1e3:.0f} ms (best of 3)")


def main() -> None:
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true")
    g.add_argument("--full", action="store_true")
    ap.add_argument("--only", metavar="NAME,...",
                    help="only the models whose names start with one of these")
    ap.add_argument("--phases", type=int, default=0,
                    help="alternating phases per model (default 5; 3 with --full)")
    a = ap.parse_args()
    size = "quick" if a.quick else "full" if a.full else "mid"
    only = [w for w in (a.only or "").split(",") if w]
    if not only:
        bench_compile()
    print(f"{'model':<34} {'compile':>8} {'nrtpy ms':>10} {'XLA ms':>10} "
          f"{'XLA/us':>7}  max rel err")
    with tempfile.TemporaryDirectory() as d:
        for name, fn, args in cases(size):
            if only and not any(name.startswith(w) for w in only):
                continue
            phases = a.phases or (3 if size == "full" else 5)
            bench_model(Path(d), name, fn, args, phases=phases)


if __name__ == "__main__":
    main()
