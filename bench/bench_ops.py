"""Every operation of the emulator's operation table against NumPy.

For each op of the emulator's op table (nrtpy._nrtpy.OPS, generated from
NRTEMU_OP_LIST in src/emulator/kernels/op_list.h), each dtype (float32,
bfloat16, float16, int32, float8_e4m3) and two sizes (64x64, cache-resident;
2048x2048, memory-bound), the NumPy expression of the op's case is compiled
with nrtpy.neff.compile, loaded, and executed with preallocated inputs and
outputs; NumPy evaluates the same expression on the same arrays in the same
run, into a preallocated output where NumPy can.  Both are timed in
interleaved phases after warm-up; the figures are medians.  A dtype the
tracer or the emulator refuses for an op prints "n/a".

Columns: time per execution, NumPy time / emulator time (above 1 = faster
than NumPy), and the bytes the op must read and write divided by the
emulator's time, as a fraction of this machine's memcpy bandwidth
(np.copyto of 64 MiB, read + written): measured in the row's own phases,
after the emulator's, median, because on a shared machine it drifts
(26 to 45 GB/s within minutes on the VM this was written on), and a
figure taken once at the start misjudged the rows run when it had moved.
The header gives the median over the rows of the big size.

Floors (issue 10): every row at >= 1.0x NumPy; memory-bound ops (elementwise,
casts, copies, transposes, reductions, gathers) at the big size at >= 70% of
memcpy.  A row below a floor is measured again after the table, up to
--rerun times (default 2; fresh operands and phases), because on a shared
machine a neighbour's burst can halve a row's bandwidth for the second or
two it takes; the re-runs are listed with the first figures and theirs.
Rows still below a floor after them are listed last and make the exit
status 1, unless --report.  Matmul runs at 64 and 512 (NumPy's bfloat16
matmul is too slow at 2048 for a benchmark run).

Usage: python bench/bench_ops.py [--quick] [--report] [--rerun N] [--ops add,exp]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np

import nrtpy
import nrtpy.neff
from nrtpy.neff import gelu, relu, rsqrt, sigmoid, softmax

from _bench import Memcpy, compiled, per_call  # noqa: E402


SMALL, BIG, MATMUL_BIG = 64, 2048, 512
SPEED_FLOOR, BANDWIDTH_FLOOR = 1.0, 0.70
FP8 = getattr(ml_dtypes, "float8_e4m3", ml_dtypes.float8_e4m3fn)
DTYPES = [np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16),
          np.dtype(np.float16), np.dtype(np.int32), np.dtype(FP8)]
# Reductions that NumPy accumulates in a narrow float type itself, where
# the emulator accumulates in float32 and rounds once: their results are
# judged against the float64 result rounded to the output type instead.
NARROW_FLOATS = {np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(FP8)}
ACCUMULATING = {"sum", "mean", "prod"}


def table_ops() -> tuple[list[str], str]:
    """The op names of the emulator's table, and where they were read."""
    return list(nrtpy._nrtpy.OPS), "nrtpy._nrtpy.OPS"


@dataclass
class Case:
    """One benchmark of `op`: `fn` over arrays from `make(dtype, n)`.

    `into(out, *arrays)` is NumPy doing the same work into a preallocated
    `out` (None: `fn` itself, allocating).  `why` instead of `fn`: the op
    cannot be produced by nrtpy.neff.compile, and the reason.  `blas`: NumPy
    runs it on OpenBLAS's threads, which spin for a while after each call
    (OpenBLAS's thread timeout, 2^28 cycles by default, under 0.1 s) and
    would take the cores from the emulator's phase that follows; each
    NumPy phase is then followed by a pause that lets them park (issue
    10: "after OpenBLAS's threads have been stopped")."""

    op: str
    label: str
    fn: Callable[..., Any] | None = None
    make: Callable[[np.dtype, int], tuple[np.ndarray, ...]] | None = None
    into: Callable[..., Any] | None = None
    memory_bound: bool = True
    why: str = ""
    blas: bool = False


RNG = np.random.default_rng(0)


def values(dt: np.dtype, shape: tuple[int, ...], lo=0.5, hi=2.0) -> np.ndarray:
    """Random values of `dt`: floats in [lo, hi), ints in [1, 100)."""
    if dt.kind in "iu":
        return RNG.integers(1, 100, shape).astype(dt)
    return RNG.uniform(lo, hi, shape).astype(np.float32).astype(dt)


def one(dt, n):
    return (values(dt, (n, n)),)


def two(dt, n):
    return values(dt, (n, n)), values(dt, (n, n))


def three(dt, n):
    cond = (RNG.uniform(-1.0, 1.0, (n, n)) > 0).astype(dt)  # half true
    return cond, values(dt, (n, n)), values(dt, (n, n))


def signed(dt, n):
    return (values(dt, (n, n), -2.0, 2.0) if dt.kind == "f" else
            (values(dt, (n, n)) - 50).astype(dt),)


def unary(op, label, ufunc=None, fn=None, make=one):
    if ufunc is not None:
        return Case(op, label, ufunc, make, lambda out, a: ufunc(a, out=out))
    return Case(op, label, fn, make)


def binary(op, label, ufunc, make=two):
    return Case(op, label, ufunc, make, lambda out, a, b: ufunc(a, b, out=out))


def copied(op, label, fn, make=one):
    """A view in NumPy, so NumPy's same work is copying it out."""
    return Case(op, label, fn, make, lambda out, *xs: np.copyto(out, fn(*xs)))


def reduction(op, fn, axis):
    return Case(op, f"np.{op}(a, axis={axis})", lambda a: fn(a, axis=axis), one,
                lambda out, a: fn(a, axis=axis, out=out))


def cast_target(dt: np.dtype) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if dt == np.float32 else np.dtype(np.float32)


CASES: list[Case] = [
    unary("neg", "-a", np.negative, make=signed),
    unary("abs", "np.abs(a)", np.absolute, make=signed),
    unary("exp", "np.exp(a)", np.exp),
    unary("log", "np.log(a)", np.log),
    unary("sqrt", "np.sqrt(a)", np.sqrt),
    unary("rsqrt", "rsqrt(a)", fn=rsqrt),
    unary("reciprocal", "np.reciprocal(a)", np.reciprocal),
    unary("square", "np.square(a)", np.square),
    unary("tanh", "np.tanh(a)", np.tanh, make=signed),
    unary("sigmoid", "sigmoid(a)", fn=sigmoid, make=signed),
    unary("relu", "relu(a)", fn=relu, make=signed),
    unary("gelu", "gelu(a)", fn=gelu, make=signed),
    unary("sin", "np.sin(a)", np.sin, make=signed),
    unary("cos", "np.cos(a)", np.cos, make=signed),
    unary("floor", "np.floor(a)", np.floor, make=signed),
    unary("ceil", "np.ceil(a)", np.ceil, make=signed),
    unary("sign", "np.sign(a)", np.sign, make=signed),
    unary("logical_not", "np.logical_not(a)", np.logical_not, make=signed),
    binary("add", "a + b", np.add),
    binary("sub", "a - b", np.subtract),
    binary("mul", "a * b", np.multiply),
    binary("div", "a / b", np.true_divide),
    binary("pow", "a ** b", np.power),
    binary("maximum", "np.maximum(a, b)", np.maximum),
    binary("minimum", "np.minimum(a, b)", np.minimum),
    binary("mod", "a % b", np.remainder),
    binary("floor_divide", "a // b", np.floor_divide),
    binary("equal", "a == b", np.equal),
    binary("not_equal", "a != b", np.not_equal),
    binary("less", "a < b", np.less),
    binary("less_equal", "a <= b", np.less_equal),
    binary("greater", "a > b", np.greater),
    binary("greater_equal", "a >= b", np.greater_equal),
    binary("logical_and", "np.logical_and(a, b)", np.logical_and),
    binary("logical_or", "np.logical_or(a, b)", np.logical_or),
    binary("logical_xor", "np.logical_xor(a, b)", np.logical_xor),
    Case("where", "np.where(c, a, b)", np.where, three),  # NumPy's has no out=
    Case("cast", "a.astype(float32), float32 to bfloat16",
         lambda a: a.astype(cast_target(a.dtype)), one,
         lambda out, a: np.copyto(out, a, casting="unsafe")),
    unary("copy", "+a", np.positive),
    Case("matmul", "a @ b", np.matmul, two,
         lambda out, a, b: np.matmul(a, b, out=out), memory_bound=False,
         blas=True),
    reduction("sum", np.sum, 0), reduction("sum", np.sum, 1),
    reduction("mean", np.mean, 0), reduction("mean", np.mean, 1),
    reduction("max", np.max, 0), reduction("max", np.max, 1),
    reduction("min", np.min, 0), reduction("min", np.min, 1),
    reduction("prod", np.prod, 0), reduction("prod", np.prod, 1),
    reduction("argmax", np.argmax, 0), reduction("argmax", np.argmax, 1),
    reduction("argmin", np.argmin, 0), reduction("argmin", np.argmin, 1),
    Case("softmax", "softmax(a, axis=-1)", lambda a: softmax(a, axis=-1), signed,
         memory_bound=False),
    copied("transpose", "a.T", lambda a: a.T),
    copied("reshape", "a.reshape(n // 2, 2 * n)",
           lambda a: a.reshape(a.shape[0] // 2, 2 * a.shape[1])),
    copied("broadcast_to", "np.broadcast_to(r, (n, n))",
           lambda r: np.broadcast_to(r, (r.shape[1], r.shape[1])),
           make=lambda dt, n: (values(dt, (1, n)),)),
    Case("concatenate", "np.concatenate([a, b])",
         lambda a, b: np.concatenate([a, b]),
         lambda dt, n: (values(dt, (n // 2, n)), values(dt, (n // 2, n))),
         lambda out, a, b: np.concatenate([a, b], out=out)),
    copied("slice", "a[:, ::2]", lambda a: a[:, ::2]),
    Case("take", "np.take(a, idx, axis=0)", lambda a, idx: np.take(a, idx, axis=0),
         lambda dt, n: (values(dt, (n, n)),
                        RNG.integers(0, n, n).astype(np.int64)),
         lambda out, a, idx: np.take(a, idx, axis=0, out=out)),
    Case("iota", "", why="nrtpy.neff.compile never emits it"),
    Case("full", "", why="nrtpy.neff.compile emits it only for scalar "
         "constants (shape ()), inside other ops' rows"),
    # The ops of XLA's semantics (the HLO compiler's); integer-only ones
    # are n/a for the float dtypes.
    binary("bitwise_and", "a & b", np.bitwise_and),
    binary("bitwise_or", "a | b", np.bitwise_or),
    binary("bitwise_xor", "a ^ b", np.bitwise_xor),
    unary("bitwise_not", "~a", np.invert),
    binary("shift_left", "a << b", np.left_shift),
    binary("shift_right_arithmetic", "a >> b", np.right_shift),
    Case("shift_right_logical", "", why="nrtpy.neff.compile emits it for "
         "unsigned >>; the dtypes here have none"),
    binary("rem", "np.fmod(a, b)", np.fmod),
    binary("atan2", "np.arctan2(a, b)", np.arctan2),
    binary("copysign", "np.copysign(a, b)", np.copysign),
    Case("trunc_divide", "", why="nrtpy.neff.compile never emits it"),
    unary("expm1", "np.expm1(a)", np.expm1, make=signed),
    unary("log1p", "np.log1p(a)", np.log1p),
    unary("cbrt", "np.cbrt(a)", np.cbrt, make=signed),
    Case("erf", "", why="NumPy has no erf"),
    unary("round_even", "np.rint(a)", np.rint, make=signed),
    Case("round_away", "", why="nrtpy.neff.compile never emits it"),
    unary("is_finite", "np.isfinite(a)", np.isfinite, make=signed),
    Case("bitcast", "", why="nrtpy.neff.compile never emits it"),
    Case("update_slice", "", why="nrtpy.neff.compile never emits it (nrtpy.nki's "
         "writes to a box of a tile do)"),
    Case("scatter", "", why="nrtpy.neff.compile never emits it"),
    Case("dynamic_slice", "", why="nrtpy.neff.compile never emits it (the HLO "
         "compiler's dynamic slices do: bench/bench_hlo.py)"),
    Case("dynamic_update_slice", "", why="nrtpy.neff.compile never emits it "
         "(the HLO compiler's dynamic slices and nrtpy.nki's run-time loops do: "
         "bench/bench_hlo.py, bench/bench_nki.py)"),
    Case("argsort", "np.argsort(a, kind='stable')",
         lambda a: np.argsort(a, kind="stable"), one, memory_bound=False),
    # Control flow runs other ops' kernels; collectives are timed by
    # bench_collectives.py (they need several ranks).
    Case("while", "", why="control flow: the ops of its body are timed here"),
    Case("conditional", "", why="control flow: the ops of its branches are "
         "timed here"),
    *[Case(op, "", why="a collective: see bench/bench_collectives.py")
      for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                 "collective_permute")],
]


def traffic(case: Case, arrays: tuple[np.ndarray, ...], out: np.ndarray) -> int:
    """Bytes the op must read and write."""
    if case.op == "take":  # the rows gathered, not the whole table
        return arrays[1].nbytes + 2 * out.nbytes
    return sum(a.nbytes for a in arrays) + out.nbytes


BLAS_PARK_SECONDS = 0.3


def timed(ours: Callable[[], None], theirs: Callable[[], Any], phases: int,
          memcpy: Memcpy, settle: float = 0.0):
    """Median seconds per call of each, and memcpy's bandwidth, interleaved
    phases after warm-up (NumPy, the emulator, then memcpy); a pause of
    `settle` seconds after each of NumPy's phases."""
    ours(), theirs()
    t0 = time.perf_counter()
    ours(), theirs()
    pair = time.perf_counter() - t0
    number = max(1, min(200, int(0.02 / max(pair, 1e-7))))
    t_ours, t_np, t_copy = [], [], []
    for _ in range(phases):
        t_np.append(per_call(theirs, number))
        time.sleep(settle)
        t_ours.append(per_call(ours, number))
        t_copy.append(per_call(memcpy, 3))
    return (statistics.median(t_ours), statistics.median(t_np),
            memcpy.bandwidth(statistics.median(t_copy)))


def agrees(got: np.ndarray, want: np.ndarray) -> bool:
    """Whether the emulator's result is NumPy's, loosely: 99% of the
    elements within low-precision rounding (NumPy computes bfloat16, float16
    and fp8 in that type; the emulator rounds once from float32)."""
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    if g.shape != w.shape:
        return False
    close = np.isclose(g, w, rtol=0.1, atol=1e-2, equal_nan=True)
    return bool(close.mean() >= 0.99)


def bench_row(work: Path, case: Case, dt: np.dtype, n: int, phases: int, idx: int,
              memcpy: Memcpy):
    """(t_ours, t_numpy, bytes, agrees, memcpy bytes per second), or the
    reason the row is n/a."""
    assert case.fn is not None and case.make is not None
    arrays = case.make(dt, n)
    try:
        want = np.asarray(case.fn(*arrays))
    except (TypeError, ValueError) as e:
        return f"NumPy refuses it: {e}".splitlines()[0]
    if case.op in ACCUMULATING and dt in NARROW_FLOATS:
        wide = case.fn(*(a.astype(np.float64) for a in arrays))
        want = np.asarray(wide).astype(want.dtype)
    try:
        _, _, outputs, run = compiled(work, f"c{idx}", case.fn, *arrays)
        run()
    except Exception as e:  # the tracer's TypeError, the emulator's NrtError
        return f"{type(e).__name__}: {e}".splitlines()[0][:70]
    got = next(iter(outputs.values())).numpy()
    # C order, as the emulator's output: empty_like would keep the layout
    # of a view (a.T is Fortran-ordered), and NumPy's "transpose" would be
    # a plain copy.
    out = np.empty(want.shape, want.dtype)
    if case.into is not None:
        into = case.into

        def theirs():
            into(out, *arrays)
        try:
            theirs()
        except (TypeError, ValueError):  # NumPy's out= refused: allocate
            def theirs():
                case.fn(*arrays)
    else:
        def theirs():
            case.fn(*arrays)
    t_ours, t_np, bandwidth = timed(run, theirs, phases, memcpy,
                                    BLAS_PARK_SECONDS if case.blas else 0.0)
    return t_ours, t_np, traffic(case, arrays, want), agrees(got, want), bandwidth


def floor_notes(case: Case, n: int, t_ours: float, t_np: float, nbytes: int,
                bandwidth: float) -> tuple[float, float, list[str]]:
    """NumPy / emulator, the fraction of memcpy, and the floors missed."""
    ratio, frac = t_np / t_ours, nbytes / t_ours / bandwidth
    notes = []
    if ratio < SPEED_FLOOR:
        notes.append(f"< {SPEED_FLOOR:.1f}x NumPy")
    if case.memory_bound and n == BIG and frac < BANDWIDTH_FLOOR:
        notes.append(f"< {BANDWIDTH_FLOOR:.0%} memcpy")
    return ratio, frac, notes


def fmt_time(t: float) -> str:
    return f"{t * 1e6:.1f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def figures(ratio: float, frac: float, t_ours: float) -> str:
    """A measurement as the lists of rows below a floor show it."""
    return f"{ratio:.2f}x NumPy, {frac:.0%} of memcpy ({fmt_time(t_ours)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="fewer phases, the big size only")
    ap.add_argument("--report", action="store_true",
                    help="print rows below their floor, but exit 0")
    ap.add_argument("--ops", default="",
                    help="comma-separated op names (default: all)")
    ap.add_argument("--rerun", type=int, default=2, metavar="N",
                    help="measure a row below its floor again, up to N times "
                         "(default 2; 0: never)")
    args = ap.parse_args()
    if args.rerun < 0:
        ap.error(f"--rerun must be 0 or more, not {args.rerun}")

    names, source = table_ops()
    covered = {c.op for c in CASES}
    missing = [op for op in names if op not in covered]
    if missing:
        print(f"bench_ops: no benchmark case for op(s) {', '.join(missing)} of "
              f"the emulator's op table ({source}); add a Case to bench_ops.py",
              file=sys.stderr)
        return 2
    wanted = [o for o in args.ops.split(",") if o]
    unknown = [o for o in wanted if o not in names]
    if unknown:
        print(f"bench_ops: --ops names unknown op(s) {', '.join(unknown)}; the "
              f"ops are: {' '.join(names)}", file=sys.stderr)
        return 2
    cases = [c for c in CASES if c.op in names and (not wanted or c.op in wanted)]
    phases = 3 if args.quick else 5

    memcpy = Memcpy()
    print(f"nrtpy {nrtpy.__version__}, emulated={nrtpy.runtime_info()['emulated']}, "
          f"numpy {np.__version__}; ops from {source}; median of {phases} phases; "
          f"memcpy (64 MiB, read + written) measured in each row's phases\n")
    print("| op | expression | dtype | size | emulator | NumPy | NumPy / emulator "
          "| of memcpy | memcpy GB/s | note |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---|")
    below: list[tuple[Case, np.dtype, int, str, list[str]]] = []
    bandwidths: list[float] = []
    # (removed when the run ends: each row's NEFF is written there)
    tmp = tempfile.TemporaryDirectory(prefix="nrtpy-bench-ops-")
    work = Path(tmp.name)
    idx = 0
    with np.errstate(all="ignore"):
        for case in cases:
            if case.fn is None:
                print(f"| {case.op} | | | | n/a | | | | | {case.why} |", flush=True)
                continue
            for dt in DTYPES:
                sizes = [BIG] if args.quick else [SMALL, BIG]
                if case.op == "matmul":
                    sizes = [MATMUL_BIG] if args.quick else [SMALL, MATMUL_BIG]
                for n in sizes:
                    idx += 1
                    head = f"| {case.op} | `{case.label}` | {dt.name} | {n}x{n} |"
                    r = bench_row(work, case, dt, n, phases, idx, memcpy)
                    if isinstance(r, str):
                        print(f"{head} n/a | | | | | {r.replace('|', '/')} |",
                              flush=True)
                        continue
                    t_ours, t_np, nbytes, ok, bandwidth = r
                    if n == BIG:
                        bandwidths.append(bandwidth)
                    ratio, frac, notes = floor_notes(case, n, t_ours, t_np, nbytes,
                                                     bandwidth)
                    if notes:
                        below.append((case, dt, n, figures(ratio, frac, t_ours),
                                      notes[:]))
                    if not ok:
                        notes.append("result differs from NumPy")
                    print(f"{head} {fmt_time(t_ours)} | {fmt_time(t_np)} | "
                          f"{ratio:.2f} | {frac:.0%} | {bandwidth / 1e9:.1f} | "
                          f"{'; '.join(notes)} |", flush=True)

    if bandwidths:
        print(f"\nmemcpy over the {BIG}x{BIG} rows: median "
              f"{statistics.median(bandwidths) / 1e9:.1f} GB/s, "
              f"{min(bandwidths) / 1e9:.1f} to {max(bandwidths) / 1e9:.1f}")
    with np.errstate(all="ignore"):
        still = rerun(work, below, args.rerun, phases, memcpy, idx)
    print(f"\n{len(still)} row(s) below their floor (>= {SPEED_FLOOR:.1f}x NumPy; "
          f">= {BANDWIDTH_FLOOR:.0%} of memcpy for memory-bound ops at {BIG}x{BIG})"
          + (f" after {args.rerun} re-run(s):" if below and args.rerun else ":"))
    for line in still:
        print(f"  {line}")
    return 1 if still and not args.report else 0


def rerun(work: Path, below: list[tuple[Case, np.dtype, int, str, list[str]]], times: int,
          phases: int, memcpy: Memcpy, idx: int) -> list[str]:
    """Each row below its floor measured again, up to `times` times, until
    it meets its floors; prints what each re-run measured and returns the
    rows that never did."""
    if below and times:
        print(f"\nRe-run of the {len(below)} row(s) below their floor, up to "
              f"{times} time(s) each (first figures, then each re-run's):")
    still = []
    for case, dt, n, first, notes in below:
        name = f"{case.op} {dt.name} {n}x{n} ({case.label})"
        seen = [first]
        for _ in range(times):
            idx += 1
            r = bench_row(work, case, dt, n, phases, idx, memcpy)
            if isinstance(r, str):
                seen.append(r)
                break
            t_ours, t_np, nbytes, _, bandwidth = r
            ratio, frac, notes = floor_notes(case, n, t_ours, t_np, nbytes,
                                             bandwidth)
            seen.append(figures(ratio, frac, t_ours))
            if not notes:
                break
        if times:
            print(f"  {name}: " + " -> ".join(seen)
                  + ("" if notes else ": meets its floors"))
        if notes:
            still.append(f"{name}: {seen[-1]}: " + ", ".join(notes))
    return still


if __name__ == "__main__":
    sys.exit(main())
