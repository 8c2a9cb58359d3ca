"""Validation on a real GPU: generated Triton kernels, timing, calibration.

Only the modules that run kernels import torch/triton (`kernels/`, `bench`, `run`,
`calibrate`); `records` and `accuracy` are plain data so CI can check committed measurements
without a GPU.
"""
