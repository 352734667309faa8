"""Elementwise fusion: a fused chain against the same ops run one by one,
against NumPy, and against this machine's memcpy bandwidth.

Each expression (a layer-norm tail and a GELU written with NumPy
operators) is compiled with nrtpy.neff.compile and loaded twice: with
fusion (the default) and with NRTPY_EMU_FUSION=0.  Both run on the same
2048x2048 input with preallocated outputs, float32 and bfloat16; their
results must be bit for bit equal.  NumPy evaluates the same expression
in the same run (bfloat16 through ml_dtypes).  Figures are the best of
alternating phases after warm-up (the best, not the median: on a machine
shared with other work it is the figure that repeats).  Printed per case: time per execution
fused and unfused, NumPy's, NumPy time / fused time (above 1 = faster
than NumPy), and the bandwidth of the fused run for the bytes a single
pass must move (inputs read once, output written once) as a fraction of
memcpy's (read + written).

Usage: python bench/bench_fusion.py [--quick] [--size N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import ml_dtypes
import numpy as np

import nrtpy
import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor

from _bench import Memcpy, per_call

BF16 = np.dtype(ml_dtypes.bfloat16)


def gelu(x):
    c = np.asarray(0.7978845608, x.dtype)
    k = np.asarray(0.044715, x.dtype)
    return np.asarray(0.5, x.dtype) * x * (np.asarray(1, x.dtype) + np.tanh(c * (x + k * x * x * x)))


def layernorm_tail(x, mu, rstd, g, b):
    # What follows the two reductions of a layer norm: normalise, scale, shift.
    return (x - mu) * rstd * g + b


def bias_gelu(x, b):
    return gelu(x + b)


def layernorm(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = np.mean(d * d, axis=-1, keepdims=True)
    return d / np.sqrt(var + np.asarray(1e-5, x.dtype)) * g + b


def inputs_for(name, n, dtype, rng):
    x = rng.standard_normal((n, n)).astype(dtype)
    if name == "gelu":
        return [x]
    if name == "bias + gelu":
        return [x, rng.standard_normal(n).astype(dtype)]
    if name == "layernorm":
        return [x, rng.standard_normal(n).astype(dtype),
                rng.standard_normal(n).astype(dtype)]
    mu = x.astype(np.float32).mean(axis=1, keepdims=True).astype(dtype)
    rstd = (1 / x.astype(np.float32).std(axis=1, keepdims=True)).astype(dtype)
    return [x, mu, rstd, rng.standard_normal(n).astype(dtype),
            rng.standard_normal(n).astype(dtype)]


CASES = [("gelu", gelu), ("bias + gelu", bias_gelu),
         ("layernorm tail", layernorm_tail), ("layernorm", layernorm)]


def loaded(path, arrays, fusion):
    os.environ["NRTPY_EMU_FUSION"] = "1" if fusion else "0"
    try:
        model = NrtpyModel.load_from_neff(path)
    finally:
        del os.environ["NRTPY_EMU_FUSION"]
    ins = {k: NrtpyTensor.from_numpy(a, name=k)
           for k, a in zip(model.input_tensors_info, arrays)}
    outs = {t.name: t for t in model.allocate_output_tensors()}
    rt = nrtpy.get_nrtpy_singleton()
    in_refs = {k: v.tensor_ref for k, v in ins.items()}
    out_refs = {k: v.tensor_ref for k, v in outs.items()}

    def run():
        rt.execute(model.model_ref, in_refs, out_refs)

    return model, outs, run


def timed(fns, phases):
    """Median seconds per call of each callable, in alternating phases."""
    for fn in fns:
        fn()
    t0 = time.perf_counter()
    for fn in fns:
        fn()
    number = max(1, min(50, int(0.2 / max(time.perf_counter() - t0, 1e-7))))
    times = [[] for _ in fns]
    for _ in range(phases):
        for t, fn in zip(times, fns):
            t.append(per_call(fn, number))
    return [min(t) for t in times]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size", type=int, default=2048)
    args = ap.parse_args()
    phases = 3 if args.quick else 7
    n = args.size
    work = Path(tempfile.mkdtemp(prefix="nrtpy-bench-"))
    rng = np.random.default_rng(0)
    memcpy = Memcpy().measure(phases)
    print(f"# Elementwise fusion, {n}x{n}; memcpy {memcpy / 1e9:.1f} GB/s "
          f"(read + written)\n")
    print("| chain | dtype | ops | fused ms | unfused ms | NumPy ms | "
          "unfused/fused | NumPy/fused | fused of memcpy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, fn in CASES:
        for dtype in (np.dtype(np.float32), BF16):
            arrays = inputs_for(name, n, dtype, rng)
            path = nrtpy.neff.compile(fn, *arrays,
                                      path=work / f"{name.replace(' ', '_')}_{dtype}.neff")
            fused, f_outs, f_run = loaded(path, arrays, True)
            plain, p_outs, p_run = loaded(path, arrays, False)
            f_run(), p_run()
            got = next(iter(f_outs.values())).numpy()
            want = next(iter(p_outs.values())).numpy()
            if got.tobytes() != want.tobytes():
                print(f"{name} {dtype}: fused and unfused results differ",
                      file=sys.stderr)
                return 1
            t_f, t_p, t_np = timed([f_run, p_run, lambda: fn(*arrays)], phases)
            nbytes = sum(a.nbytes for a in arrays) + got.nbytes
            print(f"| {name} | {dtype} | {n_ops(path)} | {t_f * 1e3:.2f} | "
                  f"{t_p * 1e3:.2f} | {t_np * 1e3:.2f} | {t_p / t_f:.2f} | "
                  f"{t_np / t_f:.2f} | {nbytes / t_f / memcpy:.0%} |")
            del fused, plain
    return 0


def n_ops(path) -> int:
    """Ops in the program of a NEFF this script wrote."""
    import json
    import tarfile
    import gzip
    import io
    data = Path(path).read_bytes()[1024:]
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        return len(json.load(tar.extractfile("sg00/program.json"))["ops"])


if __name__ == "__main__":
    sys.exit(main())
