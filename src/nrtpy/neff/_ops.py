"""Operations NumPy lacks, usable both on arrays and while tracing.

``relu``, ``gelu``, ``sigmoid``, ``rsqrt`` and ``softmax`` compute with NumPy
on arrays (so a kernel can be checked against NumPy) and record the matching
emulator op on traced arrays.  On 16- and 8-bit floats they compute in
float32 and round once, as the emulator does.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from nrtpy import _dtypes

_traced_type: type | None = None
_emit: Callable[..., Any] | None = None



def register(traced_type: type, emit: Callable[..., Any]) -> None:
    global _traced_type, _emit
    _traced_type, _emit = traced_type, emit


is_float = _dtypes.is_float


def _apply(op: str, x: Any, fn: Callable[[np.ndarray], np.ndarray],
           **attrs: Any) -> Any:
    if _traced_type is not None and isinstance(x, _traced_type):
        assert _emit is not None
        return _emit(op, x, **attrs)
    x = np.asarray(x)
    if not is_float(x.dtype):
        return fn(x.astype(np.float64))
    if np.dtype(x.dtype).itemsize < 4:  # 16- and 8-bit floats
        return fn(x.astype(np.float32)).astype(x.dtype)
    return fn(x)


def relu(x: Any) -> Any:
    """max(x, 0)."""
    return _apply("relu", x, lambda a: np.maximum(a, a.dtype.type(0)))


def sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x))."""
    def f(a: np.ndarray) -> np.ndarray:
        # e^x / (1 + e^x) for x < 0: e^-|x| never overflows, and the
        # subnormal results below x = -87 (float32) come out, as the
        # emulator's do
        e = np.exp(-np.abs(a))
        return np.where(a >= 0, 1, e) / (1 + e)
    return _apply("sigmoid", x, f)


def rsqrt(x: Any) -> Any:
    """1 / sqrt(x)."""
    return _apply("rsqrt", x, lambda a: 1 / np.sqrt(a))


def gelu(x: Any) -> Any:
    """GELU, tanh approximation: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))."""
    def f(a: np.ndarray) -> np.ndarray:
        # as x / (1 + e^m), m = -2u (x e^-m / (1 + e^-m) where m > 0), the
        # emulator's form: 0.5 x (1 + tanh u) as written cancels for
        # negative x (1 + tanh u -> 0), off by 50-170% below -3 in float32
        t = a.dtype.type
        m = t(-2 * np.sqrt(2 / np.pi)) * (a + t(0.044715) * a * a * a)
        e = np.exp(-np.abs(m))
        with np.errstate(invalid="ignore"):  # -inf * 0: the formula's NaN
            return np.where(m > 0, a * e, a) / (1 + e)
    return _apply("gelu", x, f)


def softmax(x: Any, axis: int = -1) -> Any:
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""
    def f(a: np.ndarray) -> np.ndarray:
        e = np.exp(a - np.max(a, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)
    if _traced_type is not None and isinstance(x, _traced_type):
        return _apply("softmax", x, f, axis=int(axis) % max(1, x.ndim))
    return _apply("softmax", x, f)
