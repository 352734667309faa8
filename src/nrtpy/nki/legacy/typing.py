"""``neuronxcc.nki.typing``: annotations of kernel parameters."""

from __future__ import annotations

from typing import Any


class _TensorType:
    """``nt.tensor`` and ``nt.tensor[shape, dtype]``: an annotation only."""

    def __getitem__(self, item: Any) -> "_TensorType":
        return self

    def __repr__(self) -> str:
        return "nki.typing.tensor"


tensor = _TensorType()
mutable_tensor = tensor
# (a parameter's mutability is what the kernel does with it: one it writes
# is an output too, whatever its annotation)
mutable = tensor
immutable = tensor
scalar = float
