"""Read what a `research-train -m hparams_search=optuna` search leaves behind: its sweep dirs
and its Optuna study."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna


def sweeps(root: Path) -> list[Path]:
    """Multirun folders under `root`, oldest first."""
    return sorted((root / "logs" / "train" / "multiruns").glob("*"))


def study(root: Path) -> optuna.Study:
    """The one study stored under `root`."""
    (db,) = (root / "logs" / "optuna").glob("*.db")
    return optuna.load_study(study_name=db.stem, storage=f"sqlite:///{db}")


def trial_runs(root: Path) -> dict[int, dict[str, Any]]:
    """Each trial's metrics.json, by trial number, over every sweep under `root`."""
    runs = [json.loads(p.read_text()) for s in sweeps(root) for p in s.glob("*/metrics.json")]
    return {r["trial"]: r for r in runs}
