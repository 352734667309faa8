"""``nrtpy-cc --print-nki`` (``nrtpy.hlo.print_nki``): an HLO module printed
as NKI source.  Each printed kernel is imported as it is written (``import
nki``, from a ``compat install`` into a folder of this module's) and run
through nrtpy.nki on the emulated device; its results must be the NEFF's
that ``compile_hlo`` makes of the same module: exactly for element-wise
work, to a float tolerance where a reduction or a dot sums in another
order.  The NEFF was checked against XLA by the test_hlo_* files."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from hlo_support import F32, computation, f_int, from_neff_io, instr, jax, jnp, \
    module, run_neff, shape
import nrtpy.neff
from nrtpy import cc
from nrtpy.hlo import NkiPrintError, print_nki

RNG = np.random.default_rng(7)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def i32(*shape):
    return RNG.integers(-50, 50, shape).astype(np.int32)


@pytest.fixture(scope="module")
def nki_import(tmp_path_factory):
    """``import nki`` for the printed kernels: the compat layer installed
    into a folder put on sys.path for this module's tests only."""
    target = tmp_path_factory.mktemp("compat")
    done = subprocess.run([sys.executable, "-m", "nrtpy", "compat", "install",
                           "--target", str(target)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(target))
    yield
    sys.path.remove(str(target))
    for name in [n for n in sys.modules if n == "nki" or n.startswith("nki.")]:
        del sys.modules[name]


def import_source(path):
    spec = importlib.util.spec_from_file_location(f"printed_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernel_argument(a):
    """The kernel takes a 0-d array as shape (1,), as the NEFF does."""
    return np.asarray(a).reshape(1) if np.ndim(a) == 0 else np.asarray(a)


def print_and_run(fn, args, tmp_path):
    """(printed source, the kernel's results, the NEFF's results)."""
    lowered = jax.jit(fn).lower(*args)
    source = print_nki(lowered)
    path = tmp_path / "nki.py"
    path.write_text(source)
    got = import_source(path).kernel(*[kernel_argument(a) for a in args])
    got = list(got) if isinstance(got, tuple) else [got]
    neff = nrtpy.neff.compile_hlo(lowered, tmp_path / "module.neff")
    info = nrtpy.neff.inspect(neff)
    names = [i["name"] for i in info["inputs"]]
    outs = run_neff(neff, dict(zip(names, [kernel_argument(a) for a in args])))
    want = [outs[o["name"]] for o in info["outputs"]]
    return source, got, want


# name, function, arguments, tolerance (0: the same bits as the NEFF; else
# relative and absolute: a dot of K terms of about 1 differs by about
# K * 2**-24 in each sum)
CASES = [
    ("elementwise_chain", lambda x, y: jnp.tanh(x + y) * 2.0 - jnp.exp(-x),
     (f32(300, 200), f32(300, 200)), 0),
    ("row_broadcast_ragged_columns", lambda x, b: jnp.maximum(x + b, 0.0),
     (f32(300, 700), f32(700)), 0),
    ("column_broadcast", lambda x: x - jnp.max(x, axis=1, keepdims=True),
     (f32(130, 600),), 0),
    ("softmax_rank3", lambda x: jax.nn.softmax(x, axis=-1), (f32(4, 50, 33),), 1e-6),
    ("rms_norm", lambda x, w: x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True)
                                                + 1e-6) * w,
     (f32(257, 96), f32(96)), 1e-6),
    ("sum_of_everything", lambda x: jnp.sum(x), (f32(20, 1030),), 1e-5),
    ("reduce_min_int", lambda x: jnp.min(x, axis=-1), (i32(140, 9),), 0),
    ("reduce_with_an_init_value",
     lambda x: jax.lax.reduce(x, np.float32(5.0), jax.lax.add, (1, 2)),
     (f32(3, 40, 30),), 1e-5),
    ("matmul_ragged", lambda a, b: a @ b, (f32(200, 300), f32(300, 600)), 1e-4),
    ("matmul_bfloat16", lambda a, b: a @ b,
     (f32(130, 70).astype(jnp.bfloat16), f32(70, 20).astype(jnp.bfloat16)), 1e-2),
    ("matmul_transposed_rhs", lambda a, b: a @ b.T, (f32(64, 130), f32(70, 130)), 1e-4),
    ("matmul_batched", lambda a, b: jnp.einsum("bmk,bkn->bmn", a, b),
     (f32(3, 20, 30), f32(3, 30, 40)), 1e-4),
    ("matvec", lambda a, v: a @ v, (f32(20, 30), f32(30)), 1e-4),
    ("mlp", lambda x, w1, b1, w2: jax.nn.relu(x @ w1 + b1) @ w2,
     (f32(150, 64), f32(64, 200), f32(200), f32(200, 10)), 1e-4),
    ("transpose_2d", lambda a: a.T, (f32(200, 130),), 0),
    ("transpose_3d", lambda a: jnp.transpose(a, (1, 0, 2)) * 3.0, (f32(3, 4, 5),), 0),
    ("reshape_chain", lambda a: (a.reshape(6, 10) * 2).reshape(60) + 1, (f32(3, 20),), 0),
    ("broadcast_middle", lambda a: jnp.broadcast_to(a[:, None, :], (4, 3, 5)) + 1,
     (f32(4, 5),), 0),
    ("where_and_compare", lambda a, b: jnp.where(a > b, a, b * 3), (f32(5, 7), f32(5, 7)), 0),
    ("compare_result_pred", lambda a, b: a >= b, (f32(129, 7), f32(129, 7)), 0),
    ("clip", lambda a: jnp.clip(a, -0.5, 0.5), (f32(4, 5),), 0),
    ("convert_to_int", lambda a: (a * 10).astype(jnp.int32), (f32(5, 7),), 0),
    ("bfloat16", lambda a: (a.astype(jnp.bfloat16) * 3 + 1).astype(jnp.float32),
     (f32(5, 7),), 0),
    ("bitwise_int", lambda a, b: (a & b) | (a ^ 3), (i32(4, 5), i32(4, 5)), 0),
    ("constant_vector", lambda a: a * jnp.array([1.0, 2.0, 3.0, 4.0, 5.0]), (f32(4, 5),), 0),
    ("iota", lambda a: a + jnp.arange(4.0)[:, None], (f32(4, 5),), 0),
    ("scalar_parameter", lambda a, s: a * s, (f32(4, 5), np.float32(3.0)), 0),
    ("several_results", lambda a: (a * 2, jnp.zeros((3, 4)), a, a * 2),
     (f32(2, 3),), 0),
    ("one_dimensional", lambda a: jnp.sqrt(jnp.abs(a)) + jnp.sin(a), (f32(1000),), 0),
]


@pytest.mark.parametrize("name, fn, args, tol", CASES, ids=[c[0] for c in CASES])
def test_printed_kernel_matches_the_neff(nki_import, tmp_path, name, fn, args, tol):
    source, got, want = print_and_run(fn, args, tmp_path)
    assert source.startswith("import nki\n")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        w = from_neff_io(w, g) if g.dtype == np.bool_ else w
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if tol == 0:
            np.testing.assert_array_equal(g, w, strict=True)
        else:
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_two_op_module_prints_one_fused_loop_nest(tmp_path):
    x = f32(300, 200)
    source = print_nki(jax.jit(lambda a, b: jnp.exp(a) * b).lower(x, x))
    # one loop over the 3 row tiles (the last one of 44 rows), the two
    # operations on each tile, one store
    assert source.count("nl.static_range(0, 300, 128)") == 1
    assert "nr = min(128, 300 - r0)" in source
    assert source.count("nl.load(") == 2 and source.count("nl.store(") == 1
    assert "nl.exp(" in source and "nl.multiply(" in source
    compile(source, "nki.py", "exec")


def test_refused_op_names_the_instruction():
    lowered = jax.jit(lambda a: jnp.cumsum(a, axis=0)).lower(f32(4, 4))
    with pytest.raises(NkiPrintError, match=r"\(reduce-window\).*outside the subset"):
        print_nki(lowered)


@pytest.mark.parametrize("fn, args, match", [
    (lambda a: jnp.sum(a, axis=0), (f32(4, 5),), "only trailing dimensions print"),
    (lambda a, b: a @ b, (i32(4, 5), i32(5, 3)), "the tensor engine multiplies floats"),
    (lambda a, b: jax.lax.div(a, b), (i32(4, 5), i32(4, 5) | 1), "integer divide"),
    (lambda a: jnp.sort(a), (f32(4, 5),), r"\(sort\)"),
    (lambda a: jnp.argmax(a, axis=-1), (f32(4, 5),), "a reduce of 2 operands"),
])
def test_refusals(fn, args, match):
    with pytest.raises(NkiPrintError, match=match):
        print_nki(jax.jit(fn).lower(*args))


def test_names_from_the_module_cannot_change_the_code(nki_import, tmp_path):
    # Module, parameter and instruction names are the module's text: a
    # newline or quotes in them must not reach the code.
    evil = 'x"""\nimport os; os._exit(3)\n#'
    f32_23 = shape(F32, (2, 3))
    data = module(evil, [computation("main", 1, [
        instr(evil, "parameter", f32_23, 1, **{"p": f_int(9, 0)}),
        instr("class", "parameter", f32_23, 2, **{"p": f_int(9, 1)}),
        instr(evil + "2", "add", f32_23, 3, (1, 2)),
    ], 3)], 1)
    source = print_nki(data)
    assert "os._exit(3)" not in source and "\nimport os" not in source
    assert "def kernel(x____import_os__os__exit_3, class_):" in source
    path = tmp_path / "nki.py"
    path.write_text(source)
    x, y = f32(2, 3), f32(2, 3)
    np.testing.assert_array_equal(import_source(path).kernel(x, y), x + y)


# -- the command line -----------------------------------------------------------------
def write_module(path, fn, *args):
    path.write_bytes(jax.jit(fn).lower(*args).compiler_ir("hlo")
                     .as_serialized_hlo_module_proto())


def test_parse_nkipy_lower_to_nki_command():
    # what nkipy.core.compile.lower_to_nki runs (after shlex.split)
    cmd = cc.parse(["compile", "--framework", "XLA", "/w/hlo_module.pb", "--pipeline",
                    "tensorize", "SaveTemps", "--target", "trn2", "--output=file.neff",
                    "--tensorizer-options=--print-nki"])
    assert cmd.pipeline == ["tensorize", "SaveTemps"]
    assert cmd.print_nki == "nki.py"
    assert cmd.ignored == ["--target trn2"]
    assert cc.parse(["compile", "m.pb", "--print-nki=out/k.py"]).print_nki == "out/k.py"
    assert cc.parse(["compile", "m.pb", "--tensorizer-options", "--print-nki -O2"]).ignored \
        == ["--tensorizer-options=-O2"]


def test_nkipy_flags_write_nki_py_and_no_neff(nki_import, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    x = f32(2, 2)
    write_module(tmp_path / "hlo_module.pb", lambda a, b: a + b, x, x)
    assert cc.main(["compile", "--framework", "XLA", str(tmp_path / "hlo_module.pb"),
                    "--pipeline", "tensorize", "SaveTemps", "--target", "trn2",
                    "--output=file.neff", "--tensorizer-options=--print-nki"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hlo_module.pb", "nki.py"]
    assert "def kernel(" in (tmp_path / "nki.py").read_text()
    np.testing.assert_array_equal(import_source(tmp_path / "nki.py").kernel(x, x), x + x)
    assert capsys.readouterr().err.strip().endswith("--target trn2")


def test_print_nki_with_the_neff(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x = f32(3, 4)
    write_module(tmp_path / "m.pb", lambda a: a * a, x)
    assert cc.main(["compile", "--framework", "XLA", "m.pb", "--print-nki", "-o",
                    "m.neff"]) == 0
    assert (tmp_path / "m.neff").is_file()
    assert (tmp_path / "nki.py").read_text() == print_nki(tmp_path / "m.pb")


def test_refused_module_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_module(tmp_path / "m.pb", lambda a: jnp.cumsum(a, axis=0), f32(4, 4))
    assert cc.main(["compile", "--framework", "XLA", "m.pb", "--print-nki", "-o",
                    "m.neff"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--print-nki: cannot print m.pb as NKI" in err and "reduce-window" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pb"]
