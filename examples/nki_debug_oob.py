"""The nrtpy tutorial "Test and debug a NKI kernel end-to-end", with NKI.

An ``@nki.jit`` kernel gathers rows of ``src_tensor`` (128 x 512 float32)
through an indirect DMA whose indices (99999) are far past its 128 rows.
It compiles; with ``NKI_ARTIFACTS_DIR`` set before ``nki`` is imported the
NEFF is kept as ``kernel.neff``; running it fails with
``NRT_EXEC_OOB(1006)``, and ``NrtpyModel`` reproduces the failure from the
saved NEFF alone.  The fixed kernel (index 0) runs.  The access pattern
``[[F, P], [1, 1]]`` moves one element per partition, as the tutorial
writes it: the first column of the output is the gathered row's first
element, the rest the memset's zeros.

Run: ``python examples/nki_debug_oob.py`` (it works in a temporary folder).
"""

import os
import tempfile

import numpy as np

work = tempfile.mkdtemp(prefix="nrtpy-nki-oob-")
ARTIFACTS_DIR = os.path.join(work, "oob_neff")
os.environ["NKI_ARTIFACTS_DIR"] = ARTIFACTS_DIR  # before importing nki

from nrtpy import NrtError, NrtpyModel, NrtpyTensor, nki  # noqa: E402
from nrtpy.nki import isa as nisa  # noqa: E402
from nrtpy.nki import language as nl  # noqa: E402

P, F = 128, 512


def make_kernel(row: int):
    @nki.jit
    def dma_kernel(src_tensor):
        idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=idx, value=row)
        dst = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=dst, value=0.0)
        src_ap = src_tensor.ap(pattern=[[F, P], [1, 1]], offset=0,
                               vector_offset=idx, indirect_dim=0)
        dst_ap = dst.ap(pattern=[[F, P], [1, 1]], offset=0)
        nisa.dma_copy(dst=dst_ap, src=src_ap)
        out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, dst)
        return out
    return dma_kernel


src = np.ones((P, F), dtype=np.float32)

# Step 2: compile and run; the NEFF is kept though execution fails.
try:
    make_kernel(99999)(src)
    raise SystemExit("Execution succeeded (unexpected)")
except NrtError as e:
    print(f"Expected error: {type(e).__name__}: {e}")
    assert e.status_code == 1006 and e.status_name == "NRT_EXEC_OOB"
neff_path = os.path.join(ARTIFACTS_DIR, "kernel.neff")
print(f"\nNEFF saved: kernel.neff ({os.path.getsize(neff_path)} bytes)\n")

# Step 3: the saved NEFF alone reproduces the error.
model = NrtpyModel.load_from_neff(neff_path)
print("Model inputs:")
for name, info in model.input_tensors_info.items():
    print(f"  {name}: shape={info.shape}, size={info.size}")
print("Model outputs:")
for name, info in model.output_tensors_info.items():
    print(f"  {name}: shape={info.shape}, size={info.size}")
src_tensor = NrtpyTensor.from_numpy(src, name="src_tensor")
try:
    model(inputs={"src_tensor": src_tensor})
    raise SystemExit("Execution succeeded (unexpected)")
except NrtError as e:
    print(f"\nCaught NrtError:\n  {e}")
    assert e.status_code == 1006
del model

# Step 4: the fixed kernel gathers row 0.
result = make_kernel(0)(src)
print(f"\nKernel executed successfully. Output shape: {result.shape}")
print(f"Output sample (first row): {result[0, :5]}")
assert result.shape == (P, F)
assert np.all(result[:, 0] == 1.0) and np.all(result[:, 1:] == 0.0)
print("nki_debug_oob OK")
