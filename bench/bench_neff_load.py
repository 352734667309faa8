"""NEFF load time against reading the file, for many constants and for a
large NEFF.

Each NEFF holds a chain of additions over N float32 constants (N = 1k to
100k; one `var` entry, one .npy member and one program buffer each), or a
few constants of 1 GiB in all.  For each, the run reports the time of
NrtpyModel.load_from_neff (median of a few loads, after one warm-up load)
and the time to read the same file into memory (the page cache is warm
for both), and their ratio.  Load time should grow linearly with N: the
"per constant" column should stay flat.

Usage: python bench/bench_neff_load.py [--quick] [--big-mib MIB]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from nrtpy import NrtpyModel
from nrtpy.neff import _container


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def chain_neff(path: Path, consts: list[np.ndarray], *, gzip: bool = True) -> Path:
    """x + c0 + c1 + ... as an emulator NEFF, written directly (tracing
    100k operations would dominate the benchmark's own run time)."""
    shape = list(consts[0].shape)
    size = consts[0].nbytes
    var = {"x": {"type": "input", "size": size, "shape": shape, "dtype": "float32"},
           "output_0": {"type": "output", "size": size, "shape": shape,
                        "dtype": "float32"}}
    buffers = {"x": {"kind": "input", "dtype": "float32", "shape": shape}}
    ops = []
    files = {}
    prev = "x"
    for i, c in enumerate(consts):
        name = f"const.{i}"
        var[name] = {"type": "file", "file_name": f"{name}.npy", "size": c.nbytes}
        buffers[name] = {"kind": "const", "dtype": "float32", "shape": shape,
                         "var": name}
        out = "output_0" if i == len(consts) - 1 else f"tmp.{i}"
        if out != "output_0":
            buffers[out] = {"kind": "temp", "dtype": "float32", "shape": shape}
        ops.append({"op": "add", "in": [prev, name], "out": out})
        files[f"sg00/{name}.npy"] = npy_bytes(c)
        prev = out
    buffers["output_0"] = {"kind": "output", "dtype": "float32", "shape": shape}
    files["neff.json"] = json.dumps({"name": path.stem, "subgraphs": ["sg00"]}).encode()
    files["sg00/def.json"] = json.dumps({"var": var,
                                         "emulator_program": "program.json"}).encode()
    files["sg00/program.json"] = json.dumps({
        "format": "nrtpy-emulator-program", "version": 1,
        "buffers": buffers, "ops": ops}).encode()
    return _container.write(path, files, name=path.stem, compress=gzip)


def read_seconds(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        f.read()
    return time.perf_counter() - t0


def load_seconds(path: Path) -> float:
    t0 = time.perf_counter()
    model = NrtpyModel.load_from_neff(path)
    dt = time.perf_counter() - t0
    del model
    return dt


def measure(path: Path, repeats: int) -> tuple[float, float]:
    load_seconds(path)  # warm-up: page cache, allocator
    read_seconds(path)
    loads, reads = [], []
    for _ in range(repeats):
        reads.append(read_seconds(path))
        loads.append(load_seconds(path))
    return statistics.median(loads), statistics.median(reads)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer and smaller NEFFs")
    parser.add_argument("--big-mib", type=int, default=1024,
                        help="size of the large NEFF's constants (default 1024)")
    args = parser.parse_args()
    counts = [1000, 10000] if args.quick else [1000, 10000, 40000, 100000]
    repeats = 3
    print(f"{'NEFF':>28} {'file MiB':>9} {'load s':>8} {'read s':>8} "
          f"{'load/read':>9} {'per constant':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            print(f"writing {n} constants ...", end="\r", file=sys.stderr, flush=True)
            consts = [np.full(4, i, np.float32) for i in range(n)]
            path = chain_neff(Path(tmp) / f"c{n}.neff", consts)
            load, read = measure(path, repeats)
            print(f"{f'{n} constants of 16 B':>28} "
                  f"{os.path.getsize(path) / 2**20:9.1f} {load:8.3f} {read:8.4f} "
                  f"{load / read:9.0f} {load / n * 1e6:10.1f} us")
            os.unlink(path)
        big = args.big_mib // 4 if args.quick else args.big_mib
        elems = big * 2**20 // 4 // 4
        print(f"writing {big} MiB of constants ...", end="\r", file=sys.stderr,
              flush=True)
        rng = np.random.default_rng(0)
        consts = [rng.standard_normal(elems, dtype=np.float32) for _ in range(4)]
        path = chain_neff(Path(tmp) / "big.neff", consts, gzip=False)
        del consts
        load, read = measure(path, repeats)
        print(f"{f'4 constants, {big} MiB':>28} "
              f"{os.path.getsize(path) / 2**20:9.1f} {load:8.3f} {read:8.4f} "
              f"{load / read:9.1f} {'':>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
