"""The package list, which pyproject.toml cannot express: every package under rooflab/ (found,
so a new subpackage needs no entry here) plus the data-only packages. Three of those are mapped
onto the top-level folders where the bundled data is edited (hardware_specs/, workloads/,
models/), so a wheel carries them without a second copy in the tree; rooflab/bundled.py finds
them. Their files are listed in pyproject.toml, which holds every other setting."""

from setuptools import find_packages, setup

MAPPED = {"rooflab.bundled_specs": "hardware_specs", "rooflab.bundled_workloads": "workloads",
          "rooflab.bundled_models": "models"}
DATA_ONLY = [*MAPPED, "rooflab.bundled_specs.measured", "rooflab.report.vendor"]

setup(packages=find_packages(include=["rooflab", "rooflab.*"]) + DATA_ONLY, package_dir=MAPPED)
