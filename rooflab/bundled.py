"""Where rooflab's bundled data lies: the GPU specs (with their calibrated `measured/` specs),
the example workloads and the Hugging Face model configs that `hf:NAME` traces.

They are edited in the checkout's top-level folders `hardware_specs/`, `workloads/` and
`models/`. A built wheel carries those same folders inside the package, as
`rooflab/bundled_specs/`, `rooflab/bundled_workloads/` and `rooflab/bundled_models/` (setup.py
maps the package names onto the folders, so nothing is committed twice). Running from a checkout (an editable install, or the source tree on
`sys.path`) uses the checkout's folders; an installed wheel uses its package data.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

# the folder above the package, and the names of each kind's folder there and in a wheel
_CHECKOUT = Path(__file__).resolve().parent.parent
_FOLDERS = {"specs": ("hardware_specs", "bundled_specs"),
            "workloads": ("workloads", "bundled_workloads"),
            "models": ("models", "bundled_models")}


def _folder(kind: str) -> Path:
    """The directory holding one kind of bundled data (`specs`, `workloads` or `models`)."""
    in_checkout, in_package = _FOLDERS[kind]
    # a checkout (its pyproject.toml beside the package) keeps the data in its top-level
    # folders; an editable install runs from there too and maps no data-only package
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / in_checkout).is_dir():
        return _CHECKOUT / in_checkout
    # a wheel unpacks to plain files, so the package's resources are a real directory
    return Path(str(resources.files("rooflab") / in_package))


SPEC_DIR = _folder("specs")
WORKLOAD_DIR = _folder("workloads")
MODEL_DIR = _folder("models")


def _in_folder(path: str, folder: Path, checkout_name: str) -> str | Path:
    """`path` as given where it exists; else the file of the same relative path in the bundled
    `folder` (spelled with or without the checkout's folder name in front), where that exists;
    else `path` as given, for the loader to report as not found."""
    p = Path(path)
    if p.exists() or p.is_absolute():
        return path
    parts = p.parts[1:] if p.parts[:1] == (checkout_name,) else p.parts
    if parts and ".." not in parts and folder.joinpath(*parts).is_file():
        return folder.joinpath(*parts)
    return path


def spec_file(path: str) -> str | Path:
    """A spec YAML named by path, found from anywhere rooflab runs: `measured/h200.yaml` and
    `hardware_specs/measured/h200.yaml` are the bundled calibrated spec unless a file of that
    path exists."""
    return _in_folder(path, SPEC_DIR, _FOLDERS["specs"][0])


def workload_file(name_or_path: str) -> str | Path:
    """A workload by path or by the stem of a bundled file (`rmsnorm`); a path that does not
    exist, such as `workloads/rmsnorm.yaml` outside the checkout, is the bundled file of that
    relative path where there is one."""
    if not name_or_path.endswith((".yaml", ".yml")) and not Path(name_or_path).exists():
        stem = WORKLOAD_DIR / f"{name_or_path}.yaml"
        if "/" not in name_or_path and stem.is_file():
            return stem
    return _in_folder(name_or_path, WORKLOAD_DIR, _FOLDERS["workloads"][0])


def model_file(path: str) -> str | Path:
    """A model config named by path, found from anywhere rooflab runs: `models/llama3-8b.json`
    is the bundled config unless a file of that path exists (bundled names are resolved by
    rooflab.trace.zoo)."""
    return _in_folder(path, MODEL_DIR, _FOLDERS["models"][0])


def datasheet_for_device(device_name: str, spec_dir: Path = SPEC_DIR) -> str | None:
    """The bundled datasheet spec's name for a GPU as torch names it ("NVIDIA H100 80GB HBM3"
    -> "h100-sxm"): the spec whose display name holds the device's model (H100, L40S, 4090,
    ...) and, where the model has several, its form factor (PCIe or SXM); None when no
    bundled spec is that GPU."""
    words = device_name.upper().replace("-", " ").split()
    models = [w for w in words if any(c.isdigit() for c in w) and w[0].isalpha()
              or w.isdigit() and len(w) == 4]
    if not models:
        return None
    form = "PCIE" if "PCIE" in words else "SXM"
    matches = [p.stem for p in sorted(spec_dir.glob("*.yaml")) if models[0] in
               str(yaml.safe_load(p.read_text()).get("display_name", "")).upper()
               .replace("-", " ").split()]
    if len(matches) > 1:
        matches = [m for m in matches if form.lower() in m] or matches
    return matches[0] if len(matches) == 1 else None
