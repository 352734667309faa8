"""HLO indexing and control-flow opcodes from JAX on the emulator against
XLA:CPU: embedding lookups (gather), scatter-add, convolution, pooling
(reduce-window), argsort and top-k (sort), a fori_loop (while).

Same method and columns as bench_hlo.py (whose ``bench_model`` it uses):
median time per execution, XLA's time / ours (1.0 = as fast as XLA:CPU),
and the largest error relative to XLA's largest magnitude.

Needs JAX (a test dependency: ``make test`` installs it in .venv).

Usage: python bench/bench_hlo_index.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_hlo import bench_model  # noqa: E402


def cases(quick: bool):
    rng = np.random.default_rng(0)
    v, d, n = (4000, 256, 512) if quick else (32000, 1024, 2048)
    table = rng.standard_normal((v, d), dtype=np.float32)
    ids = rng.integers(0, v, (n,)).astype(np.int32)
    yield f"embedding x[ids] {v}x{d}, {n} ids", lambda t, i: t[i], (table, ids)
    yield (f"jnp.take(mode=fill) {v}x{d}", lambda t, i: jnp.take(t, i, axis=0),
           (table, ids))
    upd = rng.standard_normal((n, d), dtype=np.float32)
    yield (f"scatter-add {n} rows into {v}x{d}",
           lambda t, i, u: t.at[i].add(u), (table, ids, upd))
    b, c, hw = (2, 16, 28) if quick else (8, 64, 56)
    x = rng.standard_normal((b, c, hw, hw), dtype=np.float32)
    w = (rng.standard_normal((c, c, 3, 3), dtype=np.float32) / (3 * c ** 0.5))
    yield (f"conv {b}x{c}x{hw}x{hw} 3x3 SAME",
           lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"), (x, w))
    yield (f"max pool 2x2 {b}x{c}x{hw}x{hw}",
           lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2),
                                       (1, 1, 2, 2), "VALID"), (x,))
    yield (f"avg pool 3x3/2 SAME {b}x{c}x{hw}x{hw}",
           lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 2, 2),
                                       "SAME") / 9, (x,))
    r, m = (16, 1024) if quick else (64, 4096)
    s = rng.standard_normal((r, m), dtype=np.float32)
    yield f"argsort {r}x{m}", lambda s: jnp.argsort(s, axis=1), (s,)
    yield f"top_k 8 of {r}x{m}", lambda s: lax.top_k(s, 8)[1], (s,)
    yield f"top_k 64 of {r}x{m}", lambda s: lax.top_k(s, 64)[1], (s,)
    h = rng.standard_normal((r, 256), dtype=np.float32)
    wl = rng.standard_normal((256, 256), dtype=np.float32) / 16
    yield (f"fori_loop 8 x tanh({r}x256 @ 256x256)",
           lambda h, w: lax.fori_loop(0, 8, lambda i, c: jnp.tanh(c @ w), h), (h, wl))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    print(f"{'model':<34} {'compile':>8} {'nrtpy ms':>10} {'XLA ms':>10} "
          f"{'XLA/us':>7}  max rel err")
    with tempfile.TemporaryDirectory() as d:
        for name, fn, args in cases(a.quick):
            bench_model(Path(d), name, fn, args, phases=5)


if __name__ == "__main__":
    jax.config.update("jax_platforms", "cpu")
    main()
