"""mod, floor_divide and fmod of float16 and bfloat16: every code as the
dividend, against NumPy (float16) and ml_dtypes (bfloat16), bit for bit.

The emulator takes float32 quotients for these dtypes where their short
significands make them exact (src/emulator/kernels/kernel_elementwise.c,
narrow_divmod), and the float32 kernel elsewhere.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from support import run_compiled

OPS = {"floor_divide": lambda a, b: a // b, "mod": lambda a, b: a % b,
       "fmod": np.fmod}


@pytest.mark.parametrize("name", OPS, ids=str)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16],
                         ids=lambda d: np.dtype(d).name)
def test_every_dividend_bit_exact(tmp_path, dtype, name):
    fn = OPS[name]
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(dtype)
    divisors = np.array([3.0, -0.75, 1e-3, -200.0, 0.0, np.inf], np.float32)
    for d in divisors.astype(dtype):
        y = np.full_like(x, d)
        with np.errstate(all="ignore"):
            want = fn(x, y)
        got = run_compiled(tmp_path, fn, x.reshape(256, 256), y.reshape(256, 256)).reshape(-1)
        g, w = got.astype(np.float32), want.astype(np.float32)
        same = ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))
        assert same.all(), (d, x[~same][:5], g[~same][:5], w[~same][:5])
