"""``neuronxcc.nki.isa.constants``: the ISA's enumerations."""

from nrtpy.nki.isa import (dge_mode, engine, matmul_perf_mode, nc_version,  # noqa: F401
                           oob_mode, reduce_cmd)
