"""NrtpyModel: a NEFF loaded on a NeuronCore, called like a function.

>>> model = NrtpyModel.load_from_neff("add.neff")          # doctest: +SKIP
>>> out = model(inputs={"a_input": a, "b_input": b})        # doctest: +SKIP
>>> out["output_0"].numpy()                                 # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import math
import operator
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nrtpy import _dtypes
from nrtpy._logging import logger
from nrtpy._nrtpy import (
    NrtModel,
    NrtpyError,
    NrtpyTensor,
    SystemTraceSession,
    TensorMetadata,
    _model_call_method,
    _raise_if_forked,
)
from nrtpy._singleton import get_nrtpy_singleton

# Input "<o>.must_alias_input" and output "<o>" are one tensor updated in
# place; auto-allocation reuses the input for the output.
MUST_ALIAS_SUFFIX = ".must_alias_input"


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


def _count(name: str, value: Any, least: int) -> int:
    """An iteration count: an int (NumPy's too, through __index__), not a
    bool; TypeError otherwise, ValueError below `least`."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be an int, got "
                        f"{type(value).__name__}: {value!r}")
    count = operator.index(value)
    if count < least:
        need = "a non-negative int" if least == 0 else f"at least {least}"
        raise ValueError(f"{name} must be {need}, got {count}")
    return count


def _check_mapping(label: str, given: Any) -> None:
    """inputs/outputs are dicts of name -> tensor: say so, rather than
    fail on a method a list or None does not have."""
    if not isinstance(given, Mapping):
        raise TypeError(f"{label} must be a dict of tensor name to "
                        f"NrtpyTensor, got {type(given).__name__}: "
                        f"{given!r:.200}")
    for key in given:
        if not isinstance(key, str):
            raise TypeError(f"{label} keys must be tensor names (str), got "
                            f"{type(key).__name__}: {key!r:.200}")
        if "\0" in key:
            # (libnrt takes names as C strings: it would see another name)
            raise ValueError(f"{label} key {key!r:.200} contains a NUL "
                             f"character, which a tensor name cannot hold")


def _dtype_words(have: np.dtype, want: np.dtype) -> str:
    """A tensor's dtype in a message: its name, and its byte order when that
    is not the host's (a name alone reads the same in both orders), with the
    conversion when the type is the expected one in the other order."""
    if have.isnative:
        return have.name
    order = "big" if have.byteorder == ">" else "little"
    words = f"{have.name} in {order}-endian byte order ({have.str})"
    if have.newbyteorder("=") == want:
        host = "little" if sys.byteorder == "little" else "big"
        words += (f"; models take tensors in the host's ({host}-endian) byte "
                  f"order: make the tensor from a.astype({want.str!r})")
    return words


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
        # Exact dtypes (bool, float64, each fp8 variant) on the emulator,
        # libnrt's codes on the real runtime.
        info = get_nrtpy_singleton().get_tensor_info(model_ref)
        self.input_tensors_info: dict[str, TensorMetadata] = info.inputs
        self.output_tensors_info: dict[str, TensorMetadata] = info.outputs
        self._expect = (self._expectations(self.input_tensors_info),
                        self._expectations(self.output_tensors_info))
        # The same expectations in C: a call whose dicts match them exactly
        # is checked and executed there in one step (model_call.c);
        # any other call takes the full check below, which says what is
        # wrong.
        aliased = any(f"{k}{MUST_ALIAS_SUFFIX}" in self.input_tensors_info
                      for k in self.output_tensors_info)
        model_ref._set_signature(*(
            tuple((k, shape, size, dtype) for k, (shape, size, dtype) in e.items())
            for e in self._expect), not aliased)

    @classmethod
    def load_from_neff(cls, neff_path: str | Path, name: str | None = None,
                       core_id: int = 0, cc_enabled: bool = False,
                       rank_id: int = 0, world_size: int = 1) -> NrtpyModel:
        """Load the NEFF at ``neff_path`` on ``core_id``.

        Raises:
            TypeError: ``name`` is not a str, ``core_id`` not an int.
            ValueError: ``core_id`` is negative or no such core is visible.
            NrtError: the file cannot be read (NRT_FAILURE) or the runtime
                refuses the NEFF (NRT_INVALID, NRT_UNSUPPORTED_NEFF_VERSION).
        """
        neff_path = Path(neff_path)
        if name is None:
            name = neff_path.stem
        elif not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got "
                            f"{type(name).__name__}: {name!r:.200}")
        logger.info("Loading model from: %s", neff_path)
        model_ref = get_nrtpy_singleton().load_model(
            str(neff_path), core_id, cc_enabled, rank_id, world_size)
        return cls(model_ref, name, neff_path)

    def _check_loaded(self) -> None:
        """Fail before touching the runtime: after nrtpy.reset(), getting
        the singleton would silently start a new runtime."""
        if self.model_ref.is_unloaded:
            _raise_if_forked(self.model_ref)
            raise NrtpyError("Nrtpy Error: Unable to execute an unloaded model. "
                             "Please check the lifetime of the model.")

    # -- I/O ----------------------------------------------------------------
    def allocate_output_tensors(self) -> list[NrtpyTensor]:
        """New output tensors on the model's core, with the outputs' real
        shapes and dtypes.  Their contents are unspecified until executed:
        allocating is enough, no zeros are uploaded.

        Raises:
            NrtpyError: the model is unloaded (its runtime was reset).
        """
        self._check_loaded()
        rt = get_nrtpy_singleton()
        tensors = []
        for out_name, meta in self.output_tensors_info.items():
            tensors.append(self._allocate_output(rt, out_name, meta))
        return tensors

    def _allocate_output(self, rt: Any, out_name: str,
                         meta: TensorMetadata) -> NrtpyTensor:
        shape = tuple(meta.shape)
        dtype = _dtypes.for_tensor(meta.dtype, meta.size, shape or (meta.size,))
        if not shape:
            # No shape: a scalar when one element fills it, else a 1-D
            # array of the elements (or bytes) it holds.
            shape = () if dtype.itemsize == meta.size else \
                (meta.size // max(dtype.itemsize, 1),)
        ref = rt.allocate_tensor(meta.size, self.model_ref.core_id, out_name)
        return NrtpyTensor(ref, shape, dtype, out_name)

    def _auto_outputs(self, inputs: Mapping[str, Any]) -> dict[str, NrtpyTensor]:
        """New output tensors, except that output ``<o>`` reuses the input
        ``<o>.must_alias_input`` when given (the compiler's convention for
        a parameter the kernel updates in place)."""
        rt = get_nrtpy_singleton()
        outputs: dict[str, Any] = {}
        for out_name, meta in self.output_tensors_info.items():
            alias = inputs.get(f"{out_name}{MUST_ALIAS_SUFFIX}")
            if alias is not None and f"{out_name}{MUST_ALIAS_SUFFIX}" in self.input_tensors_info:
                outputs[out_name] = alias
            else:
                outputs[out_name] = self._allocate_output(rt, out_name, meta)
        return outputs

    def _describe(self, infos: Mapping[str, TensorMetadata]) -> str:
        return ", ".join(
            f"{k}: shape={list(v.shape)} dtype={v.dtype} "
            f"core={self.model_ref.core_id}" for k, v in infos.items())

    def _expectations(self, infos: Mapping[str, TensorMetadata]
                      ) -> dict[str, tuple[tuple[int, ...] | None, int, np.dtype | None]]:
        """Per name: shape (None when the NEFF has none), byte size, and the
        dtype to match (None when the NEFF does not say)."""
        out = {}
        for k, v in infos.items():
            want = v.dtype
            dtype = None if want == "unknown" else _dtypes.for_tensor(want, v.size, tuple(v.shape))
            out[k] = (tuple(v.shape) or None, v.size, dtype)
        return out

    def _check_tensor(self, label: str, key: str, tensor: Any,
                      expect: tuple[tuple[int, ...] | None, int, np.dtype | None],
                      infos: Mapping[str, TensorMetadata]) -> None:
        shape, size, want = expect
        ref = getattr(tensor, "tensor_ref", None)
        if ref is None or not hasattr(tensor, "shape") or not hasattr(tensor, "dtype"):
            raise TypeError(f"{label} {key!r} must be an NrtpyTensor, got "
                            f"{type(tensor).__name__}")
        core = self.model_ref.core_id
        have = tensor.dtype
        if ref.core_id == core and (shape is None or tensor.shape == shape) \
                and ref.size == size and (want is None or have == want):
            return  # the common case, checked without building messages
        expected = self._describe(infos)
        if ref.core_id != core:
            raise ValueError(
                f"{label} {key}: expected model and tensor on the same core, "
                f"got model core_id {core} and tensor core_id {ref.core_id}. "
                f"Expected: {expected}")
        if shape is not None and tuple(tensor.shape) != shape and \
                not (shape == (1,) and tuple(tensor.shape) == ()):
            raise ValueError(f"{label} {key}: expected shape {list(shape)}, "
                             f"got {tuple(tensor.shape)}. Expected: {expected}")
        if ref.size != size:
            raise ValueError(f"{label} {key}: expected {size} bytes, got "
                             f"{ref.size}. Expected: {expected}")
        have = np.dtype(have)
        # Same bytes: fp8 where the runtime reports int8, bool where a
        # NEFF holds pred as uint8 0/1, a 0-d array where it holds a
        # scalar as [1] (neuronx-cc's conventions, checked above).
        if want is not None and have != want and \
                not (want == np.dtype(np.int8) and have in _dtypes.FP8) and \
                not (want == np.dtype(np.uint8) and have == np.dtype(np.bool_)):
            raise ValueError(f"{label} {key}: expected dtype {want.name}, got "
                             f"{_dtype_words(have, want)}. Expected: {expected}")

    def _validate_io(self, inputs: Mapping[str, Any],
                     outputs: Mapping[str, Any]) -> None:
        for label, given, infos, expect in (
                ("Input", inputs, self.input_tensors_info, self._expect[0]),
                ("Output", outputs, self.output_tensors_info, self._expect[1])):
            if len(given) != len(expect) or any(k not in expect for k in given):
                expected = self._describe(infos)
                unknown = set(given) - set(infos)
                if unknown:
                    raise ValueError(
                        f"Unknown {label.lower()}(s) {sorted(unknown)} for model "
                        f"'{self.name}'. Expected {label.lower()}s: {expected}")
                missing = [k for k in infos if k not in given]
                raise ValueError(
                    f"Missing {label.lower()}(s) {missing} for model "
                    f"'{self.name}'. Expected {label.lower()}s: {expected}")
            for key, tensor in given.items():
                self._check_tensor(label, key, tensor, expect[key], infos)

    def _refs(self, tensors: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v.tensor_ref for k, v in tensors.items()}

    # -- calls -------------------------------------------------------------
    def _call(self, inputs: Mapping[str, Any],
              outputs: Mapping[str, Any] | None = None,
              save_trace: bool = False,
              ntff_name: str | None = None) -> dict[str, NrtpyTensor] | None:
        """__call__ in full: every check, with messages that say what is
        wrong, automatic outputs, tracing and logging."""
        self._check_loaded()
        _check_mapping("inputs", inputs)
        auto = outputs is None
        if outputs is not None:
            _check_mapping("outputs", outputs)
        if outputs is None:
            outputs = self._auto_outputs(inputs)
        self._validate_io(inputs, outputs)
        if save_trace and ntff_name is None:
            ntff_name = str(self.neff_path.with_suffix("")) + ".ntff"
        if logger.isEnabledFor(logging.INFO):
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
            TypeError: an iteration count that is not an int (a bool, a
                float), or inputs/outputs that are not dicts.
            ValueError: unknown mode, ``benchmark_iter < 1`` or
                ``warmup_iter < 0``.
            NrtpyError: the model is unloaded, or a tensor is freed.
        """
        if mode not in ("device", "host"):
            raise ValueError(f"Invalid benchmark mode '{mode}'. Use 'device' or 'host'.")
        benchmark_iter = _count("benchmark_iter", benchmark_iter, 1)
        warmup_iter = _count("warmup_iter", warmup_iter, 0)
        self._check_loaded()
        _check_mapping("inputs", inputs)
        if outputs is not None:
            _check_mapping("outputs", outputs)
        if outputs is None:
            outputs = self._auto_outputs(inputs)
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


# NrtpyModel.__call__ (its docstring says what it does) is written in C: a
# call with preallocated outputs that matches the model exactly runs
# without Python code; any other call comes to NrtpyModel._call.
NrtpyModel.__call__ = _model_call_method(NrtpyModel, logger)  # type: ignore[method-assign]
