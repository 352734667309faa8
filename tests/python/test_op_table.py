"""The op table as Python reads it (_nrtpy.OPS, generated from the
emulator's NRTEMU_OP_LIST): what the tracer, the HLO compiler, the
benchmarks and the fuzz dictionary say of ops is the table's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from nrtpy import _nrtpy
from nrtpy.hlo import _lower_control, _lower_ops
from nrtpy.neff import _trace

ROOT = Path(__file__).resolve().parents[2]
OPS = _nrtpy.OPS


def test_rows_are_well_formed():
    assert len(OPS) >= 80
    families = {None, "unary", "binary", "compare", "logical", "where",
                "convert", "bitwise", "test"}
    for name, row in OPS.items():
        assert set(row) == {"arity", "family", "attrs", "float_only",
                            "streams", "control"}, name
        assert row["family"] in families, (name, row["family"])
        assert row["arity"] >= -1, name
        assert isinstance(row["attrs"], tuple), name
        # Elementwise families stream; control ops have nested lists.
        if row["family"] is not None:
            assert row["streams"] and not row["control"], name
        if row["control"]:
            assert row["attrs"], name


def test_foreign_names_map_onto_rows():
    # The tables that map NumPy ufuncs and HLO opcodes onto ops name rows
    # of the table, and nothing else.
    for table in (_trace._UNARY, _trace._BINARY, _trace._INT_BITWISE,
                  _lower_ops._UNARY, _lower_ops._BINARY,
                  _lower_ops._BOOL_BINARY, _lower_ops._INT_BINARY):
        for foreign, op in table.items():
            assert op in OPS, (foreign, op)
    # An ufunc's arity is its row's.
    for ufunc, op in {**_trace._UNARY, **_trace._BINARY}.items():
        assert OPS[op]["arity"] == ufunc.nin, (ufunc, op)


def test_float_only_is_the_tables():
    want = {h for h, op in _lower_ops._UNARY.items() if OPS[op]["float_only"]}
    assert _lower_ops._FLOAT_ONLY == want
    assert {"exponential", "log", "sine"} <= want
    assert not want & {"negate", "abs", "floor"}


def test_collective_reductions_are_ops_kinds():
    assert set(_lower_control._COLLECTIVE_REDUCE.values()) <= {"sum", "max", "min"}
    for kind in ("sum", "max", "min", "prod"):
        assert kind in OPS  # the reductions the collectives' kinds name


def test_fuzz_dictionary_has_every_word_of_the_tables():
    words = {line.strip().strip('"').strip('\\"').replace('\\"', "")
             for line in (ROOT / "tests" / "fuzz" / "program.dict").read_text().splitlines()
             if line.startswith('"')}
    attrs = {a for row in OPS.values() for a in row["attrs"]}
    dtypes = set(_nrtpy.DTYPES) - {"unknown"}
    missing = (set(OPS) | attrs | dtypes) - words
    assert not missing, f"program.dict lacks {sorted(missing)}: run " \
                        f"tests/fuzz/make_program_corpus.py --dict"


def test_bench_ops_has_a_case_for_every_row(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("bench_ops",
                                                  ROOT / "bench" / "bench_ops.py")
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_ops", bench)  # (its dataclasses)
    spec.loader.exec_module(bench)
    names, source = bench.table_ops()
    assert names == list(OPS) and source == "nrtpy._nrtpy.OPS"
    covered = {c.op for c in bench.CASES}
    assert not set(OPS) - covered, sorted(set(OPS) - covered)
    assert all(c.op in OPS for c in bench.CASES)
