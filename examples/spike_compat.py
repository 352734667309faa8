"""Code written for Spike and neuronx-cc, run unchanged on nrtpy.

Needs nrtpy's compat layer (``python -m nrtpy compat install``) and JAX,
which writes the HLO module here as nkipy would.  Like nkipy, it compiles in
a work directory with neuronx-cc's command line, then runs the NEFF through
Spike's classes and compares with JAX's own CPU result.
"""

import os
import subprocess
import tempfile

import jax
import numpy as np
from spike import SpikeModel, SpikeTensor


def mlp(x, w):
    return jax.nn.relu(x @ w)


rng = np.random.default_rng(0)
x = rng.standard_normal((8, 16), dtype=np.float32)
w = rng.standard_normal((16, 4), dtype=np.float32)

work = tempfile.mkdtemp()
os.chdir(work)
hlo = jax.jit(mlp).lower(x, w).compiler_ir("hlo").as_serialized_hlo_module_proto()
with open("hlo_module.pb", "wb") as f:
    f.write(hlo)
subprocess.run(["neuronx-cc", "compile", "--framework", "XLA", "hlo_module.pb",
                "--pipeline", "compile", "SaveTemps", "--target", "trn2",
                "--output=mlp.neff", "--lnc", "1"], check=True)

model = SpikeModel.load_from_neff(os.path.join(work, "mlp.neff"))
out = model({"x": SpikeTensor.from_numpy(x, "x"), "w": SpikeTensor.from_numpy(w, "w")})
result = out["output0"].numpy()
np.testing.assert_allclose(result, jax.jit(mlp)(x, w), rtol=1e-5, atol=1e-6)
print("inputs ", {k: (v.shape, v.dtype) for k, v in model.input_tensors_info.items()})
print("outputs", {k: (v.shape, v.dtype) for k, v in model.output_tensors_info.items()})
print("spike_compat OK")
