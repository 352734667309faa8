"""One rank of a multi-process collective test (run as a script).

Usage: python collective_rank.py NEFF RANK WORLD INPUT.npy OUT_PREFIX
                                 [CORE [EXECUTIONS]]
Loads NEFF with cc_enabled=True as RANK of WORLD on CORE (default 0),
executes it EXECUTIONS times (default 1) on INPUT.npy and saves output k
as OUT_PREFIX<k>.npy.  An NrtError is printed as "NrtError <status>:
<message>", then "elapsed <seconds>" since the rank started to load (its
own clock, so that a test can bound it without counting the start of
Python on a loaded machine), with exit status 3.  With RANK_LINGER=<s>
in the environment, the rank stays that long before it exits (alive,
without executing).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from nrtpy import NrtError, NrtpyModel, NrtpyTensor, _dtypes


def main() -> int:
    neff, rank, world, inp, prefix = sys.argv[1:6]
    core = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    executions = int(sys.argv[7]) if len(sys.argv) > 7 else 1
    start = time.monotonic()
    try:
        model = NrtpyModel.load_from_neff(neff, core_id=core, cc_enabled=True,
                                          rank_id=int(rank),
                                          world_size=int(world))
        # (.npy files store ml_dtypes types as raw void: view them back)
        want = _dtypes.to_numpy(model.input_tensors_info["x"].dtype)
        x = NrtpyTensor.from_numpy(np.load(inp).view(want), name="x",
                                   core_id=core)
        for _ in range(executions):
            out = model(inputs={"x": x})
    except NrtError as e:
        print(f"NrtError {e.status_code}: {e}", flush=True)
        print(f"elapsed {time.monotonic() - start:.3f}", flush=True)
        return 3
    for k, v in enumerate(out.values()):
        np.save(f"{prefix}{k}.npy", v.numpy())
    time.sleep(float(os.environ.get("RANK_LINGER", "0")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
