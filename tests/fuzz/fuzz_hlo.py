#!/usr/bin/env python3
"""Fuzz the HLO compiler: mutated HloModuleProtos through compile_hlo, and
the NEFFs it writes through the emulator.

    python tests/fuzz/fuzz_hlo.py SECONDS [CORPUS_DIR] [ARTIFACT_DIR]

Each input is a module of the seed corpus (tests/fuzz/corpus/hlo, made by
make_hlo_corpus.py) mutated at random, deterministically (a fixed seed):
bytes flipped, inserted, deleted or truncated, or, through a decoding of
the protobuf wire format, a field of some nested message dropped,
duplicated, given another varint, or replaced by a length-delimited field
taken from anywhere in the corpus (an opcode, a shape, a whole
instruction), with every enclosing length rewritten.  compile_hlo may
refuse an input only with ValueError (malformed) or NotImplementedError
(a form the emulator lacks); a NEFF it writes must load, and when small,
run on zeros, failing only with NrtError.  Anything else, or an input
running past 10 s, saves the input as hlo-crash-N.pb in ARTIFACT_DIR
(default tests/fuzz/out) and exits 1.  A crash of the process itself
leaves the input being run in ARTIFACT_DIR/hlo-current.pb.
"""

from __future__ import annotations

import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

import nrtpy
import nrtpy.neff
from nrtpy.hlo._wire import read_varint

SEED = 0x5EED
PER_INPUT_SECONDS = 10
MAX_RUN_BYTES = 16 << 20  # inputs, outputs: larger NEFFs are only loaded
INTERESTING = [0, 1, 2, 3, 7, 8, 63, 64, 127, 255, 1 << 31, (1 << 32) - 1,
               (1 << 63) - 1, (1 << 64) - 1]


# -- the protobuf wire format, enough to rewrite nested messages ----------
def _enc_varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)


def decode(data: bytes) -> list[list] | None:
    """The fields of ``data`` as [number, wire type, value] (value: an int,
    bytes, or for a length-delimited field that parses as a message, that
    message's list), or None when ``data`` is not a message."""
    fields, pos = [], 0
    try:
        while pos < len(data):
            k, pos = read_varint(data, pos, len(data))
            num, wire = k >> 3, k & 7
            if num == 0:
                return None
            if wire == 0:
                v, pos = read_varint(data, pos, len(data))
            elif wire == 1 or wire == 5:
                n = 8 if wire == 1 else 4
                if pos + n > len(data):
                    return None
                v, pos = data[pos:pos + n], pos + n
            elif wire == 2:
                n, pos = read_varint(data, pos, len(data))
                if pos + n > len(data):
                    return None
                raw, pos = data[pos:pos + n], pos + n
                sub = decode(raw) if raw else None
                v = sub if sub else raw
            else:
                return None
            fields.append([num, wire, v])
    except ValueError:
        return None
    return fields


def encode(fields: list[list]) -> bytes:
    out = bytearray()
    for num, wire, v in fields:
        out += _enc_varint(num << 3 | wire)
        if wire == 0:
            out += _enc_varint(v)
        elif wire == 2:
            raw = encode(v) if isinstance(v, list) else v
            out += _enc_varint(len(raw)) + raw
        else:
            out += v
    return bytes(out)


def _messages(fields: list[list], found: list[list[list]]) -> None:
    found.append(fields)
    for f in fields:
        if isinstance(f[2], list):
            _messages(f[2], found)


def _pieces(fields: list[list], found: list[list]) -> None:
    for f in fields:
        if f[1] == 2:
            found.append(f)
            if isinstance(f[2], list):
                _pieces(f[2], found)


# -- mutations ------------------------------------------------------------
def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(5)
        i = rng.randrange(len(b)) if b else 0
        if kind == 0 and b:
            b[i] ^= 1 << rng.randrange(8)
        elif kind == 1 and b:
            b[i] = rng.choice([0, 1, 0x7F, 0x80, 0xFF])
        elif kind == 2:
            b.insert(i, rng.randrange(256))
        elif kind == 3 and b:
            del b[i:i + rng.randint(1, 4)]
        elif kind == 4 and b:
            del b[rng.randrange(len(b)):]
    return bytes(b)


def mutate_fields(rng: random.Random, data: bytes, pieces: list[list]) -> bytes:
    tree = decode(data)
    if not tree:
        return mutate_bytes(rng, data)
    messages: list[list[list]] = []
    _messages(tree, messages)
    for _ in range(rng.randint(1, 3)):
        msg = rng.choice(messages)
        if not msg:
            continue
        i = rng.randrange(len(msg))
        kind = rng.randrange(4)
        if kind == 0:
            del msg[i]
        elif kind == 1:
            msg.insert(i, list(msg[i]))
        elif kind == 2 and msg[i][1] == 0:
            msg[i][2] = rng.choice(INTERESTING + [msg[i][2] + 1, msg[i][2] - 1])
        else:
            donor = rng.choice(pieces)
            msg[i] = [msg[i][0] if rng.randrange(2) else donor[0], 2, donor[2]]
    return encode(tree)


# -- the target -----------------------------------------------------------
class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"input ran past {PER_INPUT_SECONDS} s")


def run_one(data: bytes, work: Path) -> None:
    """Compile ``data``; load and run what compiles.  Raises only what
    the fuzzer counts as a fault."""
    neff = work / "m.neff"
    try:
        nrtpy.neff.compile_hlo(data, neff)
    except (ValueError, NotImplementedError):
        return
    try:
        model = nrtpy.NrtpyModel.load_from_neff(neff)
        infos = [*model.input_tensors_info.values(),
                 *model.output_tensors_info.values()]
        size = sum(int(np.prod(i.shape)) * 16 for i in infos)
        if size <= MAX_RUN_BYTES:
            inputs = {n: nrtpy.NrtpyTensor.from_numpy(
                np.zeros(tuple(i.shape), nrtpy._dtypes.to_numpy(i.dtype)), name=n)
                for n, i in model.input_tensors_info.items()}
            model(inputs=inputs)
    except nrtpy.NrtError:
        pass
    finally:
        neff.unlink(missing_ok=True)


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    here = Path(__file__).resolve().parent
    corpus_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else here / "corpus" / "hlo"
    out = Path(sys.argv[3]) if len(sys.argv) > 3 else here / "out"
    out.mkdir(parents=True, exist_ok=True)
    corpus = [p.read_bytes() for p in sorted(corpus_dir.glob("*.pb"))]
    if not corpus:
        print(f"fuzz_hlo: no .pb files in {corpus_dir}", file=sys.stderr)
        return 2
    pieces: list[list] = []
    for data in corpus:
        _pieces(decode(data) or [], pieces)
    rng = random.Random(SEED)
    signal.signal(signal.SIGALRM, _alarm)
    current = out / "hlo-current.pb"
    execs, compiled = 0, 0
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fuzz-hlo-") as tmp:
        work = Path(tmp)
        inputs = iter(corpus)  # the corpus itself first, then mutants
        while True:
            data = next(inputs, None)
            if data is None:
                if time.monotonic() - start >= seconds:
                    break
                seed = rng.choice(corpus)
                data = (mutate_fields(rng, seed, pieces) if rng.randrange(3)
                        else mutate_bytes(rng, seed))
            current.write_bytes(data)
            signal.alarm(PER_INPUT_SECONDS)
            try:
                run_one(data, work)
            except BaseException as exc:  # noqa: BLE001 (every other one is a fault)
                signal.alarm(0)
                if isinstance(exc, KeyboardInterrupt):
                    raise
                crash = out / f"hlo-crash-{execs}.pb"
                crash.write_bytes(data)
                traceback.print_exc()
                print(f"fuzz_hlo: {type(exc).__name__} on input {execs}; "
                      f"saved to {crash}", file=sys.stderr)
                return 1
            signal.alarm(0)
            execs += 1
            compiled += (work / "m.neff").exists()
    current.unlink(missing_ok=True)
    print(f"fuzz_hlo: {execs} inputs over {len(corpus)} corpus modules in "
          f"{time.monotonic() - start:.0f} s, no fault")
    return 0


if __name__ == "__main__":
    sys.exit(main())
