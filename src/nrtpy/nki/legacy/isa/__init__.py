"""``neuronxcc.nki.isa``: ISA calls that return a new tile.

The older signatures (no ``dst``; ``mask=`` and ``dtype=`` on each call)
over the same implementations as :mod:`nrtpy.nki.isa`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nrtpy.nki import _core, _names
from nrtpy.nki import isa as _isa
from nrtpy.nki import language as nl
from nrtpy.nki.isa import (dge_mode, engine, get_nc_version, gpsimd_engine,  # noqa: F401
                           matmul_perf_mode, nc_version, oob_mode, reduce_cmd,
                           scalar_engine, tensor_engine, unknown_engine,
                           vector_engine, NkiValidationError)


def nc_matmul(stationary: Any, moving: Any, is_stationary_onezero: bool = False,
              is_moving_onezero: bool = False, is_transpose: bool = False,
              tile_position: Any = (), tile_size: Any = (), mask: Any = None,
              perf_mode: Any = None, **_: Any) -> Any:
    """``stationary.T @ moving`` as a new PSUM tile (float32)."""
    if is_transpose:
        return _isa._nc_transpose(None, stationary, mask)
    return _isa.matmul_tile("nc_matmul", stationary, moving)


def nc_transpose(data: Any, mask: Any = None, dtype: Any = None,
                 engine: Any = None, **_: Any) -> Any:
    """``data.T``: tensor engine (into PSUM) or vector engine (SBUF)."""
    return _isa._nc_transpose(None, data, mask, engine)


def activation(op: Any, data: Any, bias: Any = None, scale: Any = 1.0,
               reduce_op: Any = None, reduce_res: Any = None, reduce_cmd: Any = None,
               mask: Any = None, dtype: Any = None, **_: Any) -> Any:
    """``op(data * scale + bias)``."""
    return _isa._activation(None, op, data, bias, scale, reduce_op, reduce_res,
                            reduce_cmd, dtype, mask)


def activation_reduce(op: Any, data: Any, reduce_op: Any, reduce_res: Any,
                      bias: Any = None, scale: Any = 1.0, mask: Any = None,
                      dtype: Any = None, **_: Any) -> Any:
    return _isa._activation(None, op, data, bias, scale, reduce_op, reduce_res,
                            None, dtype, mask)


def tensor_tensor(data1: Any, data2: Any, op: Any, mask: Any = None,
                  dtype: Any = None, engine: Any = None, **_: Any) -> Any:
    return _isa._tensor_tensor(None, data1, data2, op, dtype, mask)


def tensor_scalar(data: Any, op0: Any, operand0: Any, reverse0: bool = False,
                  op1: Any = None, operand1: Any = None, reverse1: bool = False,
                  dtype: Any = None, mask: Any = None, engine: Any = None,
                  **_: Any) -> Any:
    return _isa._tensor_scalar(None, data, op0, operand0, reverse0, op1,
                               operand1, reverse1, dtype, mask)


def tensor_reduce(op: Any, data: Any, axis: Any, mask: Any = None,
                  dtype: Any = None, negate: bool = False, keepdims: bool = False,
                  **_: Any) -> Any:
    return _isa._tensor_reduce(None, op, data, axis, negate, keepdims, dtype, mask)


def tensor_partition_reduce(op: Any, data: Any, mask: Any = None,
                            dtype: Any = None, **_: Any) -> Any:
    return _isa._tensor_partition_reduce(None, op, data, dtype, mask)


def tensor_copy(src: Any, mask: Any = None, dtype: Any = None,
                engine: Any = None, **_: Any) -> Any:
    return _isa._tensor_copy(None, src, dtype, mask)


def tensor_copy_predicated(src: Any, dst: Any, predicate: Any,
                           mask: Any = None, dtype: Any = None,
                           reverse_pred: bool = False, **_: Any) -> Any:
    return _isa._tensor_copy_predicated(dst, src, predicate, reverse_pred)


def reciprocal(data: Any, mask: Any = None, dtype: Any = None, **_: Any) -> Any:
    return _isa._reciprocal(None, data, dtype, mask)


def memset(shape: Any, value: Any, dtype: Any, mask: Any = None,
           engine: Any = None, **_: Any) -> Any:
    """A new SBUF tile of ``shape`` filled with ``value``."""
    return _isa._memset(None, value, shape, dtype, mask)


def iota(expr: Any, dtype: Any, mask: Any = None, **_: Any) -> Any:
    """A new SBUF tile holding the values of an index expression
    (``nl.arange``/``nl.mgrid`` arithmetic), computed at trace time."""
    values = np.asarray(expr)
    if values.dtype.kind not in "iub":
        raise TypeError("iota: expr must be an index expression (nl.arange, "
                        "nl.mgrid)")
    if values.ndim < 2:
        values = values.reshape(values.shape[0] if values.ndim else 1, 1)
    trace = _core.current()
    c = trace.program.const(np.ascontiguousarray(values.astype(_core.as_dtype(dtype))))
    copy = trace.program.emit("copy", [c], c.shape, c.dtype)
    return _core.new_tile(copy, _core.MemoryRegion.sbuf, "iota")


def dma_copy(dst: Any, src: Any, mask: Any = None, dst_rmw_op: Any = None,
             oob_mode: Any = None, dge_mode: Any = None, **_: Any) -> Any:
    """Copy ``src`` into ``dst`` (``dst_rmw_op=np.add`` adds into it)."""
    if dst_rmw_op is not None and dst_rmw_op not in (np.add, nl.add):
        raise NotImplementedError("nrtpy.nki: dma_copy dst_rmw_op other "
                                  "than np.add")
    return _isa._dma_copy(dst, src, mask, oob_mode=oob_mode,
                          rmw_add=dst_rmw_op is not None)


def tensor_scalar_cumulative(src: Any, op0: Any, op1: Any, imm0: Any,
                             imm1: Any = None, reduce_cmd: Any = None, dst: Any = None,
                             reverse0: bool = False, dtype: Any = None, **_: Any) -> Any:
    return _isa._tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1, reduce_cmd,
                                          reverse0, dtype)


def tensor_tensor_scan(data0: Any, data1: Any, initial: Any, op0: Any, op1: Any,
                       dtype: Any = None, **_: Any) -> Any:
    return _isa._tensor_tensor_scan(None, data0, data1, initial, op0, op1, dtype)


def bn_stats(data: Any, mask: Any = None, dtype: Any = None, **_: Any) -> Any:
    return _isa._bn_stats(None, data, dtype)


def bn_aggr(data: Any, mask: Any = None, dtype: Any = None, **_: Any) -> Any:
    return _isa._bn_aggr(None, data, dtype)


def max8(src: Any, mask: Any = None, dtype: Any = None, **_: Any) -> Any:
    vals, _cols = _isa._top8("max8", src, mask)
    return _isa._finish("max8", None, vals, dtype=dtype)


def nc_find_index8(data: Any, vals: Any, mask: Any = None, dtype: Any = None,
                   **_: Any) -> Any:
    return _isa._finish("nc_find_index8", None, _isa._find_index8(data, vals, mask),
                        dtype=dtype)


def nc_match_replace8(data: Any, vals: Any, imm: Any, dst_idx: Any = None,
                      mask: Any = None, dtype: Any = None, **_: Any) -> Any:
    return _isa._match_replace8(None, data, vals, imm, dst_idx, mask, dtype)


def dma_transpose(src: Any, axes: Any = None, mask: Any = None, dtype: Any = None,
                  **_: Any) -> Any:
    return _isa._dma_transpose(None, src, axes, dtype)


def affine_select(pred: Any, on_true_tile: Any, on_false_value: Any,
                  mask: Any = None, dtype: Any = None, **_: Any) -> Any:
    """``on_true_tile`` where the index predicate ``pred`` holds, else
    ``on_false_value`` (the predicate is known when the kernel is traced)."""
    cond = np.asarray(pred)
    if cond.dtype != np.bool_:
        raise TypeError("affine_select: pred must compare index expressions")
    v = _core.value_of(on_true_tile)
    c = _core.current().program.const(np.ascontiguousarray(np.broadcast_to(cond, v.shape)))
    out = np.where(c, v, _core.current().program.full(on_false_value, (), v.dtype))
    return _isa._finish("affine_select", None, out, dtype=dtype, mask=mask)


def select_reduce(dst: Any, predicate: Any, on_true: Any, on_false: Any,
                  reduce_res: Any = None, reduce_cmd: Any = None, reduce_op: Any = None,
                  reverse_pred: bool = False, mask: Any = None, dtype: Any = None,
                  **_: Any) -> Any:
    return _isa._select_reduce(dst, predicate, on_true, on_false, reduce_res,
                               reduce_cmd, reduce_op, reverse_pred, dtype)


def range_select(on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any,
                 bound1: Any, reduce_cmd: Any = None, reduce_res: Any = None,
                 reduce_op: Any = None, range_start: int = 0,
                 on_false_value: Any = _isa._FP32_MIN, mask: Any = None,
                 dtype: Any = None, **_: Any) -> Any:
    return _isa._range_select(None, on_true_tile, comp_op0, comp_op1, bound0, bound1,
                              reduce_cmd, reduce_res, reduce_op, range_start,
                              on_false_value, dtype)


def nc_stream_shuffle(src: Any, dst: Any, shuffle_mask: Any, mask: Any = None,
                      **_: Any) -> Any:
    return _isa.nc_stream_shuffle(dst, src, shuffle_mask)


def dropout(data: Any, prob: Any, mask: Any = None, dtype: Any = None, **_: Any) -> Any:
    return _isa._dropout(None, data, prob, dtype)


def sequence_bounds(segment_ids: Any, mask: Any = None, dtype: Any = None,
                    **_: Any) -> Any:
    return _isa._sequence_bounds(None, segment_ids, dtype)


def local_gather(src_buffer: Any, index: Any, num_elem_per_idx: int = 1,
                 num_valid_indices: Any = None, mask: Any = None, **_: Any) -> Any:
    return _isa._local_gather(None, src_buffer, index, num_elem_per_idx,
                              num_valid_indices)


def __getattr__(name: str) -> Any:
    if name in _names.ISA or name in _names.LEGACY_ISA:
        try:
            return getattr(_isa, name)
        except NotImplementedError:
            raise NotImplementedError(f"nrtpy.nki: neuronxcc.nki.isa.{name} is "
                                      f"not implemented on the emulated "
                                      f"device") from None
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
