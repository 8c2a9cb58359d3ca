"""rooflab: a roofline / memory-traffic simulator for GPU workloads, fused and unfused.

Data flows one way (docs/layout.md):
    hardware, workload  ->  schedule  ->  cost  ->  report / validate  ->  cli
The public Python API is re-exported from `rooflab.api`.
"""

__version__ = "0.1.0"
