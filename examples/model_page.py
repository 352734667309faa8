"""The nrtpy model page's examples, on a NEFF written by nrtpy.neff.compile.

Run: ``python examples/model_page.py``.
"""

import tempfile
from pathlib import Path

import numpy as np

import nrtpy.neff
from nrtpy import NrtpyModel, NrtpyTensor

work = Path(tempfile.mkdtemp(prefix="nrtpy-model-"))
w = np.random.default_rng(0).standard_normal((10, 10)).astype(np.float32)


def layer(input):
    return np.tanh(input @ w)


nrtpy.neff.compile(layer, np.zeros((1, 10), np.float32),
                   path=work / "model.neff", output_names=["output"])

model = NrtpyModel.load_from_neff(work / "model.neff")
for name, info in model.input_tensors_info.items():
    print(f"{name}: shape={info.shape}, size={info.size}")

# Build an input tensor from a NumPy array
input_data = np.random.randn(1, 10).astype(np.float32)
input_tensor = NrtpyTensor.from_numpy(input_data, name="input")

# Execute — output tensors are allocated automatically and returned
outputs = model(inputs={"input": input_tensor})
result = outputs["output"].numpy()
np.testing.assert_allclose(result, np.tanh(input_data @ w), rtol=1e-5, atol=1e-6)
print("output matches NumPy:", result[0, :4])

# Device-side timing (most accurate for kernel latency)
stats = model.benchmark(inputs={"input": input_tensor}, warmup_iter=5,
                        benchmark_iter=100)
print(f"Mean: {stats.mean_ms:.4f} ms")
print(f"Min: {stats.min_ms:.4f} ms, Max: {stats.max_ms:.4f} ms")
print(f"Std dev: {stats.std_dev_ms:.4f} ms")

# Host-side timing (includes host-device overhead)
host_stats = model.benchmark(inputs={"input": input_tensor}, warmup_iter=5,
                             benchmark_iter=100, mode="host")
print(host_stats)
