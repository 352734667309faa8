"""NKI kernels on the emulator: instruction overhead, compile time, matmul.

Three figures for issue 30's targets, each beside a reference measured in
the same run after warm-up, and one without a target:

- **Instructions**: two kernels of 20,000 float32 instructions, executed
  with preallocated inputs and outputs through ``Nrtpy.execute``: 20,000
  ``nl.add`` on one [128, 1] tile, and a loop over 6,666 [128, 1] tiles of
  an HBM tensor (load, add a scalar, store); the time per instruction
  (target: at most 1 us) beside NumPy's ``np.add(a, b, out=c)`` on
  [128, 1] arrays.
- **Run-time loop**: 64 tiles of 128 x 512 float32 (load, multiply by 2,
  store) in a loop the device runs (``nl.dynamic_range`` of a register:
  an emulator ``while`` whose body's accesses move by the register),
  beside the same loop unrolled at trace time.
- **Compile**: each kernel's first ``nki.jit`` call without running it:
  tracing, writing the NEFF and loading it (target: at most 2 s), beside
  NumPy executing 20,000 adds eagerly.  The tutorial's matmul kernel
  (below) is timed the same way, for its op count.
- **Matmul**: the SDK tutorial's fully optimized matmul kernel
  (``nki_matmul_fully_optimized_``: blocks of 16 x 2 x 8 tiles of
  128 x 512 x 128, result tiles in SBUF accumulated from PSUM a K-block
  at a time), written here in our own words, on 2048 x 2048 x 2048
  bfloat16, against NumPy's float32 ``lhsT.T @ rhs`` of the same values
  (target: NumPy time / emulator time at least 0.5).  OpenBLAS's threads
  spin for a while after each call and would take the cores from the
  emulator's phase that follows: each NumPy phase is followed by a pause.

Execution figures are medians of alternating phases (7, or 3 with
--quick); compile figures are medians of fresh compiles (5, or 3).  The
results are checked against NumPy once before timing.  Exits 1 when a
target is missed, unless --report.

Usage: python bench/bench_nki.py [--quick] [--report] [--size N] [--adds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import ml_dtypes
import numpy as np

import nrtpy
from nrtpy import NrtpyTensor, nki
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl

from _bench import per_call  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
INSTRUCTION_TARGET_S = 1e-6
COMPILE_TARGET_S = 2.0
MATMUL_TARGET = 0.5
BLAS_PAUSE_S = 0.2


def adds_kernel(n: int) -> Callable[..., Any]:
    """``n`` nl.add instructions, each on the tile the last one wrote."""
    def adds(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t, u = nl.load(a), nl.load(b)
        for _ in range(n):
            t = nl.add(t, u)
        nl.store(out, t)
        return out
    adds.__name__ = f"adds_{n}"
    return adds


def tiles_kernel(a, b):
    """A loop over the [128, 1] tiles of ``a`` ([128 n, 1]): load, add the
    scalar ``b``, store: three instructions a tile."""
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for i in range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], nl.add(t, b))
    return out


def row_tiles(x, n, dynamic: bool):
    """Row tiles 0..n-1 of x ([128 n, f]): load, multiply by 2, store; in a
    run-time loop (the bound in a register, an emulator while whose body
    moves its accesses) or unrolled at trace time."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    if dynamic:
        n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=n_sb, src=n)
        reg = nisa.register_alloc()
        nisa.register_load(reg, n_sb)
        loop = nl.dynamic_range(reg)
    else:
        loop = range(x.shape[0] // 128)
    for i in loop:
        t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128 + nl.arange(128)[:, None],
                                   nl.arange(x.shape[1])[None, :]])
        r = nl.ndarray(t.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=r)
    return out


def dynamic_tiles(x, n):
    return row_tiles(x, n, True)


def unrolled_tiles(x, n):
    return row_tiles(x, n, False)


def blocked_matmul(lhsT, rhs):
    """out = lhsT.T @ rhs as the SDK tutorial's fully optimized kernel
    computes it: M in blocks of 16 tiles of 128, N in blocks of 2 tiles of
    512, K in blocks of 8 tiles of 128.  Each result tile of 128 rows (an
    N-block wide) lives in SBUF for the whole K loop; each K-block loads
    the rhs tiles of the N-block and the lhsT tiles of each M-block into
    one SBUF tile each, sums its 8 k tiles into a PSUM tile per (m, n)
    tile, and adds that into the result tile."""
    tm, tn, tk = 16, 2, 8
    K, M = lhsT.shape
    N = rhs.shape[1]
    bm, bn, bk = 128 * tm, 512 * tn, 128 * tk
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for nb in nl.affine_range(N // bn):
        acc = []
        for _ in range(M // 128):
            r = nl.ndarray((128, tn, 512), dtype=out.dtype, buffer=nl.sbuf)
            nisa.memset(dst=r, value=0.0)
            acc.append(r)
        for kb in nl.sequential_range(K // bk):
            rt = nl.ndarray((128, tk, bn), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in range(tk):
                k0 = (kb * tk + k) * 128
                nisa.dma_copy(dst=rt[0:128, k, 0:bn],
                              src=rhs[k0:k0 + 128, nb * bn:(nb + 1) * bn])
            for mb in nl.affine_range(M // bm):
                lt = nl.ndarray((128, tk, bm), dtype=lhsT.dtype, buffer=nl.sbuf)
                for k in nl.affine_range(tk):
                    k0 = (kb * tk + k) * 128
                    nisa.dma_copy(dst=lt[0:128, k, 0:bm],
                                  src=lhsT[k0:k0 + 128, mb * bm:(mb + 1) * bm])
                for n in nl.affine_range(tn):
                    for m in nl.affine_range(tm):
                        psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                        for k in nl.affine_range(tk):
                            nisa.nc_matmul(dst=psum,
                                           stationary=lt[0:128, k, m * 128:(m + 1) * 128],
                                           moving=rt[0:128, k, n * 512:(n + 1) * 512])
                        r = acc[mb * tm + m]
                        nisa.tensor_tensor(dst=r[0:128, n, 0:512],
                                           data1=r[0:128, n, 0:512], data2=psum,
                                           op=nl.add)
        for i, r in enumerate(acc):
            nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, nb * bn:(nb + 1) * bn],
                          src=r.reshape((128, bn))[0:128, 0:bn])
    return out


class Loaded:
    """A compiled kernel loaded with its inputs and outputs preallocated;
    ``run()`` executes it once through Nrtpy.execute."""

    def __init__(self, kernel: Any, *arrays: np.ndarray) -> None:
        compiled = kernel.specialize(*arrays)
        model = compiled.model
        self.inputs = {name: NrtpyTensor.from_numpy(np.ascontiguousarray(a), name=name)
                       for name, a in zip(compiled.input_names, arrays)}
        self.outputs = {t.name: t for t in model.allocate_output_tensors()}
        self.output = compiled.output_names[0]
        rt = nrtpy.get_nrtpy_singleton()
        ins = {k: v.tensor_ref for k, v in self.inputs.items()}
        outs = {k: v.tensor_ref for k, v in self.outputs.items()}
        self.model = model
        self.run = lambda: rt.execute(model.model_ref, ins, outs)

    def result(self) -> np.ndarray:
        self.run()
        return self.outputs[self.output].numpy()


def alternating(fns: list[Callable[[], Any]], numbers: list[int], phases: int,
                pause_after: set[int] = frozenset()) -> list[float]:
    """Median seconds per call of each of ``fns``, in alternating phases."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(phases):
        for i, (fn, number) in enumerate(zip(fns, numbers)):
            times[i].append(per_call(fn, number))
            if i in pause_after:
                time.sleep(BLAS_PAUSE_S)
    return [statistics.median(t) for t in times]


def compile_seconds(fn: Callable[..., Any], arrays: tuple, repeats: int) -> float:
    """Median seconds of a first nki.jit call's compile: trace, write the
    NEFF, load it (a fresh kernel each time)."""
    times = []
    for _ in range(repeats):
        kernel = nki.jit(fn)
        t0 = time.perf_counter()
        kernel.specialize(*arrays).model
        times.append(time.perf_counter() - t0)
        del kernel
    return statistics.median(times)


def program_ops(kernel: Any, *arrays: np.ndarray) -> int:
    """Ops in the program of the NEFF the kernel compiled for ``arrays``."""
    import io
    import json
    import tarfile
    from nrtpy.neff._container import HEADER_SIZE
    data = kernel.specialize(*arrays).path.read_bytes()[HEADER_SIZE:]
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.extractfile("sg00/program.json")
        assert member is not None
        return len(json.load(member)["ops"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--report", action="store_true",
                    help="exit 0 even when a target is missed")
    ap.add_argument("--size", type=int, default=2048,
                    help="M = N = K of the matmul (a multiple of 2048)")
    ap.add_argument("--adds", type=int, default=20000)
    args = ap.parse_args()
    phases = 3 if args.quick else 7
    repeats = 3 if args.quick else 5
    rng = np.random.default_rng(0)
    missed: list[str] = []

    # -- instructions ---------------------------------------------------------
    n = args.adds
    a = rng.uniform(-1, 1, (128, 1)).astype(np.float32)
    b = rng.uniform(-1, 1, (128, 1)).astype(np.float32) * np.float32(1e-3)
    adds = adds_kernel(n)
    k_adds = nki.jit(adds)
    loaded = Loaded(k_adds, a, b)
    want = a.copy()
    for _ in range(n):
        np.add(want, b, out=want)
    if not np.array_equal(loaded.result(), want):
        print("adds: the kernel's result differs from NumPy's", file=sys.stderr)
        return 1
    ntiles = n // 3
    at = rng.uniform(-1, 1, (128 * ntiles, 1)).astype(np.float32)
    k_tiles = nki.jit(tiles_kernel)
    tiled = Loaded(k_tiles, at, 0.5)
    if not np.array_equal(tiled.result(), at + np.float32(0.5)):
        print("tiles: the kernel's result differs from NumPy's", file=sys.stderr)
        return 1
    c = np.empty_like(a)
    t_kernel, t_tiles, t_np = alternating(
        [loaded.run, tiled.run, lambda: np.add(a, b, out=c)], [3, 3, 20000], phases)
    print(f"# NKI kernels on the emulator ({os.cpu_count()} CPUs)\n")
    print("| figure | nrtpy | reference | ratio | target |")
    print("|---|---:|---:|---:|---|")
    for label, kernel, args_, t, count in (
            (f"{n} nl.add on one [128, 1] tile", k_adds, (a, b), t_kernel, n),
            (f"{ntiles} [128, 1] tiles: load, nl.add, store", k_tiles, (at, 0.5),
             t_tiles, 3 * ntiles)):
        per = t / count
        print(f"| {label}, float32: time per instruction "
              f"({program_ops(kernel, *args_)} ops) | {per * 1e9:.0f} ns | "
              f"np.add(out=) [128, 1] {t_np * 1e9:.0f} ns | {t_np / per:.2f} | "
              f"<= {INSTRUCTION_TARGET_S * 1e6:.0f} us |")
        if per > INSTRUCTION_TARGET_S:
            missed.append(f"instruction overhead ({label})")
    del loaded, tiled

    # -- run-time loop ----------------------------------------------------------
    # 64 tiles of 128 x 512 float32, load x2 store: the loop the device runs
    # (one body, its accesses at register offsets) beside the same unrolled.
    xt = rng.uniform(-1, 1, (128 * 64, 512)).astype(np.float32)
    nt = np.array([[64]], np.int32)
    k_dyn, k_unrolled = nki.jit(dynamic_tiles), nki.jit(unrolled_tiles)
    dyn, unrolled = Loaded(k_dyn, xt, nt), Loaded(k_unrolled, xt, nt)
    for loaded_ in (dyn, unrolled):
        if not np.array_equal(loaded_.result(), 2 * xt):
            print("row tiles: the kernel's result differs from NumPy's",
                  file=sys.stderr)
            return 1
    t_dyn, t_unrolled = alternating([dyn.run, unrolled.run], [3, 3], phases)
    print(f"| 64 [128, 512] tiles: load, x2, store, float32, in a run-time loop "
          f"({program_ops(k_dyn, xt, nt)} ops) | {t_dyn * 1e3:.1f} ms | unrolled "
          f"({program_ops(k_unrolled, xt, nt)} ops) {t_unrolled * 1e3:.1f} ms | "
          f"{t_unrolled / t_dyn:.2f} | |")
    del dyn, unrolled

    # -- compile ------------------------------------------------------------
    def eager() -> None:
        t = a.copy()
        for _ in range(n):
            t = np.add(t, b)
    t_eager = statistics.median(per_call(eager, 1) for _ in range(repeats))
    for label, fn, args_ in ((f"{n} nl.add", adds, (a, b)),
                             (f"{ntiles} tiles ({3 * ntiles} instructions)",
                              tiles_kernel, (at, 0.5))):
        t_compile = compile_seconds(fn, args_, repeats)
        print(f"| {label}: first call's trace + NEFF + load | "
              f"{t_compile:.2f} s | NumPy eager {n} adds {t_eager:.3f} s | "
              f"{t_eager / t_compile:.3f} | <= {COMPILE_TARGET_S:.0f} s |")
        if t_compile > COMPILE_TARGET_S:
            missed.append(f"compile time ({label})")

    # -- matmul ---------------------------------------------------------------
    s = args.size
    lhsT = rng.standard_normal((s, s)).astype(BF16)
    rhs = rng.standard_normal((s, s)).astype(BF16)
    t_mm_compile = compile_seconds(blocked_matmul, (lhsT, rhs), repeats)
    kernel = nki.jit(blocked_matmul)
    n_ops = program_ops(kernel, lhsT, rhs)
    print(f"| matmul {s}^3 bfloat16: trace + NEFF + load ({n_ops} ops) | "
          f"{t_mm_compile:.2f} s | | | |")
    loaded = Loaded(kernel, lhsT, rhs)
    lf, rf = lhsT.astype(np.float32), rhs.astype(np.float32)
    ref = np.empty((s, s), np.float32)
    np.matmul(lf.T, rf, out=ref)
    got = loaded.result().astype(np.float32)
    # The tutorial's result tiles are bfloat16, rounded after each K-block.
    bound = 2.0 ** -7 * (s // 1024) * float(np.max(np.abs(ref)))
    if float(np.max(np.abs(got - ref))) > bound:
        print("matmul: the kernel's result differs from NumPy's beyond "
              "bfloat16 rounding", file=sys.stderr)
        return 1
    t_mm, t_np = alternating([loaded.run, lambda: np.matmul(lf.T, rf, out=ref)],
                             [1, 1], phases, pause_after={1})
    ratio = t_np / t_mm
    print(f"| matmul {s}^3: the SDK's fully optimized kernel, bfloat16 | "
          f"{t_mm:.3f} s ({2 * s ** 3 / t_mm / 1e9:.0f} GFLOP/s) | "
          f"NumPy float32 {t_np:.3f} s | {ratio:.2f} | >= {MATMUL_TARGET} |")
    if ratio < MATMUL_TARGET:
        missed.append("matmul throughput")

    if missed:
        print(f"\nbelow target: {', '.join(missed)}")
        return 0 if args.report else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
