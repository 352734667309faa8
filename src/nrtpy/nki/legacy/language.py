"""``neuronxcc.nki.language``: the current ``nki.language`` with the older
names (``mgrid``, ``arange``, ``par_dim``, ``spmd_dim``, ``nc``, ``fp32``,
...), which it holds too."""

from __future__ import annotations

from typing import Any

from nrtpy.nki import _names
from nrtpy.nki import language as _language
from nrtpy.nki.language import *  # noqa: F401,F403
from nrtpy.nki.language import (abs, all, arange, bf16, fp16, fp32, max,  # noqa: F401,A004
                                mgrid, min, nc, ones_like, par_dim,
                                spmd_dim, sum)


def __getattr__(name: str) -> Any:
    if name in _names.LANGUAGE or name in _names.LEGACY_LANGUAGE:
        return getattr(_language, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
