"""Several collective models per rank: the kernels, the rank's loop, and
one rank of a multi-process test (run as a script).

Usage: python cc_models_rank.py NEFF_DIR RANK WORLD MODE [CORE]
NEFF_DIR holds the kernels of KERNELS compiled for WORLD (compile_all).
The rank loads them with cc_enabled=True as RANK of WORLD on CORE (default
0) and, by MODE:

- loop: executes them in turn, in an order that changes every iteration
  (the same on every rank), as a tensor-parallel model does with its
  kernels kept loaded (input tensors written in place, the weight shard
  and the outputs allocated once); half-way it unloads the all-gather and
  goes on with the others.  Every output is checked against NumPy.
- threads: loads the all-reduce twice, on CORE and CORE + 1, and executes
  both copies at once from two threads, each many times (the rank's
  executions take turns: the copies' exchanges are alike, so any order
  pairs with the other ranks').
- mismatch: rank 0 executes the all-reduce while the other ranks execute
  the all-gather: every rank must fail.

Prints "ok" (exit 0), or "NrtError <status>: <message>" (exit 3); then
"elapsed <seconds>" since the rank started to load.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from pathlib import Path

import numpy as np

import nrtpy.neff as nn
from nrtpy import NrtError, NrtpyModel, NrtpyTensor
from nrtpy._singleton import get_nrtpy_singleton

ROWS, COLS = 8, 4         # x of the all-reduce, all-gather, reduce-scatter
BATCH, SHARD, OUT = 4, 8, 6  # tensor-parallel: x[BATCH, K] @ W[K, OUT]
ITERATIONS = 12


def cc_all_reduce(x):
    return nn.all_reduce(x)


def cc_all_gather(x):
    return nn.all_gather(x, 0)


def cc_reduce_scatter(x):
    return nn.reduce_scatter(x, 0, op="max")


def tp_matmul(x, w):
    """Row-parallel linear layer: this rank's columns of x times its rows of
    W, summed over the ranks."""
    return nn.all_reduce(x @ w)


KERNELS = (cc_all_reduce, cc_all_gather, cc_reduce_scatter, tp_matmul)


def compile_all(neff_dir: Path, world: int) -> Path:
    x = np.zeros((ROWS, COLS), np.float32)
    for fn in KERNELS[:3]:
        nn.compile(fn, x, path=neff_dir / f"{fn.__name__}.neff",
                   world_size=world)
    nn.compile(tp_matmul, np.zeros((BATCH, SHARD), np.float32),
               np.zeros((SHARD, OUT), np.float32),
               path=neff_dir / "tp_matmul.neff", world_size=world)
    return neff_dir


def small_ints(seed: int, shape) -> np.ndarray:
    """Integer-valued float32: sums and products are exact in any order."""
    return np.random.default_rng(seed).integers(-4, 5, shape).astype(np.float32)


def x_of(rank: int, it: int) -> np.ndarray:
    return small_ints(1000 * it + rank, (ROWS, COLS))


def tp_full(it: int, world: int):
    """The whole x and W of the tensor-parallel layer at iteration it."""
    return (small_ints(7000 + it, (BATCH, SHARD * world)),
            small_ints(99, (SHARD * world, OUT)))


def expected(name: str, rank: int, world: int, it: int) -> np.ndarray:
    xs = [x_of(r, it) for r in range(world)]
    if name == "cc_all_reduce":
        return sum(xs[1:], xs[0])
    if name == "cc_all_gather":
        return np.concatenate(xs, 0)
    if name == "cc_reduce_scatter":
        blk = ROWS // world
        return np.maximum.reduce(xs)[rank * blk:(rank + 1) * blk]
    x, w = tp_full(it, world)
    return x @ w


class Rank:
    """One rank's kernels, kept loaded, with their I/O allocated once (as
    nkipy's DeviceKernel keeps them)."""

    def __init__(self, neff_dir: Path, rank: int, world: int, core: int):
        self.rank, self.world, self.core = rank, world, core
        self.models = {
            fn.__name__: NrtpyModel.load_from_neff(
                neff_dir / f"{fn.__name__}.neff", core_id=core,
                cc_enabled=True, rank_id=rank, world_size=world)
            for fn in KERNELS}
        self.x = NrtpyTensor.from_numpy(x_of(rank, 0), name="x", core_id=core)
        _, w = tp_full(0, world)
        self.tp_x = NrtpyTensor.from_numpy(
            np.zeros((BATCH, SHARD), np.float32), name="x", core_id=core)
        self.tp_w = NrtpyTensor.from_numpy(
            np.ascontiguousarray(w[rank * SHARD:(rank + 1) * SHARD]),
            name="w", core_id=core)
        self.outs = {name: {"output_0": m.allocate_output_tensors()[0]}
                     for name, m in self.models.items()}

    def run(self, name: str, it: int) -> None:
        if name == "tp_matmul":
            x, _ = tp_full(it, self.world)
            self.tp_x.write_from_numpy(
                np.ascontiguousarray(x[:, self.rank * SHARD:(self.rank + 1) * SHARD]))
            inputs = {"x": self.tp_x, "w": self.tp_w}
        else:
            self.x.write_from_numpy(x_of(self.rank, it))
            inputs = {"x": self.x}
        self.models[name](inputs=inputs, outputs=self.outs[name])
        got = self.outs[name]["output_0"].numpy()
        want = expected(name, self.rank, self.world, it)
        assert np.array_equal(got, want), (self.rank, name, it, got, want)

    def unload(self, name: str) -> None:
        model = self.models.pop(name)
        get_nrtpy_singleton().unload_model(model.model_ref)
        try:
            model(inputs={"x": self.x})
        except Exception:  # unloaded: refused
            pass
        else:
            raise AssertionError(f"{name} executed after its unload")
        del model
        gc.collect()


def loop(neff_dir: Path, rank: int, world: int, core: int,
         iterations: int = ITERATIONS) -> None:
    """Every kernel in turn, the order rotating; the all-gather unloaded
    half-way."""
    r = Rank(neff_dir, rank, world, core)
    for it in range(iterations):
        if it == iterations // 2:
            r.unload("cc_all_gather")
        names = list(r.models)
        shift = it % len(names)
        for name in names[shift:] + names[:shift]:
            r.run(name, it)


def threads(neff_dir: Path, rank: int, world: int, core: int,
            executions: int = 30) -> None:
    """Two copies of the all-reduce, on two cores, executed at once."""
    x = x_of(rank, 0)
    want = expected("cc_all_reduce", rank, world, 0)
    errors: list[BaseException] = []

    def work(c: int) -> None:
        try:
            model = NrtpyModel.load_from_neff(
                neff_dir / "cc_all_reduce.neff", core_id=c, cc_enabled=True,
                rank_id=rank, world_size=world)
            t = NrtpyTensor.from_numpy(x, name="x", core_id=c)
            out = {"output_0": model.allocate_output_tensors()[0]}
            for _ in range(executions):
                model(inputs={"x": t}, outputs=out)
                assert np.array_equal(out["output_0"].numpy(), want)
        except BaseException as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(c,)) for c in (core, core + 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def mismatch(neff_dir: Path, rank: int, world: int, core: int) -> None:
    r = Rank(neff_dir, rank, world, core)
    r.run("cc_all_reduce" if rank == 0 else "cc_all_gather", 0)


def main() -> int:
    neff_dir, rank, world, mode = sys.argv[1:5]
    core = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    fn = {"loop": loop, "threads": threads, "mismatch": mismatch}[mode]
    start = time.monotonic()
    try:
        fn(Path(neff_dir), int(rank), int(world), core)
        print("ok", flush=True)
        code = 0
    except NrtError as e:
        print(f"NrtError {e.status_code}: {e}", flush=True)
        code = 3
    print(f"elapsed {time.monotonic() - start:.3f}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
