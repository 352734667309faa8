"""Questions about the runtime: which library, which instance, how much memory."""

from __future__ import annotations

from typing import Any, NamedTuple

from nrtpy import _nrtpy
from nrtpy._singleton import get_nrtpy_singleton


class MemoryStats(NamedTuple):
    """Device memory of one NeuronCore, in bytes."""

    bytes_used: int
    bytes_limit: int


def memory_stats(core_id: int = 0) -> MemoryStats:
    """Bytes of device memory in use on ``core_id`` and the core's limit.

    Starts the runtime if it is not running.  A ``core_id`` that is not an
    int (a bool included) raises TypeError; a negative one, or one past the
    visible cores, ValueError.

    >>> import nrtpy
    >>> nrtpy.memory_stats(0).bytes_limit > 0
    True
    """
    core_id = _nrtpy.Nrtpy._check_core_id(core_id)
    get_nrtpy_singleton()
    stats = _nrtpy.memory_stats(core_id)
    return MemoryStats(stats["bytes_used"], stats["bytes_limit"])


def runtime_info() -> dict[str, Any]:
    """Describe the libnrt in use, without starting the runtime.

    Keys: ``library`` (path of the loaded libnrt.so.1), ``emulated`` (True on
    the nrtpy emulator), ``version``, ``version_detail``, ``instance`` (the
    emulated instance profile, None on hardware), ``visible_cores``,
    ``total_cores``; beside the device memory of a core (``hbm_per_core``,
    bytes, None until the runtime has started), the host RAM that backs the
    emulator's: ``host_memory`` and ``host_memory_available`` (bytes,
    MemTotal and MemAvailable; None where unknown).
    """
    from nrtpy import _singleton

    info = _nrtpy.library_info()
    info["visible_cores"] = _nrtpy.Nrtpy.get_visible_neuron_core_count()
    info["hbm_per_core"] = (memory_stats(0).bytes_limit
                            if _singleton._runtime is not None else None)
    info["host_memory"] = _meminfo_bytes("MemTotal")
    info["host_memory_available"] = _meminfo_bytes("MemAvailable")
    return info


def _meminfo_bytes(key: str) -> int | None:
    """A ``<key>: <n> kB`` line of /proc/meminfo, in bytes."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name == key:
                    return int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
