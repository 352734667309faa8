"""The element types nrtpy carries, read from the one table.

``nrtpy._nrtpy.DTYPES`` is generated from the emulator's dtype list
(``NRTEMU_DTYPE_LIST`` in ``nrt/nrtemu.h``): per name, the libnrt code, the
item size, NumPy's kind letter and the NEFF name.  Everything in Python that
needs to know a dtype asks here.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from nrtpy._nrtpy import DTYPES

#: Names of the types the emulator computes with (all but "unknown").
NAMES: frozenset[str] = frozenset(n for n in DTYPES if n != "unknown")

#: The fp8 dtypes: the real runtime reports fp8 tensors as int8, so an
#: int8 tensor of a hardware NEFF accepts any of them.
FP8: frozenset[np.dtype] = frozenset(
    np.dtype(getattr(ml_dtypes, n)) for n in NAMES if n.startswith("float8_"))


def to_numpy(name: str) -> np.dtype:
    """The NumPy dtype of a table name ("bfloat16" -> ml_dtypes.bfloat16)."""
    if name not in NAMES:
        raise ValueError(f"unknown dtype name {name!r} "
                         f"(known: {', '.join(sorted(NAMES))})")
    return np.dtype(getattr(ml_dtypes, name, None) or name)


def for_tensor(name: str, size: int, shape: tuple[int, ...]) -> np.dtype:
    """The NumPy dtype of a model tensor: its table dtype, or, where the
    NEFF does not say ("unknown"), a void dtype of the item size that the
    byte size and shape imply."""
    if name != "unknown":
        return to_numpy(name)
    count = math.prod(shape)
    if count > 0 and size % count == 0:
        return np.dtype(f"V{size // count}")
    return np.dtype(f"V{size}")


_NAME_OF: dict[np.dtype, str | None] = {}


def name_of(dt: np.dtype) -> str | None:
    """The table name of a NumPy dtype, or None when nrtpy has no such
    type."""
    dt = np.dtype(dt)
    try:
        return _NAME_OF[dt]
    except KeyError:
        pass
    # (dtype.name is slow to compute: compilers ask for it per buffer)
    name = dt.name
    _NAME_OF[dt] = name if name in NAMES else None
    return _NAME_OF[dt]


def is_float(dt: np.dtype) -> bool:
    """True for NumPy's floating types and every floating type of the
    table, 16- and 8-bit included (NumPy says kind 'V' for ml_dtypes')."""
    dt = np.dtype(dt)
    row = DTYPES.get(dt.name)
    return dt.kind == "f" or (row is not None and row[2] == "f")
