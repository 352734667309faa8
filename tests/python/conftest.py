"""Shared fixtures of the nrtpy Python tests.

Every test process runs on its own emulated machine: NRTPY_EMU_NAMESPACE is
set (before nrtpy is imported) to a name derived from the PID, so parallel
test runs never compete for the emulated NeuronCores.  The emulator reads
its environment when a runtime starts (nrt_init), so a test that changes an
environment variable must do so while no runtime is active: the
``fresh_runtime`` fixture resets the runtime before and after the test and
restores every variable it or the test changed.

Child processes run on this machine, or on machines named after it
(``support.namespace``): at the end of the session, what killed children
left of those namespaces' folders is swept away.
"""

from __future__ import annotations

import gc
import os

# Before nrtpy is imported anywhere: this process's own emulated machine,
# and none of the caller's emulator settings.
NAMESPACE = f"pytest-{os.getpid()}"
os.environ["NRTPY_EMU_NAMESPACE"] = NAMESPACE
EMULATOR_VARS = (
    "NRTPY_EMU_INSTANCE",
    "NRTPY_EMU_HBM_PER_CORE",
    "NEURON_RT_VISIBLE_CORES",
    "NEURON_RT_NUM_CORES",
    "NEURON_LOGICAL_NC_CONFIG",
    "NEURON_RT_VIRTUAL_CORE_SIZE",
)
for _var in EMULATOR_VARS:
    os.environ.pop(_var, None)
os.environ.setdefault("NRTPY_LIBNRT", "emulator")

import pytest  # noqa: E402

import nrtpy  # noqa: E402
from nrtpy import _singleton  # noqa: E402
from support import quiet_reset, sweep_namespaces  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    """Leave no namespace folder behind (the emulator's lock root holds one
    per namespace while a process uses it): processes that end normally
    remove theirs, this one at its exit; what children killed by tests
    left in this session's namespaces (support.namespace) goes here."""
    sweep_namespaces()


@pytest.fixture
def fresh_runtime(monkeypatch):
    """No runtime active at the start; the environment restored at the end.

    Yields ``monkeypatch``: set emulator variables with it, then the first
    use of nrtpy starts a runtime that sees them.  configure() writes
    NEURON_RT_VISIBLE_CORES itself; it is restored too.
    """
    gc.collect()
    quiet_reset()
    saved = {var: os.environ.get(var) for var in EMULATOR_VARS}
    for var in EMULATOR_VARS:
        monkeypatch.delenv(var, raising=False)
    assert _singleton._runtime is None
    yield monkeypatch
    gc.collect()
    quiet_reset()
    # (monkeypatch restores only what it saw set; configure() and the test
    # may also have set variables that were unset before)
    for var, value in saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value


@pytest.fixture
def rt():
    """The process's runtime (started if needed)."""
    return nrtpy.get_nrtpy_singleton()
