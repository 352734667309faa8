"""nrtpy quickstart: device tensors on the emulated (or real) Neuron device.

Run with ``make demo``, or ``python examples/quickstart.py`` once nrtpy is
installed.  Every step below is an example of the nrtpy tensor API page.
"""

import numpy as np

import nrtpy
from nrtpy import NrtpyTensor


def section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 60 - len(title)))


info = nrtpy.runtime_info()
section("Runtime")
print(f"library        {info['library']}")
print(f"emulated       {info['emulated']}  (instance {info['instance']})")
print(f"version        {info['version']}")
print(f"visible cores  {info['visible_cores']} of {info['total_cores']}")

# -- Create, write, and read (the seed example, verbatim) -------------------
section("Create, write, and read")

# Allocate a device tensor from a NumPy array
data = np.random.randn(1, 10).astype(np.float32)
tensor = NrtpyTensor.from_numpy(data, name="input")
print(f"from_numpy     {tensor!r}")

# Overwrite in place (no reallocation)
new_data = np.zeros((1, 10), dtype=np.float32)
tensor.write_from_numpy(new_data)

# Read back to host
host_array = tensor.numpy()
print(f"numpy()        {host_array.dtype}{host_array.shape} = {host_array}")
assert np.array_equal(host_array, new_data)

# Read into an existing array: no new allocation on the host either.
out = np.empty_like(data)
tensor.write_from_numpy(data)
assert tensor.numpy(out=out) is out and np.array_equal(out, data)
print("numpy(out=)    read straight into a preallocated array")

# -- Dtypes travel with the tensor ----------------------------------------
section("Dtypes")
import ml_dtypes  # noqa: E402

for dt in (np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3, np.int64):
    src = np.linspace(-2, 2, 6).astype(dt)
    back = NrtpyTensor.from_numpy(src).numpy()
    print(f"{np.dtype(dt).name:14s} -> {back.dtype.name:14s} {back}")
    assert back.dtype == src.dtype and back.tobytes() == src.tobytes()

# -- Device memory ------------------------------------------------------------
section("Device memory")
before = nrtpy.memory_stats(0)
big = NrtpyTensor.from_numpy(np.ones((1024, 1024), dtype=np.float32), name="big")
during = nrtpy.memory_stats(0)
print(f"core 0 uses    {during.bytes_used - before.bytes_used} more bytes "
      f"for {big!r}")
nrtpy.get_nrtpy_singleton().free_tensor(big)
print(f"after free     {nrtpy.memory_stats(0).bytes_used - before.bytes_used} "
      f"bytes (limit {during.bytes_limit / 2**30:.0f} GiB per core)")

# -- Multiple cores (the seed example) -------------------------------------
section("Multiple cores")
import warnings  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # reset() warns that old tensors die
    nrtpy.reset()
nrtpy.configure(visible_cores=[0, 1])

# Allocate tensors on different cores
t0 = NrtpyTensor.from_numpy(data, name="core0_input", core_id=0)
t1 = NrtpyTensor.from_numpy(data, name="core1_input", core_id=1)
print(f"core {t0.core_id}         {t0!r}")
print(f"core {t1.core_id}         {t1!r}")

# -- Errors: a bad argument is Python's TypeError or ValueError, a runtime
# failure an NrtError with the runtime's status ------------------------------
section("Errors")
try:
    NrtpyTensor.from_numpy(data, core_id=7)
except ValueError as e:
    print(f"ValueError     {e}")
try:
    nrtpy.get_nrtpy_singleton().load_model("no-such-model.neff")
except nrtpy.NrtError as e:
    print(f"{type(e).__name__} status={e.status_code} ({e.status_name})")
    print(f"  {e}")
try:
    tensor.numpy()  # made before reset(): its runtime is gone
except nrtpy.NrtpyError as e:
    print(f"NrtpyError     {e}")

# -- Models: compile a kernel, validate, benchmark, trace -------------------
section("Models")
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import nrtpy.neff  # noqa: E402
from nrtpy import NrtpyModel  # noqa: E402


def kernel(a_input, b_input):
    return nrtpy.neff.gelu(a_input @ b_input) + 1.0


work = Path(tempfile.mkdtemp(prefix="nrtpy-quickstart-"))
a = np.random.randn(64, 128).astype(np.float32)
b = np.random.randn(128, 32).astype(np.float32)
neff = nrtpy.neff.compile(kernel, a, b, path=work / "kernel.neff")
print(f"compiled       {neff.name}: inputs "
      f"{[(i['name'], i['shape'], i['dtype']) for i in nrtpy.neff.inspect(neff)['inputs']]}")

model = NrtpyModel.load_from_neff(neff)
inputs = {"a_input": NrtpyTensor.from_numpy(a), "b_input": NrtpyTensor.from_numpy(b)}
result = model(inputs=inputs)["output_0"].numpy()
np.testing.assert_allclose(result, kernel(a, b), rtol=1e-4, atol=1e-4)
print(f"validated      output_0 {result.dtype}{result.shape} matches NumPy")

stats = model.benchmark(inputs, warmup_iter=5, benchmark_iter=50)
print(f"benchmark      {stats}")
print(f"               p50 {stats.p50_ms:.4f} ms, p99 {stats.p99_ms:.4f} ms (emulated device time)")

trace = work / "kernel.ntff"
model(inputs, save_trace=True, ntff_name=str(trace))
print(f"trace          {trace} (Chrome trace-event JSON: open it in https://ui.perfetto.dev)")

print("\nquickstart OK")
