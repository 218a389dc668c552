"""What produced a run: the code's git state and the versions of the packages that matter."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = (
    "research",
    "torch",
    "lightning",
    "hydra-core",
    "omegaconf",
    "wandb",
    "torchmetrics",
    "numpy",
    "scikit-learn",
    "torchvision",
    "transformers",
)


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def git_state(path: Path | None = None) -> dict[str, Any]:
    """Commit and dirtiness (modified or untracked files, ignored ones aside) of the checkout
    holding this package (None outside a git checkout)."""
    cwd = path or Path(__file__).resolve().parent
    commit = _git(["rev-parse", "HEAD"], cwd)
    # Untracked files count: a new module that is not committed yet changes results too.
    status = _git(["status", "--porcelain"], cwd) if commit else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def package_versions() -> dict[str, str]:
    """Installed versions of the packages whose behaviour can change a result."""
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
