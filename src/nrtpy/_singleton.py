"""The process-wide runtime: configure(), get_nrtpy_singleton(), reset().

libnrt allows one runtime per process, so nrtpy keeps one, created on first
use.  configure() chooses the visible NeuronCores before it starts; reset()
closes it, after which tensors and models made before are unusable (they
raise NrtpyError) and the next use starts a fresh runtime.

After fork() the child's copy of the runtime is the parent's: the extension
closes it in the child, whose old objects then raise NrtpyError naming
fork, and nothing starts a new runtime until the child calls reset().
"""

from __future__ import annotations

import atexit
import os
import threading
import warnings
from collections.abc import Iterable

from nrtpy._logging import logger
from nrtpy._nrtpy import Nrtpy, NrtpyError, _raise_if_forked

_runtime: Nrtpy | None = None
_lock = threading.Lock()


def get_nrtpy_singleton() -> Nrtpy:
    """Return the process's runtime, starting it (``nrt_init``) if needed."""
    rt = _runtime
    if rt is not None and not rt.is_closed:
        return rt
    return _start()


def _start() -> Nrtpy:
    global _runtime
    with _lock:
        if _runtime is not None:
            # The parent's runtime, closed by fork: reset() first, so that
            # no old object silently finds a new runtime.
            _raise_if_forked(_runtime)
        if _runtime is None or _runtime.is_closed:
            logger.info("Initializing Nrtpy Runtime")
            _runtime = Nrtpy()
            logger.info("Nrtpy Runtime initialized")
        return _runtime


def configure(visible_cores: Iterable[int] | None = None) -> None:
    """Choose the NeuronCores the runtime will claim when it starts.

    ``visible_cores`` is an iterable of core indices of this instance, one
    increasing range (``[2, 3]``, ``range(4)``), written to
    ``NEURON_RT_VISIBLE_CORES``; inside the process
    they are numbered from 0.  ``None`` leaves the choice as it is.  Must
    be called before the runtime starts (or after :func:`reset`).

    Raises:
        NrtpyError: the runtime is already active.
        TypeError: ``visible_cores`` is an int, a str or bytes, or holds
            something that is not an int (bools included).
        ValueError: ``visible_cores`` is empty, a core index is negative,
            repeated, or past the instance's cores, or the cores are not
            one increasing range (as the runtime requires).
    """
    with _lock:
        if _runtime is not None and not _runtime.is_closed:
            raise NrtpyError(
                "Nrtpy Error: Cannot configure: nrtpy runtime is already "
                "active. Call nrtpy.reset() first to close the runtime, then "
                "configure()."
            )
    if visible_cores is None:
        return
    if isinstance(visible_cores, int):
        raise TypeError(
            f"visible_cores must be an iterable, not int. Use "
            f"[{visible_cores}] or ({visible_cores},)"
        )
    if isinstance(visible_cores, (str, bytes, bytearray)):
        # Iterating would see characters (or byte values: b"0" is 48).
        raise TypeError(
            f"visible_cores must be an iterable of ints, not "
            f"{type(visible_cores).__name__}: {visible_cores!r:.200}. "
            f"Use a list, e.g. [0, 1]"
        )
    # The one core-id check of the extension, against the instance's
    # cores (the runtime would refuse the rest only when it starts).
    cores = [Nrtpy._check_core_id(core, "visible_cores", True)
             for core in visible_cores]
    if not cores:
        raise ValueError(
            "visible_cores is empty: give at least one core, or None to "
            "leave the choice as it is"
        )
    seen: set[int] = set()
    for core in cores:
        if core in seen:
            raise ValueError(f"visible_cores lists core {core} twice: "
                             f"{cores!r:.200}")
        seen.add(core)
    # The runtime claims one range of cores, and refuses anything else
    # only when it starts.
    if cores != list(range(cores[0], cores[0] + len(cores))):
        raise ValueError(f"visible_cores must be increasing and contiguous "
                         f"(one range of cores), got {cores!r:.200}")
    value = ",".join(map(str, cores))
    os.environ["NEURON_RT_VISIBLE_CORES"] = value
    logger.info("Set NEURON_RT_VISIBLE_CORES to %s", value)


def reset() -> None:
    """Close the runtime.  Objects created before become unusable.

    Using an old tensor or model afterwards raises NrtpyError; it never
    starts a new runtime.  A no-op when no runtime is active.  In a process
    forked from one with a runtime, drops the parent's (without closing
    it: it is the parent's) so that a new one may start.
    """
    global _runtime
    with _lock:
        rt, _runtime = _runtime, None
        if rt is None or rt.is_closed:
            return
        warnings.warn(
            "nrtpy.reset() called. All existing NrtpyTensor and NrtpyModel "
            "objects are now invalid and should not be used.",
            UserWarning,
            stacklevel=2,
        )
        rt.close()
        logger.info("Nrtpy Runtime closed")


def _after_fork_in_child() -> None:
    # Another thread of the parent may have held the lock at the fork; it
    # does not exist here.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _close_at_exit() -> None:
    # Close before the interpreter tears objects down: tensors freed later
    # see a closed runtime and never call into libnrt.
    global _runtime
    with _lock:
        rt, _runtime = _runtime, None
    if rt is not None:
        rt.close()
