#!/usr/bin/env python3
"""Write the seed corpus of the HLO fuzz target (tests/fuzz/corpus/hlo).

Serialized HloModuleProtos of small JAX functions, one per form the HLO
compiler lowers: elementwise chains, reductions and arg-reductions,
dot, softmax and layer norm, gather and scatter, control flow, sorting,
dtype conversions.  Needs JAX (a test dependency: make .venv/.test-deps);
the corpus is committed, so the fuzz run itself needs no JAX.

    .venv/bin/python tests/fuzz/make_hlo_corpus.py [OUTPUT_DIR]
"""

import os
import sys

import numpy as np

import jax
import jax.numpy as jnp

jax.config.update("jax_platforms", "cpu")

F = np.zeros((4, 6), np.float32)
V = np.zeros(6, np.float32)
I = np.zeros(6, np.int32)
H = np.zeros((4, 6), jnp.bfloat16)


def softmax(x):
    e = jnp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5)


def loop(x):
    return jax.lax.fori_loop(0, 3, lambda i, c: c * 2.0 + i, x)


def cond(x):
    return jax.lax.cond(x.sum() > 0, lambda y: y + 1, lambda y: y - 1, x)


FUNCTIONS = {
    "elementwise": (lambda a, b: jnp.tanh(a * b + a) - jnp.exp(b), (F, F)),
    "compare_select": (lambda a, b: jnp.where(a > b, a, b * 2), (F, F)),
    "sum_axis": (lambda a: a.sum(axis=1), (F,)),
    "max_all": (lambda a: a.max(), (F,)),
    "argmax": (lambda a: jnp.argmax(a, axis=1), (F,)),
    "argmin_int": (lambda a: jnp.argmin(a), (I,)),
    "dot": (lambda a, b: a @ b.T, (F, F)),
    "softmax": (softmax, (F,)),
    "layernorm": (layernorm, (F,)),
    "rmsnorm_bf16": (lambda x: (x.astype(jnp.float32) * jax.lax.rsqrt(
        (x.astype(jnp.float32) ** 2).mean(-1, keepdims=True) + 1e-6)
    ).astype(jnp.bfloat16), (H,)),
    "gather": (lambda a, i: a[:, i % 6], (F, I)),
    "scatter_set": (lambda a, i: a.at[i % 6].set(1.0), (V, I)),
    "scatter_add": (lambda a, i: a.at[i % 6].add(2.0), (V, I)),
    "fori_loop": (loop, (F,)),
    "cond": (cond, (F,)),
    "sort": (lambda a: jnp.sort(a, axis=1), (F,)),
    "argsort": (lambda a: jnp.argsort(a), (V,)),
    "convert": (lambda a: (a.astype(jnp.int32) + 1).astype(jnp.bfloat16), (F,)),
    "reshape_transpose": (lambda a: a.reshape(6, 4).T[1:3], (F,)),
    "concat_pad": (lambda a, b: jnp.pad(jnp.concatenate([a, b]), 1), (V, V)),
    "cumsum": (lambda a: jnp.cumsum(a, axis=1), (F,)),
    "any_logical": (lambda a: jnp.logical_not(a > 0).any(axis=0), (F,)),
    "tuple_out": (lambda a: (a + 1, a.sum()), (F,)),
}


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "hlo")
    os.makedirs(out, exist_ok=True)
    for name, (fn, args) in FUNCTIONS.items():
        lowered = jax.jit(fn).lower(*args)
        data = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
        with open(os.path.join(out, f"{name}.pb"), "wb") as f:
            f.write(data)
    print(f"{len(FUNCTIONS)} modules in {out}")


if __name__ == "__main__":
    main()
