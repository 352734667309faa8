"""NrtpyModel: a NEFF loaded on a NeuronCore, called like a function.

>>> model = NrtpyModel.load_from_neff("add.neff")          # doctest: +SKIP
>>> out = model(inputs={"a_input": a, "b_input": b})        # doctest: +SKIP
>>> out["output_0"].numpy()                                 # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import ml_dtypes
import numpy as np

from nrtpy._logging import logger
from nrtpy._nrtpy import (
    NrtModel,
    NrtpyError,
    NrtpyTensor,
    SystemTraceSession,
    TensorMetadata,
)
from nrtpy._singleton import get_nrtpy_singleton

# fp8 arrays that a NEFF reporting "int8" accepts, as libnrt reports fp8
# tensors of hardware NEFFs that way.
_FP8 = {np.dtype(t) for t in (ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fn,
                              ml_dtypes.float8_e5m2, ml_dtypes.float8_e3m4)}


def numpy_dtype(name: str, size: int, shape: tuple[int, ...]) -> np.dtype:
    """The NumPy dtype for a NEFF dtype name; a void dtype of the right item
    size when the NEFF does not say ("unknown")."""
    if name != "unknown":
        return np.dtype(getattr(ml_dtypes, name, name))
    count = math.prod(shape)
    if count > 0 and size % count == 0:
        return np.dtype(f"V{size // count}")
    return np.dtype(f"V{size}")


@dataclass
class BenchmarkResult:
    """Timing of a benchmark, in milliseconds.

    ``iterations`` is the number of measured durations (device mode: one
    per nc_exec_running start/stop pair).  ``p50_ms``, ``p90_ms`` and
    ``p99_ms`` are percentiles with linear interpolation.
    """

    mean_ms: float
    min_ms: float
    max_ms: float
    std_dev_ms: float
    iterations: int
    warmup_iterations: int
    durations_ms: list[float] = field(default_factory=list)
    p50_ms: float = 0.0
    p90_ms: float = 0.0
    p99_ms: float = 0.0
    mode: str = "device"

    def __repr__(self) -> str:
        return (f"BenchmarkResult(mean={self.mean_ms:.4f}ms, "
                f"min={self.min_ms:.4f}ms, max={self.max_ms:.4f}ms, "
                f"std_dev={self.std_dev_ms:.4f}ms, "
                f"iterations={self.iterations}, "
                f"warmup_iterations={self.warmup_iterations})")


def _make_benchmark_result(durations: list[float], warmup: int,
                           mode: str) -> BenchmarkResult:
    n = len(durations)
    mean = sum(durations) / n
    variance = sum((d - mean) ** 2 for d in durations) / n
    p50, p90, p99 = (float(v) for v in np.percentile(durations, [50, 90, 99]))
    return BenchmarkResult(mean_ms=mean, min_ms=min(durations),
                           max_ms=max(durations), std_dev_ms=math.sqrt(variance),
                           iterations=n, warmup_iterations=warmup,
                           durations_ms=list(durations), p50_ms=p50, p90_ms=p90,
                           p99_ms=p99, mode=mode)


def _parse_trace_durations(events_json: str) -> list[float]:
    """Durations (ms) of nc_exec_running start/stop pairs, in stop order."""
    if not events_json:
        return []
    events = json.loads(events_json).get("events", [])
    starts: dict[Any, int] = {}
    durations: list[float] = []
    for ev in events:
        if ev.get("event_type") != "nc_exec_running":
            continue
        tid = ev.get("tracking_id")
        ts = ev.get("data", {}).get("nc_timestamp_ns")
        if tid is None or ts is None:
            continue
        if ev.get("phase") == "start":
            starts[tid] = ts
        elif ev.get("phase") == "stop" and tid in starts:
            durations.append((ts - starts.pop(tid)) / 1_000_000.0)
    return durations


class NrtpyModel:
    """A compiled NEFF loaded on one NeuronCore.

    Load with :meth:`load_from_neff`, run with ``model(inputs=...)``, time
    with :meth:`benchmark`.  Unloaded when the last reference goes.
    """

    def __init__(self, model_ref: NrtModel, name: str, neff_path: Path) -> None:
        self.model_ref = model_ref
        self.name = name
        self.neff_path = Path(neff_path)
        info = get_nrtpy_singleton().get_tensor_info(model_ref)
        self.input_tensors_info: dict[str, TensorMetadata] = info.inputs
        self.output_tensors_info: dict[str, TensorMetadata] = info.outputs
        self._dtypes = self._neff_dtypes()

    def _neff_dtypes(self) -> dict[str, str]:
        """Dtype names the NEFF records beyond libnrt's codes (bool,
        float64, the fp8 variants)."""
        try:
            from nrtpy import neff

            described = neff.inspect(self.neff_path)
        except (OSError, ValueError, KeyError):
            return {}
        return {e["name"]: e["dtype"]
                for e in described["inputs"] + described["outputs"]
                if e.get("dtype", "unknown") != "unknown"}

    def _dtype_of(self, name: str, meta: TensorMetadata) -> str:
        return self._dtypes.get(name, meta.dtype)

    @classmethod
    def load_from_neff(cls, neff_path: str | Path, name: str | None = None,
                       core_id: int = 0, cc_enabled: bool = False,
                       rank_id: int = 0, world_size: int = 1) -> NrtpyModel:
        """Load the NEFF at ``neff_path`` on ``core_id``.

        Raises:
            NrtError: the file cannot be read (NRT_FAILURE) or the runtime
                refuses the NEFF (NRT_INVALID, NRT_UNSUPPORTED_NEFF_VERSION).
        """
        neff_path = Path(neff_path)
        if name is None:
            name = neff_path.stem
        logger.info("Loading model from: %s", neff_path)
        model_ref = get_nrtpy_singleton().load_model(
            str(neff_path), core_id, cc_enabled, rank_id, world_size)
        return cls(model_ref, name, neff_path)

    # -- I/O ----------------------------------------------------------------
    def allocate_output_tensors(self) -> list[NrtpyTensor]:
        """New output tensors on the model's core, with the outputs' real
        shapes and dtypes.  Their contents are unspecified until executed:
        allocating is enough, no zeros are uploaded."""
        rt = get_nrtpy_singleton()
        tensors = []
        for out_name, meta in self.output_tensors_info.items():
            shape = tuple(meta.shape) or (meta.size,)
            dtype = numpy_dtype(self._dtype_of(out_name, meta), meta.size, shape)
            if meta.shape == [] and dtype.itemsize != meta.size:
                shape = (meta.size // max(dtype.itemsize, 1),)
            ref = rt.allocate_tensor(meta.size, self.model_ref.core_id, out_name)
            tensors.append(NrtpyTensor(ref, shape, dtype, out_name))
        return tensors

    def _describe(self, infos: Mapping[str, TensorMetadata]) -> str:
        return ", ".join(
            f"{k}: shape={list(v.shape)} dtype={self._dtype_of(k, v)} "
            f"core={self.model_ref.core_id}" for k, v in infos.items())

    def _check_tensor(self, label: str, key: str, tensor: Any,
                      meta: TensorMetadata, expected: str) -> None:
        ref = getattr(tensor, "tensor_ref", None)
        if ref is None or not hasattr(tensor, "shape") or not hasattr(tensor, "dtype"):
            raise TypeError(f"{label} {key!r} must be an NrtpyTensor, got "
                            f"{type(tensor).__name__}")
        if ref.core_id != self.model_ref.core_id:
            raise ValueError(
                f"{label} {key}: expected model and tensor on the same core, "
                f"got model core_id {self.model_ref.core_id} and tensor "
                f"core_id {ref.core_id}. Expected: {expected}")
        if meta.shape and tuple(tensor.shape) != tuple(meta.shape):
            raise ValueError(f"{label} {key}: expected shape {list(meta.shape)}, "
                             f"got {tuple(tensor.shape)}. Expected: {expected}")
        if ref.size != meta.size:
            raise ValueError(f"{label} {key}: expected {meta.size} bytes, got "
                             f"{ref.size}. Expected: {expected}")
        want = self._dtype_of(key, meta)
        have = np.dtype(tensor.dtype)
        if want == "unknown":
            return
        if want == "int8" and have in _FP8:
            return
        if have.name != want:
            raise ValueError(f"{label} {key}: expected dtype {want}, got "
                             f"{have.name}. Expected: {expected}")

    def _validate_io(self, inputs: Mapping[str, Any],
                     outputs: Mapping[str, Any]) -> None:
        for label, given, infos in (("Input", inputs, self.input_tensors_info),
                                    ("Output", outputs, self.output_tensors_info)):
            expected = self._describe(infos)
            unknown = set(given) - set(infos)
            if unknown:
                raise ValueError(
                    f"Unknown {label.lower()}(s) {sorted(unknown)} for model "
                    f"'{self.name}'. Expected {label.lower()}s: {expected}")
            missing = [k for k in infos if k not in given]
            if missing:
                raise ValueError(
                    f"Missing {label.lower()}(s) {missing} for model "
                    f"'{self.name}'. Expected {label.lower()}s: {expected}")
            for key, tensor in given.items():
                self._check_tensor(label, key, tensor, infos[key], expected)

    def _refs(self, tensors: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v.tensor_ref for k, v in tensors.items()}

    # -- calls -------------------------------------------------------------
    def __call__(self, inputs: Mapping[str, Any],
                 outputs: Mapping[str, Any] | None = None,
                 save_trace: bool = False,
                 ntff_name: str | None = None) -> dict[str, NrtpyTensor] | None:
        """Execute once.

        Returns the outputs (new tensors, by output name) when ``outputs``
        is None, else None.  With ``save_trace`` the emulator writes a trace
        of the execution to ``ntff_name`` (default: the NEFF path with
        ``.ntff``) in Chrome trace-event JSON, which Perfetto opens.

        Raises:
            ValueError: unknown or missing names, or a tensor whose shape,
                dtype, size or core does not match (the message lists what
                the model expects).
            NrtError: the execution failed (e.g. NRT_EXEC_OOB for an
                out-of-bounds gather).
        """
        auto = outputs is None
        if outputs is None:
            outputs = {t.name: t for t in self.allocate_output_tensors()}
        self._validate_io(inputs, outputs)
        if ntff_name is None:
            ntff_name = str(self.neff_path.with_suffix("")) + ".ntff"
        logger.info("Executing model: %r", self.model_ref)
        get_nrtpy_singleton().execute(self.model_ref, self._refs(inputs),
                                      self._refs(outputs), ntff_name,
                                      bool(save_trace))
        return dict(outputs) if auto else None

    def benchmark(self, inputs: Mapping[str, Any],
                  outputs: Mapping[str, Any] | None = None,
                  warmup_iter: int = 5, benchmark_iter: int = 5,
                  mode: str = "device") -> BenchmarkResult:
        """Time ``benchmark_iter`` executions after ``warmup_iter`` untimed ones.

        ``mode="device"`` measures the core's execution time from the system
        trace (nc_exec_running events); ``mode="host"`` measures each call
        with ``time.perf_counter``.

        Raises:
            ValueError: unknown mode, or ``benchmark_iter < 1``.
        """
        if mode not in ("device", "host"):
            raise ValueError(f"Invalid benchmark mode '{mode}'. Use 'device' or 'host'.")
        if isinstance(benchmark_iter, bool) or not isinstance(benchmark_iter, int) \
                or benchmark_iter < 1:
            raise ValueError(f"benchmark_iter must be at least 1, got {benchmark_iter!r}")
        if isinstance(warmup_iter, bool) or not isinstance(warmup_iter, int) \
                or warmup_iter < 0:
            raise ValueError(f"warmup_iter must be a non-negative int, got {warmup_iter!r}")
        if outputs is None:
            outputs = {t.name: t for t in self.allocate_output_tensors()}
        self._validate_io(inputs, outputs)
        rt = get_nrtpy_singleton()
        ins, outs = self._refs(inputs), self._refs(outputs)
        logger.info("Benchmarking model: %r", self.model_ref)
        if mode == "host":
            for _ in range(warmup_iter):
                rt.execute(self.model_ref, ins, outs)
            durations = []
            for _ in range(benchmark_iter):
                t0 = time.perf_counter()
                rt.execute(self.model_ref, ins, outs)
                durations.append((time.perf_counter() - t0) * 1000.0)
            return _make_benchmark_result(durations, warmup_iter, mode)

        with SystemTraceSession(self.model_ref.core_id) as trace:
            for _ in range(warmup_iter):
                rt.execute(self.model_ref, ins, outs)
            trace.drain_events()
            for _ in range(benchmark_iter):
                rt.execute(self.model_ref, ins, outs)
            events_json = trace.fetch_events_json()
        durations = _parse_trace_durations(events_json)
        if not durations:
            raise NrtpyError("Nrtpy Error: No nc_exec_running events captured "
                             "during benchmark. Cannot compute device-side timing.")
        return _make_benchmark_result(durations, warmup_iter, mode)

    def __repr__(self) -> str:
        return (f"NrtpyModel(name={self.name!r}, neff_path='{self.neff_path}', "
                f"core_id={self.model_ref.core_id}, "
                f"inputs={list(self.input_tensors_info)}, "
                f"outputs={list(self.output_tensors_info)})")
