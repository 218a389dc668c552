"""Top-level keys of train.yaml and eval.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, spec


@dataclass
class TrainRun(Schema):
    targets = ("@train",)
    task_name: str = "train"
    seed: int = spec(0, ge=0)
    tags: list[str] = spec([])
    group: str | None = None
    variant: str | None = None
    trial: int | None = None
    experiment: str | None = None
    train: bool = True
    test: bool = True
    ckpt_path: str | None = None


@dataclass
class EvalRun(Schema):
    targets = ("@eval",)
    task_name: str = "eval"
    run_dir: str = ""
    ckpt: str = "best"
    split: str = spec("test", choices=["test", "val"])
    overrides: list[str] = spec([])
