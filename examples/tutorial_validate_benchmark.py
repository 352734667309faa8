"""Validate a kernel against NumPy, benchmark it and capture a trace.

The emulator version of the nrtpy tutorial "Validate, benchmark, and trace
a kernel": an fp16 addition kernel with inputs ``a_input`` and ``b_input``,
compiled with ``nrtpy.neff.compile``.  Run:
``python examples/tutorial_validate_benchmark.py``.
"""

import json
import tempfile
from pathlib import Path

import numpy as np

import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor

work = Path(tempfile.mkdtemp(prefix="nrtpy-add-"))


def nki_tensor_add_kernel(a_input, b_input):
    return a_input + b_input


a = np.ones((4, 3), dtype=np.float16)
neff = nrtpy.neff.compile(nki_tensor_add_kernel, a, a,
                          path=work / "kernel.neff", name="kernel")
model = NrtpyModel.load_from_neff(neff)
print("Inputs:", list(model.input_tensors_info.keys()))
print("Outputs:", list(model.output_tensors_info.keys()))

# Step 1-2: validate against a NumPy reference.
test_cases = [
    ("ones+ones", np.ones((4, 3), np.float16), np.ones((4, 3), np.float16)),
    ("zeros+zeros", np.zeros((4, 3), np.float16), np.zeros((4, 3), np.float16)),
    ("neg+pos", np.full((4, 3), -3.0, np.float16), np.full((4, 3), 5.0, np.float16)),
    ("random", np.random.randn(4, 3).astype(np.float16),
     np.random.randn(4, 3).astype(np.float16)),
    ("large", np.full((4, 3), 1000.0, np.float16), np.full((4, 3), 2000.0, np.float16)),
]
passed = failed = 0
for name, a_data, b_data in test_cases:
    a_tensor = NrtpyTensor.from_numpy(a_data, name="a_input")
    b_tensor = NrtpyTensor.from_numpy(b_data, name="b_input")
    outputs = model(inputs={"a_input": a_tensor, "b_input": b_tensor})
    # The dtype travels with the tensor: this view is a no-op on nrtpy in C.
    result = list(outputs.values())[0].numpy().view(np.float16)
    expected = a_data + b_data
    try:
        np.testing.assert_allclose(result.astype(np.float32),
                                   expected.astype(np.float32),
                                   rtol=1e-3, atol=1e-3)
        print(f"  PASS: {name}")
        passed += 1
    except AssertionError as e:
        print(f"  FAIL: {name}\n    {e}")
        failed += 1
print(f"\nResults: {passed} passed, {failed} failed")
assert failed == 0

# Step 3: benchmark on the device and on the host.
a_tensor = NrtpyTensor.from_numpy(np.ones((4, 3), np.float16), name="a_input")
b_tensor = NrtpyTensor.from_numpy(np.ones((4, 3), np.float16), name="b_input")
device_stats = model.benchmark(inputs={"a_input": a_tensor, "b_input": b_tensor},
                               warmup_iter=10, benchmark_iter=100, mode="device")
print("\nDevice-side benchmark (NeuronCore execution only):")
print(f"  Mean:    {device_stats.mean_ms:.4f} ms")
print(f"  Min:     {device_stats.min_ms:.4f} ms")
print(f"  Max:     {device_stats.max_ms:.4f} ms")
print(f"  Std dev: {device_stats.std_dev_ms:.4f} ms")
print(f"  p50/p90/p99: {device_stats.p50_ms:.4f} / {device_stats.p90_ms:.4f} / "
      f"{device_stats.p99_ms:.4f} ms")
print(f"  Iterations: {device_stats.iterations}")
assert device_stats.iterations == 100

host_stats = model.benchmark(inputs={"a_input": a_tensor, "b_input": b_tensor},
                             warmup_iter=10, benchmark_iter=100, mode="host")
print("\nHost-side benchmark (total round-trip):")
print(f"  Mean:    {host_stats.mean_ms:.4f} ms")
print(f"  Min:     {host_stats.min_ms:.4f} ms")
print(f"  Overhead vs device: {host_stats.mean_ms - device_stats.mean_ms:.4f} ms")

# Step 4: a regression check against a saved baseline.  One execution takes
# well under a microsecond here, so a single mean moves by more than 10%
# with whatever else the machine does.  Measure in blocks and keep a low
# percentile of each (noise only ever adds time); call it a regression only
# when even the fastest block of the new run is more than 10% slower than
# the slowest block of the baseline: a real slowdown, never noise.
BLOCKS, PER_BLOCK, THRESHOLD = 10, 200, 1.10


def block_times(mode="device"):
    """The 10th percentile (ms) of each block of executions."""
    ins = {"a_input": a_tensor, "b_input": b_tensor}
    return [float(np.percentile(model.benchmark(
        inputs=ins, warmup_iter=10, benchmark_iter=PER_BLOCK,
        mode=mode).durations_ms, 10)) for _ in range(BLOCKS)]


baseline_path = work / "baseline_perf.json"
baseline_path.write_text(json.dumps({"block_p10_ms": block_times()}))
base = json.loads(baseline_path.read_text())["block_p10_ms"]
new = block_times()
ratio = float(np.median(new) / np.median(base))
bound = min(new) / max(base)  # the smallest slowdown the blocks allow
verdict = "REGRESSION" if bound > THRESHOLD else "OK"
print(f"\n{verdict}: {ratio:.2f}x of baseline (median of {BLOCKS} blocks "
      f"of {PER_BLOCK}: {np.median(new):.5f} ms; at least {bound:.2f}x, "
      f"threshold {THRESHOLD:.2f}x)")

# Step 5: capture a trace of one execution (Chrome trace-event JSON on the
# emulator: open it in https://ui.perfetto.dev or chrome://tracing).
trace = work / "kernel_trace.ntff"
model(inputs={"a_input": a_tensor, "b_input": b_tensor}, save_trace=True,
      ntff_name=str(trace))
events = json.loads(trace.read_text())["traceEvents"]
print(f"Trace saved to {trace} ({len(events)} events: "
      f"{sorted({e['name'] for e in events})})")
