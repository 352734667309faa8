"""Debug a kernel that fails at run time: an out-of-bounds gather.

The emulator version of the nrtpy tutorial "Test and debug a kernel
end-to-end": a kernel gathers rows of ``src_tensor`` (128 x 512 float32)
with indices far past its 128 rows.  The NEFF compiles and loads; executing
it fails with ``NRT_EXEC_OOB(1006)``.  The fixed kernel gathers row 0 and
passes.  Run: ``python examples/tutorial_debug_oob.py``.
"""

import tempfile
from pathlib import Path

import numpy as np

import nrtpy.neff
from nrtpy import NrtError, NrtpyModel, NrtpyTensor

P, F = 128, 512
work = Path(tempfile.mkdtemp(prefix="nrtpy-oob-"))


def make_gather_kernel(row_index: int):
    idx = np.full(P, row_index, dtype=np.int32)  # a constant of the kernel

    def kernel(src_tensor):
        return np.take(src_tensor, idx, axis=0)

    return kernel


example = np.ones((P, F), dtype=np.float32)
oob_neff = nrtpy.neff.compile(make_gather_kernel(99999), example,
                              path=work / "oob_kernel.neff", name="kernel")
fixed_neff = nrtpy.neff.compile(make_gather_kernel(0), example,
                                path=work / "fixed_kernel.neff", name="kernel")

# Load the buggy NEFF and inspect its interface.
model = NrtpyModel.load_from_neff(oob_neff)
print("Model inputs:")
for name, info in model.input_tensors_info.items():
    print(f"  {name}: shape={info.shape}, size={info.size}")
print("Model outputs:")
for name, info in model.output_tensors_info.items():
    print(f"  {name}: shape={info.shape}, size={info.size}")
print()

src_tensor = NrtpyTensor.from_numpy(np.ones((P, F), dtype=np.float32),
                                    name="src_tensor")
try:
    outputs = model(inputs={"src_tensor": src_tensor})
    raise SystemExit("Execution succeeded (unexpected)")
except NrtError as e:
    print("Caught NrtError:")
    print(f"  {e}")
    assert e.status_code == 1006 and e.status_name == "NRT_EXEC_OOB"
    print()
    print("The indices (99999) exceed the source tensor's row count (128).")

# The fixed kernel gathers row 0 for every partition.
model = NrtpyModel.load_from_neff(fixed_neff)
outputs = model(inputs={"src_tensor": src_tensor})
result = list(outputs.values())[0].numpy()
print(f"\nExecution succeeded. Output shape: {result.shape}")
print(f"Output sample (first row): {result[0, :5]}")
assert result.shape == (P, F) and np.all(result == 1.0)
