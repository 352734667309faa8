"""NKI kernels on the emulated Neuron device: ``nrtpy.nki``.

The NKI 0.6 language, as ``import nki`` gives it on a Trainium instance::

    from nrtpy import nki
    import nrtpy.nki.language as nl
    import nrtpy.nki.isa as nisa

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(b)))
        return out

    c = add(a_np, b_np)            # NumPy arrays in, NumPy arrays out

A call traces the kernel once per argument signature (shapes, dtypes, the
values of non-array arguments, the SPMD grid) into an emulator program,
writes it as a NEFF (``kernel.neff`` under ``NKI_ARTIFACTS_DIR`` when that
is set before import), loads it with :class:`nrtpy.NrtpyModel` and runs it
on the emulated device, as a jitted kernel does on hardware.  The NEFF's
inputs are named after the kernel's parameters, its outputs ``output_0``,
``output_1``, ...; run-time failures are :class:`nrtpy.NrtError` with the
runtime's status (an indirect DMA out of bounds: ``NRT_EXEC_OOB``).  Rules
the Neuron compiler checks fail the trace with :class:`NkiCompileError`.

The older namespace (``neuronxcc.nki``: ``jit(mode=...)``,
``simulate_kernel``, ``baremetal``, ``benchmark``, ISA calls that return
tiles) is :mod:`nrtpy.nki.legacy`.  ``python -m nrtpy compat install``
makes both importable as ``nki`` and ``neuronxcc.nki``.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import inspect
import itertools
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

from nrtpy.nki import _core
from nrtpy.nki._core import NkiCompileError, NkiTensor

__all__ = ["jit", "simulate", "benchmark", "Kernel", "NkiCompileError", "language", "isa",
           "artifacts_dir"]

# Read at import, as the SDK's nki reads its compile options.
_ARTIFACTS_DIR = os.environ.get("NKI_ARTIFACTS_DIR") or None


def artifacts_dir() -> Path | None:
    """Where jitted kernels write ``kernel.neff`` (``NKI_ARTIFACTS_DIR`` at
    import), or None (a temporary folder, removed at exit)."""
    return Path(_ARTIFACTS_DIR) if _ARTIFACTS_DIR else None


_tmp_lock = threading.Lock()
_tmp_dir: str | None = None


def _scratch_dir() -> str:
    global _tmp_dir
    with _tmp_lock:
        if _tmp_dir is None:
            _tmp_dir = tempfile.mkdtemp(prefix="nrtpy-nki-")
            atexit.register(shutil.rmtree, _tmp_dir, True)
        return _tmp_dir


def _key_of(value: Any) -> Any:
    """The part of a signature that one argument gives."""
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype.str)
    try:
        hash(value)
        return ("value", type(value).__name__, value)
    except TypeError:
        return ("repr", type(value).__name__, repr(value))


def _grid_of(grid: Any) -> tuple[int, ...]:
    dims = grid if isinstance(grid, tuple) else (grid,)
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"an SPMD grid dimension must be an int, got "
                            f"{type(d).__name__}: {d!r:.80}")
        if d < 1:
            raise ValueError(f"an SPMD grid dimension must be at least 1, got {d}")
        out.append(int(d))
    return tuple(out)


_EXEC_OOB = 1006  # NRT_EXEC_OOB


class Compiled:
    """One traced signature of a kernel: its NEFF, loaded on first run."""

    def __init__(self, path: Path, input_names: list[str],
                 output_names: list[str], single: bool,
                 written_inputs: list[str], gathers: dict[int, tuple[int, int]],
                 simulation: bool, returned: list[str | None] | None = None) -> None:
        self.path = path
        # Per result: the argument it is (a kernel returning an argument it
        # wrote), else None.
        self.returned = returned or [None] * len(output_names)
        self.gathers = gathers
        self.simulation = simulation
        self.input_names = input_names
        self.output_names = output_names
        self.single = single
        self.written_inputs = written_inputs
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            from nrtpy import NrtpyModel
            self._model = NrtpyModel.load_from_neff(self.path, name="kernel")
        return self._model

    def _inputs(self, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        from nrtpy import NrtpyTensor
        return {name: NrtpyTensor.from_numpy(np.ascontiguousarray(arrays[name]),
                                             name=name)
                for name in self.input_names}

    def run(self, arrays: dict[str, np.ndarray]) -> Any:
        from nrtpy import NrtError
        try:
            outs = self.model(inputs=self._inputs(arrays))
        except NrtError as e:
            if e.status_code != _EXEC_OOB:
                raise
            if not self.simulation:
                raise
            # mode="simulation" reports it as the SDK's CPU simulator does:
            # an IndexError naming the element.
            raise IndexError(self._element_message(str(e))) from e
        results = [outs[name].numpy() for name in self.output_names]
        for pname in self.written_inputs:
            np.copyto(arrays[pname], outs[f"{pname}.out"].numpy())
        if self.single:
            return results[0] if results else None
        return tuple(results)

    def _element_message(self, detail: str) -> str:
        """The runtime's out-of-bounds row, as the element index NumPy (the
        SDK's simulator) reports for the flattened tensor."""
        # (a take in a loop's body is not one of those: its index counts
        # ops of the body)
        m = re.search(r"(?<!body )op (\d+) \(take\): index (-?\d+) out of bounds for "
                      r"axis 0 with size (\d+)", detail)
        if m is None or int(m.group(1)) not in self.gathers:
            return detail
        row, size = self.gathers[int(m.group(1))]
        return (f"index {int(m.group(2)) * row} is out of bounds for axis 0 "
                f"with size {size}")

    def benchmark(self, arrays: dict[str, np.ndarray], warmup: int,
                  iters: int) -> Any:
        return self.model.benchmark(self._inputs(arrays), warmup_iter=warmup,
                                    benchmark_iter=iters)


@dataclasses.dataclass(init=False, repr=False, eq=False)
class Kernel:
    """A jitted NKI kernel: call it with NumPy arrays; index it with an SPMD
    grid (``kernel[4, 2](...)``) to run that many instances.

    Its fields (``dataclasses.fields``) are what a framework integration
    copies to compile it (:mod:`nrtpy.nki.framework`); this class is
    ``nki.framework.kernel.Kernel``.
    """

    func: Callable[..., Any]
    grid: tuple[int, ...] = ()
    platform_target: str | None = None
    mode: str = "auto"

    def __init__(self, fn: Callable[..., Any], *, grid: tuple[int, ...] = (),
                 platform_target: str | None = None, mode: str = "auto",
                 options: dict[str, Any] | None = None,
                 _cache: dict | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"nki.jit needs a function, got {type(fn).__name__}")
        self.fn = self.func = fn
        self.grid = grid
        self.platform_target = platform_target
        self.mode = mode
        self.options = dict(options or {})
        self._cache: dict[Any, Compiled] = {} if _cache is None else _cache
        self.benchmark_result: Any = None
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        """(nothing to do: called by frameworks' subclasses, as on NKI's)"""

    def __repr__(self) -> str:
        return f"<nki kernel {getattr(self.fn, '__qualname__', self.fn)!r}>"

    def __getitem__(self, grid: Any) -> Kernel:
        return type(self)(self.fn, grid=_grid_of(grid), platform_target=self.platform_target,
                      mode=self.mode, options=self.options, _cache=self._cache)

    def _bind(self, args: tuple, kwargs: dict) -> inspect.BoundArguments:
        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.fn.__name__}(): {e}") from None
        bound.apply_defaults()
        return bound

    def specialize(self, *args: Any, **kwargs: Any) -> Compiled:
        """Trace and compile for these arguments (cached by signature)."""
        bound = self._bind(args, kwargs)
        tgt = _core.target(self.platform_target)
        key = (self.grid, tgt.name,
               tuple((k, _key_of(v)) for k, v in bound.arguments.items()))
        try:
            compiled = self._cache.get(key)
        except TypeError:
            compiled, key = None, None
        if compiled is None:
            compiled = self._compile(bound, tgt)
            if key is not None:
                self._cache[key] = compiled
        return compiled

    def _arrays(self, bound: inspect.BoundArguments) -> dict[str, np.ndarray]:
        return {k: v for k, v in bound.arguments.items() if isinstance(v, np.ndarray)}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _core.tracing():  # a kernel called from a kernel: inlined
            return self.fn(*args, **kwargs)
        compiled = self.specialize(*args, **kwargs)
        arrays = self._arrays(self._bind(args, kwargs))
        if self.mode == "benchmark":
            warmup = int(self.options.get("warmup", 5))
            iters = int(self.options.get("iters", 10))
            self.benchmark_result = _BenchmarkResult(
                compiled.benchmark(arrays, warmup, iters))
        return compiled.run(arrays)

    def _compile(self, bound: inspect.BoundArguments, tgt: _core.Target) -> Compiled:
        from nrtpy.neff import _attach_outputs, _write_neff

        trace = _core.Trace(tgt, self.grid)
        program = trace.program
        inputs: dict[str, NkiTensor] = {}
        call_args: dict[str, Any] = {}
        for pname, value in bound.arguments.items():
            if isinstance(value, np.ndarray):
                if value.size == 0:
                    raise ValueError(f"{self.fn.__name__}(): argument {pname!r} "
                                     f"has no elements (shape {value.shape})")
                t = program.buffer("input", value.shape, value.dtype, name=pname)
                inputs[pname] = NkiTensor(trace, t.name, t.shape, t.dtype,
                                          _core.MemoryRegion.shared_hbm,
                                          written=True, readonly=True, label=pname)
                call_args[pname] = inputs[pname]
            else:
                call_args[pname] = value
        sig = inspect.signature(self.fn)
        pos, kw = [], {}
        for pname, p in sig.parameters.items():
            if pname not in call_args:
                continue
            if p.kind == p.VAR_POSITIONAL:
                pos.extend(call_args[pname])
            elif p.kind == p.VAR_KEYWORD:
                kw.update(call_args[pname])
            elif p.kind == p.KEYWORD_ONLY:
                kw[pname] = call_args[pname]
            else:
                pos.append(call_args[pname])
        from nrtpy.nki.framework import with_implicit_memories
        fn = with_implicit_memories(self.fn)
        _core._stack.append(trace)
        try:
            result: Any = None
            for pid in itertools.product(*(range(g) for g in self.grid)):
                trace.pid = pid
                trace.shared_next = 0
                r = fn(*pos, **kw)
                if trace.loops:
                    # (its for statement never asked for the end, where
                    # the loop's op is made)
                    raise RuntimeError("nrtpy.nki: a loop the device runs "
                                       "(nl.dynamic_range with a register "
                                       "bound) was left by break or return")
                if result is None:
                    result = r
        finally:
            _core._stack.pop()
        single = not isinstance(result, (tuple, list))
        results = [] if result is None else ([result] if single else list(result))
        for r in results:
            # (an on-chip tile returned, as the older simulator allowed, is
            # copied out like an HBM tensor)
            if not isinstance(r, NkiTensor):
                raise TypeError(f"{self.fn.__name__}() must return tensors "
                                f"(nl.ndarray(..., buffer=nl.shared_hbm)), got "
                                f"{r!r:.100}")
        written = [p for p, t in inputs.items() if not t.readonly]
        if not results and not written:
            raise ValueError(f"{self.fn.__name__}() returned nothing and wrote "
                             f"no argument: the NEFF would have no outputs")
        outs = [(f"output_{i}", r.traced()) for i, r in enumerate(results)]
        outs += [(f"{p}.out", inputs[p].traced()) for p in written]
        outputs = _attach_outputs(program, outs)
        folder = artifacts_dir()
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / "kernel.neff"
        else:
            path = Path(_scratch_dir()) / f"{self.fn.__name__}-{len(self._cache)}-{id(trace):x}.neff"
        # (not gzipped: a kernel's index constants make it large, and
        # compressing them costs more than the rest of the compile)
        _write_neff(path, program, list(inputs), outputs,
                    neff_name=self.fn.__name__, generator="nrtpy.nki",
                    compress=False)
        return Compiled(path, list(inputs), [n for n, _ in outs[:len(results)]],
                        single or result is None, written, trace.gathers,
                        self.mode == "simulation",
                        [next((p for p, t in inputs.items() if t is r), None)
                         for r in results])


class _Latency:
    """``nc_latency`` of the older namespace's benchmark: percentiles in
    microseconds."""

    def __init__(self, result: Any) -> None:
        self._result = result

    def get_latency_percentile(self, percentile: float) -> float:
        if not 0 <= percentile <= 100:
            raise ValueError(f"percentile must be from 0 to 100, got {percentile}")
        ms = np.percentile(self._result.durations_ms, percentile)
        return float(ms) * 1000.0


class _BenchmarkResult:
    """What ``kernel.benchmark_result`` holds after a benchmark run: the
    :class:`nrtpy.BenchmarkResult` and its ``nc_latency``."""

    def __init__(self, result: Any) -> None:
        self.result = result
        self.nc_latency = _Latency(result)

    def __repr__(self) -> str:
        return f"BenchmarkResult({self.result!r})"


def jit(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Make ``fn`` an NKI kernel that compiles and runs on the emulated
    device when called with NumPy arrays (``@nki.jit`` or
    ``@nki.jit(platform_target="trn2")``)."""
    mode = options.pop("mode", "auto")
    if mode not in ("auto", "simulation", "baremetal", "benchmark", "jax",
                    "torchxla", "trace"):
        raise ValueError(f"nki.jit: unknown mode {mode!r}")
    if mode in ("jax", "torchxla"):
        raise NotImplementedError(f"nrtpy.nki: nki.jit(mode={mode!r}) (framework "
                                  f"integration) is not implemented; call the "
                                  f"kernel with NumPy arrays")
    target = options.pop("platform_target", None)

    def wrap(f: Callable[..., Any]) -> Kernel:
        if isinstance(f, Kernel):
            return Kernel(f.fn, grid=f.grid, platform_target=target or f.platform_target,
                          mode=mode, options=options)
        return Kernel(f, platform_target=target, mode=mode, options=options)
    return wrap if fn is None else wrap(fn)


def simulate(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """A callable that runs ``kernel`` (jitted or plain) on NumPy arrays.

    Here simulation is execution on the emulated device: the same NEFF path
    as ``jit``.
    """
    return kernel if isinstance(kernel, Kernel) else Kernel(kernel)


def benchmark(kernel: Callable[..., Any], *, warmup: int = 5, iters: int = 10,
              mode: str = "device") -> Callable[..., Any]:
    """A callable that compiles ``kernel`` (jitted or plain) for its
    arguments and times it on the emulated device: ``warmup`` untimed runs,
    then ``iters`` timed ones, as :meth:`nrtpy.NrtpyModel.benchmark` does
    (``mode="device"``: the core's execution time from the system trace;
    ``"host"``: each call's wall time).  The call returns that
    :class:`nrtpy.BenchmarkResult` (``mean_ms``, ``p50_ms``, ``p90_ms``,
    ``p99_ms``, ``durations_ms``, ...)."""
    for what, n, least in (("warmup", warmup, 0), ("iters", iters, 1)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"nki.benchmark: {what} must be an int, got "
                            f"{type(n).__name__}")
        if n < least:
            raise ValueError(f"nki.benchmark: {what} must be at least {least}, got {n}")
    if mode not in ("device", "host"):
        raise ValueError(f"nki.benchmark: mode must be 'device' or 'host', got {mode!r}")
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)

    @functools.wraps(k.fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        compiled = k.specialize(*args, **kwargs)
        arrays = k._arrays(k._bind(args, kwargs))
        return compiled.model.benchmark(compiled._inputs(arrays), warmup_iter=int(warmup),
                                        benchmark_iter=int(iters), mode=mode)
    return run


def __getattr__(name: str) -> Any:
    # language and isa as attributes (nki.language.add), loaded on use
    if name in ("language", "isa", "framework"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("collectives", "tensor", "baremetal", "profile"):
        raise NotImplementedError(f"nrtpy.nki: nki.{name} is not implemented "
                                  f"in the current namespace")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
