"""A folder of run dirs in the metrics.json / history.jsonl contract, with seeded random values.

Layout (mixed depths on purpose): a multirun of two lr variants x 3 seeds under
`multiruns/<time>/<job>/`, and an ablation-style folder of a named variant `wide`. Among them: a
diverged run, a failed run, a run with a corrupt metrics.json, a killed run (start marker only)
and `single` with one completed run.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from research.tracking.run_dir import STARTED_FILE

EPOCHS = 4


def write_run(
    run_dir: Path,
    seed: int,
    overrides: list[str],
    status: str = "completed",
    variant: str | None = None,
) -> dict[str, Any]:
    """A run dir as research-train leaves it; returns its metrics.json payload."""
    rng = np.random.default_rng([seed, zlib.crc32(run_dir.name.encode())])
    run_dir.mkdir(parents=True)
    config = {o.split("=")[0]: o.split("=")[1] for o in overrides if not o.startswith("seed=")}
    config_hash = f"{zlib.crc32(json.dumps(config, sort_keys=True).encode()):012x}"
    history = []
    for epoch in range(EPOCHS if status == "completed" else 2):
        history.append(
            {
                "epoch": epoch,
                "step": 10 * (epoch + 1),
                "time_s": 0.1 * epoch,
                "train/loss": float(rng.uniform(0.1, 2.0)),
                "val/loss": float(rng.uniform(0.1, 2.0)),
                "val/acc": float(rng.uniform(0.5, 1.0)),
            }
        )
    (run_dir / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
    final = dict(history[-1])
    final.pop("time_s")
    if status == "completed":
        final.update({"test/acc": float(rng.uniform(0.5, 1.0)), "test/loss": float(rng.uniform())})
    payload = {
        "status": status,
        "error": None if status == "completed" else f"{status}: something broke\nsecond line",
        "run_id": f"{config_hash}-s{seed}",
        "config_hash": config_hash,
        "seed": seed,
        "task_name": "train",
        "experiment": None,
        "variant": variant,
        "overrides": overrides,
        "config": {**config, "seed": seed},
        "monitor": "val/acc",
        "mode": "max",
        "best": {**max(history, key=lambda r: r["val/acc"]), "checkpoint": "checkpoints/best.ckpt"},
        "final": final,
        "wall_time_s": 1.5,
        "wandb": {"run_id": None, "project": "proj", "group": "grp", "job_type": "train"},
    }
    (run_dir / "metrics.json").write_text(json.dumps(payload))
    (run_dir / STARTED_FILE).write_text(json.dumps({"run_id": payload["run_id"]}))
    (run_dir / ".hydra").mkdir()
    (run_dir / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    return payload


@pytest.fixture(scope="session")
def runs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    sweep = root / "multiruns" / "2026-01-01_00-00-00-000000"
    job = 0
    for lr in ("0.1", "0.01"):
        for seed in range(3):
            status = "diverged" if (lr, seed) == ("0.1", 2) else "completed"
            overrides = ["debug=limit", f"optimizer.lr={lr}", f"seed={seed}"]
            overrides.append("trainer.enable_progress_bar=False")
            write_run(sweep / f"{job}_lr{lr}_s{seed}", seed, overrides, status)
            job += 1
    ablation = root / "ablations" / "widths" / "2026-01-02_00-00-00-000000"
    for seed in range(3):
        status = "failed" if seed == 2 else "completed"
        overrides = ["model.width=64", f"seed={seed}", "variant=wide", "group=widths"]
        write_run(ablation / f"{seed}_wide_s{seed}", seed, overrides, status, variant="wide")
    write_run(ablation / "3_single_s0", 0, ["model.width=8", "seed=0"], variant="single")
    corrupt = ablation / "4_wide_s3"
    write_run(corrupt, 3, ["seed=3", "variant=wide"], variant="wide")
    (corrupt / "metrics.json").write_text('{"status": "completed", "final": {')
    killed = ablation / "5_wide_s4"
    killed.mkdir()
    (killed / STARTED_FILE).write_text(json.dumps({"run_id": "0123456789ab-s4"}))
    (killed / ".hydra").mkdir()
    (killed / ".hydra" / "overrides.yaml").write_text("- seed=4\n- variant=wide\n")
    return root


def readable_runs(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(run dir, metrics.json) of every parseable metrics.json under `root`, read independently
    of the code under test."""
    found = []
    for path in sorted(root.rglob("metrics.json")):
        try:
            found.append((path.parent, json.loads(path.read_text())))
        except ValueError:
            continue
    return found


def read_metrics_files(root: Path) -> list[dict[str, Any]]:
    return [payload for _, payload in readable_runs(root)]


def expected_variant(payload: dict[str, Any]) -> str:
    """The fixture's variants spelled out: a named one, else its lr override with debug=limit."""
    if payload["variant"]:
        return payload["variant"]
    (lr,) = [o for o in payload["overrides"] if o.startswith("optimizer.lr=")]
    return f"debug=limit,{lr}"


def completed_values(root: Path, metric: str) -> dict[str, list[float]]:
    """variant -> the metric's values over the completed runs, straight from the files."""
    part, name = metric.split(".", 1)
    values: dict[str, list[float]] = {}
    for payload in read_metrics_files(root):
        if payload["status"] == "completed":
            values.setdefault(expected_variant(payload), []).append(payload[part][name])
    return values
