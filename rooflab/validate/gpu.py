"""The GPU checks the CLI needs before validating or calibrating (torch imported lazily)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess

from rooflab.errors import RooflabError


def require(what: str) -> None:
    """RooflabError (one line, exit 2) unless torch, triton and a CUDA GPU are there."""
    try:
        import torch
        import triton  # noqa: F401
    except ImportError:
        raise RooflabError(f"{what} --gpu needs torch and triton: pip install -e '.[gpu]'") from None
    if not torch.cuda.is_available():
        raise RooflabError(f"{what} --gpu needs a CUDA GPU, and torch sees none")


def device_count() -> int:
    """How many CUDA GPUs torch sees."""
    import torch
    return torch.cuda.device_count()


def name() -> str:
    """The GPU's name as torch gives it ('NVIDIA H100 80GB HBM3')."""
    import torch
    return torch.cuda.get_device_name(0)


def slug() -> str:
    """The GPU's name for file names: 'h200', 'h100-80gb-hbm3', ..."""
    return name().lower().replace("nvidia ", "").replace(" ", "-")


def git_sha() -> str:
    """The commit measured: $ROOFLAB_GIT_SHA first (a copy of the tree on a GPU machine may
    carry a stale .git), else `git rev-parse HEAD` here; "" when neither answers."""
    sha = os.environ.get("ROOFLAB_GIT_SHA", "")
    if not sha:
        try:
            sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                 timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            sha = ""
    return sha


def today() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")


def provenance(command: str) -> dict:
    import torch
    import triton
    props = torch.cuda.get_device_properties(0)
    return {"gpu": props.name, "sm_count": props.multi_processor_count,
            "total_memory_gb": props.total_memory / 1e9, "torch": torch.__version__,
            "triton": triton.__version__, "cuda": str(torch.version.cuda),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": command, "git_sha": git_sha()}
