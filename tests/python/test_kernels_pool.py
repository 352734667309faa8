"""Large elementwise and layout ops on the worker pool, and 1-byte
operands by table lookup: the same results as computed one call at a time.

An elementwise op that is no part of a fused chain runs on the pool when
its out has 2**18 elements or more, cut into pieces along its leading
dimensions; layout ops (transpose, slice, broadcast_to, concatenate,
reshape) do the same from 1 MiB.  An op whose operands and result all
have 1-byte elements (fp8, bool, int8, uint8) is a lookup in a table of
its results over every code (4096 elements or more) or every pair of codes
(2**16 or more), built by the kernel itself; compares, maximum and minimum
of fp8 compare order keys of the codes (4096 or more).  So each case here runs the
op big and compares it with the same op run small (below every threshold:
the plain kernel), bit for bit, and with NumPy / ml_dtypes.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nrtpy.neff
from support import child_env, namespace, run_compiled

FP8 = [ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
       ml_dtypes.float8_e3m4]
RNG = np.random.default_rng(10)


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def same_values(got: np.ndarray, want: np.ndarray) -> None:
    """Equal as float32 values, NaN where NaN (payloads aside)."""
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


UNARY = {
    "floor": np.floor, "ceil": np.ceil, "sign": np.sign, "rint": np.rint,
    "square": np.square, "reciprocal": np.reciprocal,
    "relu": nrtpy.neff.relu, "exp": np.exp,
}


@pytest.mark.parametrize("op", UNARY, ids=str)
@pytest.mark.parametrize("dtype", FP8, ids=lambda d: np.dtype(d).name)
def test_fp8_unary_every_code_by_table(tmp_path, dtype, op):
    fn = UNARY[op]
    codes = np.arange(256, dtype=np.uint8).view(dtype).reshape(16, 16)
    big = np.tile(codes, (8, 4))  # 8192 codes: the table
    got = run_compiled(tmp_path, fn, big)
    small = run_compiled(tmp_path, fn, codes)  # 256: computed
    np.testing.assert_array_equal(bits(got), bits(np.tile(small, (8, 4))))
    if op != "exp":  # exp is rounded from float32: within an ulp of ml_dtypes
        with np.errstate(divide="ignore"):
            want = fn(codes.astype(np.float32)).astype(dtype)
        same_values(small, want)


@pytest.mark.parametrize("dtype", FP8, ids=lambda d: np.dtype(d).name)
def test_fp8_tests_and_truth_every_code(tmp_path, dtype):
    codes = np.arange(256, dtype=np.uint8).view(dtype).reshape(16, 16)
    big = np.tile(codes, (16, 16))
    for fn in (np.isfinite, np.logical_not):
        got = run_compiled(tmp_path, fn, big)
        want = fn(big.astype(np.float32))
        np.testing.assert_array_equal(got, want, strict=True)


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": np.true_divide, "maximum": np.maximum, "minimum": np.minimum,
    "less": np.less, "equal": np.equal, "greater_equal": np.greater_equal,
    "not_equal": np.not_equal, "greater": np.greater,
    "less_equal": np.less_equal,
    "logical_xor": np.logical_xor,
    "mod": np.mod, "floor_divide": np.floor_divide, "rem": np.fmod,
}


@pytest.mark.parametrize("op", BINARY, ids=str)
@pytest.mark.parametrize("dtype", FP8, ids=lambda d: np.dtype(d).name)
def test_fp8_binary_every_pair_by_table(tmp_path, dtype, op):
    fn = BINARY[op]
    codes = np.arange(256, dtype=np.uint8).view(dtype)
    a = np.repeat(codes, 256).reshape(256, 256)  # every pair once
    b = np.tile(codes, 256).reshape(256, 256)
    with np.errstate(all="ignore"):
        got = run_compiled(tmp_path, fn, a, b)  # 65536 elements: the pair table
        # 8 rows at a time: computed
        small = np.concatenate([run_compiled(tmp_path, fn, a[i:i + 8], b[i:i + 8])
                                for i in range(0, 256, 8)])
        np.testing.assert_array_equal(bits(got), bits(small))
        want = fn(a.astype(np.float32), b.astype(np.float32))
    if want.dtype == np.bool_:
        np.testing.assert_array_equal(got, want, strict=True)
    else:
        same_values(got, want.astype(dtype))


# fp8 arithmetic that kernel_table.c computes with AVX-512 VBMI (looked up
# elsewhere), with NumPy's float32 result rounded once to the format.
FP8_ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
             "div": np.true_divide, "mod": np.mod,
             "floor_divide": np.floor_divide, "rem": np.fmod}


@pytest.mark.parametrize("dtype", FP8, ids=lambda d: np.dtype(d).name)
def test_fp8_arith_on_the_pool_matches_numpy(tmp_path, dtype):
    """Random codes (NaN and infinity among them) over an out that the pool
    cuts at odd places: every piece's computed lanes, its tail and its
    special lanes, as NumPy in float32."""
    shape = (3, 100003)
    a = RNG.integers(0, 256, shape, dtype=np.uint8).view(dtype)
    b = RNG.integers(0, 256, shape, dtype=np.uint8).view(dtype)
    for name, fn in FP8_ARITH.items():
        got = run_compiled(tmp_path, fn, a, b)
        with np.errstate(all="ignore"):
            want = fn(a.astype(np.float32), b.astype(np.float32)).astype(dtype)
        same_values(got, want)


# Shapes that the pool cuts along the last dimension at odd places, along
# the first, or both; operands broadcast by row, column and scalar.
SPLIT_SHAPES = [(3, 100003), (1, 300007), (257, 1031), (5, 7, 7507)]


@pytest.mark.parametrize("shape", SPLIT_SHAPES, ids=str)
def test_split_elementwise_matches_numpy(tmp_path, shape):
    a = RNG.standard_normal(shape).astype(np.float32)
    b = RNG.standard_normal(shape).astype(np.float32)
    row = RNG.standard_normal(shape[-1:]).astype(np.float32)
    col = RNG.standard_normal(shape[:-1] + (1,)).astype(np.float32)
    i = RNG.integers(-2**31, 2**31 - 1, shape, dtype=np.int32)
    j = RNG.integers(-2**31, 2**31 - 1, shape, dtype=np.int32)
    c = a > 0
    cases = [
        (lambda x, y: x + y, a, b),
        (lambda x, y: x * y, a, row),
        (lambda x, y: np.maximum(x, y), col, a),
        (lambda x: x * np.float32(3.0), a),
        (lambda x, y: x < y, a, row),
        (lambda x, y: x * y, i, j),  # int32 wraps
        (lambda x, y: x ^ y, i, j),
        (lambda x: x.astype(ml_dtypes.bfloat16), a),
        (np.floor, a),
        (lambda k, x, y: np.where(k, x, y), c, a, b),
    ]
    for fn, *args in cases:
        got = run_compiled(tmp_path, fn, *args)
        want = np.asarray(fn(*args))
        np.testing.assert_array_equal(bits(got), bits(want.astype(got.dtype)))


@pytest.mark.parametrize("shape", [(3, 100003), (7, 40009)], ids=str)
def test_split_pow_matches_rows(tmp_path, shape):
    """pow takes another path for a one-element exponent: no piece of a
    big op may reach the kernel as one element where the whole did not."""
    a = RNG.uniform(0.5, 2.0, shape).astype(np.float32)
    b = RNG.uniform(-3.0, 3.0, shape).astype(np.float32)
    b[:, ::7] = 3.0
    got = run_compiled(tmp_path, np.power, a, b)
    rows = np.stack([run_compiled(tmp_path, np.power, a[r], b[r]) for r in range(shape[0])])
    np.testing.assert_array_equal(bits(got), bits(rows))


LAYOUT_DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, FP8[0], np.int32]


@pytest.mark.parametrize("dtype", LAYOUT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_split_layout_matches_numpy(tmp_path, dtype):
    a = RNG.integers(0, 100, (1031, 2053)).astype(np.float32).astype(dtype)
    b = RNG.integers(0, 100, (1031, 411)).astype(np.float32).astype(dtype)
    r = RNG.integers(0, 100, (1, 600011)).astype(np.float32).astype(dtype)
    cases = [
        (lambda x: x.T, a),
        (lambda x: x[1:, ::2], a),
        (lambda x: x[::3, 5:], a),
        (lambda x: x.reshape(2053, 1031), a),
        (lambda x: np.broadcast_to(x[:, :1031], (1031, 1031)), a[:1]),
        (lambda x, y: np.concatenate([x, y], axis=1), a, b),
        (lambda x, y: np.concatenate([x.T, y.T], axis=0), a, b),
        (lambda x: np.concatenate([x, x]), r),
        (lambda x: np.broadcast_to(x, (3, 600011)), r),
    ]
    for fn, *args in cases:
        got = run_compiled(tmp_path, fn, *args)
        np.testing.assert_array_equal(bits(got), bits(np.asarray(fn(*args))))


def test_fp8_transpose_by_squares_of_lines(tmp_path):
    """1-byte transposes whose rows are whole cache lines apart go by 64 x
    64 squares with AVX-512 (kernel_transpose.c), the rest of the plane by
    the 16 x 32 blocks: planes of whole squares, of squares and edges
    (strides of 64 bytes, extents not), on the pool and not; large planes
    of whole squares by bands of rows, streamed."""
    dtype = FP8[0]
    a = RNG.integers(0, 256, (512, 320), dtype=np.uint8).view(dtype)
    b = RNG.integers(0, 256, (300, 64, 170), dtype=np.uint8).view(dtype)
    c = RNG.integers(0, 256, (2048, 2048), dtype=np.uint8).view(dtype)
    d = RNG.integers(0, 256, (1024, 4096), dtype=np.uint8).view(dtype)
    cases = [
        (lambda x: x.T, a),
        (lambda x: np.transpose(x, (2, 1, 0)), b),
        (lambda x: np.transpose(x, (1, 2, 0)), b),
        (lambda x: x.T, c),
        (lambda x: x.T, d),
    ]
    for fn, x in cases:
        got = run_compiled(tmp_path, fn, x)
        np.testing.assert_array_equal(bits(got), bits(np.asarray(fn(x))))


@pytest.mark.parametrize("dtype", FP8, ids=lambda d: np.dtype(d).name)
def test_fp8_where_every_code(tmp_path, dtype):
    codes = np.arange(256, dtype=np.uint8).view(dtype).reshape(16, 16)
    x = np.tile(codes, (16, 16))
    y = np.ascontiguousarray(x.T)
    c = RNG.random(x.shape) > 0.5
    got = run_compiled(tmp_path, np.where, c, x, y)  # 65536: the table
    small = np.concatenate([run_compiled(tmp_path, np.where, c[i:i + 8], x[i:i + 8],
                                y[i:i + 8]) for i in range(0, 256, 8)])
    np.testing.assert_array_equal(bits(got), bits(small))
    same_values(got, np.where(c, x, y))



MATMUL_ONE_CPU = """
import os, sys
import ml_dtypes
import numpy as np
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from support import run_compiled
def bits(x):
    return np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}")
dt = np.dtype(getattr(ml_dtypes, sys.argv[2], None) or sys.argv[2])
a, b = (np.load(f).view(dt) for f in sys.argv[3:5])
np.save(sys.argv[5], bits(run_compiled(Path(sys.argv[6]), np.matmul, a, b)))
"""


@pytest.mark.parametrize("shape", [(300, 500, 520), (1, 2050, 4100)])
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_matmul_on_the_pool_is_the_one_thread_product(tmp_path, dtype, shape):
    """A product split between the pool's threads (by columns of C; a
    vector x matrix product by bands of rows too, summed in order) has the
    bits of the same product in a child process pinned to one CPU (the
    pool then has no worker: one task), and NumPy's values."""
    import os
    import subprocess
    import sys

    m, k, n = shape
    a = RNG.uniform(-1, 1, (m, k)).astype(dtype)
    b = RNG.uniform(-1, 1, (k, n)).astype(dtype)
    got = run_compiled(tmp_path, np.matmul, a, b)
    np.save(tmp_path / "a.npy", bits(a))
    np.save(tmp_path / "b.npy", bits(b))
    (tmp_path / "one").mkdir()
    subprocess.run([sys.executable, "-c", MATMUL_ONE_CPU, os.path.dirname(__file__),
                    np.dtype(dtype).name, tmp_path / "a.npy", tmp_path / "b.npy",
                    tmp_path / "one.npy", tmp_path / "one"], check=True,
                   env=child_env(NRTPY_EMU_NAMESPACE=namespace("pool-one")))
    np.testing.assert_array_equal(bits(got), np.load(tmp_path / "one.npy"))
    # (einsum's own loop, not OpenBLAS's threads: this test also runs in
    # .ci/run's ThreadSanitizer selection, where their uninstrumented
    # memset and NumPy's copy of the result read as a race)
    want = np.einsum("ik,kj->ij", a.astype(np.float64), b.astype(np.float64),
                     optimize=False)
    # bfloat16: the result rounded; the error grows with the depth
    tol = (1e-4 if dtype is np.float32 else 0.1) * (k / 500) ** 0.5
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol)


WORKERS_PLACED = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import numpy as np
from support import run_compiled
allowed = sorted(os.sched_getaffinity(0))
a = np.ones((300, 500), np.float32)
b = np.ones((500, 520), np.float32)
run_compiled(Path(sys.argv[2]) / "wide", np.matmul, a, b)  # starts the pool
pinned = allowed[-1]
os.sched_setaffinity(0, {pinned})  # this thread only
got = run_compiled(Path(sys.argv[2]) / "pinned", np.matmul, a, b)
assert (got == 500).all()
me = os.getpid()
workers = []
for tid in os.listdir(f"/proc/{me}/task"):
    if int(tid) == me:
        continue
    with open(f"/proc/{me}/task/{tid}/status") as f:
        line = next(l for l in f if l.startswith("Cpus_allowed_list:"))
    cpus = set()
    for part in line.split(":")[1].strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    workers.append(sorted(cpus))
print(json.dumps({"allowed": allowed, "pinned": pinned, "threads": workers}))
"""


def test_pool_workers_are_kept_off_the_callers_cpu(tmp_path):
    """The caller narrows its workers' affinity to the CPUs other than its
    own before it wakes them: woken on the caller's busy CPU they would wait
    for the caller's share to end (a product's halves one after the other).
    A child process whose main thread moves to its last CPU after the pool
    started finds every worker allowed on the rest and not on that one."""
    import json
    import os
    import subprocess
    import sys

    for d in ("wide", "pinned"):
        (tmp_path / d).mkdir()
    done = subprocess.run([sys.executable, "-c", WORKERS_PLACED,
                           os.path.dirname(__file__), tmp_path],
                          check=True, capture_output=True, text=True,
                          env=child_env(OPENBLAS_NUM_THREADS="1",
                                        NRTPY_EMU_NAMESPACE=namespace("pool-place")))
    seen = json.loads(done.stdout)
    others = sorted(set(seen["allowed"]) - {seen["pinned"]})
    if not others:  # one CPU: the pool has no worker
        assert seen["threads"] == [], seen
        return
    placed = [t for t in seen["threads"] if t == others]
    assert len(placed) == min(len(seen["allowed"]), 64) - 1, seen
