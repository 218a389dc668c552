"""Lightning's Trainer, callbacks and loggers, as far as the shipped configs set them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from research.config.schema import Schema, fail, spec

PRECISIONS = [
    "32-true",
    "32",
    32,
    "16-mixed",
    "bf16-mixed",
    "16-true",
    "bf16-true",
    "64-true",
    "64",
    64,
    "16",
    16,
    "bf16",
]
ACCELERATORS = ["auto", "cpu", "gpu", "cuda", "mps", "tpu"]


@dataclass
class Trainer(Schema):
    targets = ("lightning.pytorch.Trainer", "lightning.Trainer")
    accelerator: str = spec("auto", choices=ACCELERATORS)
    devices: int | str | list[int] = "auto"
    num_nodes: int = spec(1, ge=1)
    strategy: str = "auto"
    precision: str | int | None = spec(None, choices=[*PRECISIONS, None])
    min_epochs: int | None = spec(None, ge=0)
    max_epochs: int | None = spec(None, ge=-1)
    max_steps: int = spec(-1, ge=-1)
    max_time: str | None = None
    val_check_interval: float | int | None = spec(None, gt=0)
    check_val_every_n_epoch: int | None = spec(1, ge=1)
    log_every_n_steps: int | None = spec(None, ge=1)
    gradient_clip_val: float | None = spec(None, ge=0.0)
    gradient_clip_algorithm: str | None = spec(None, choices=["norm", "value", None])
    accumulate_grad_batches: int = spec(1, ge=1)
    deterministic: bool | str | None = None
    benchmark: bool | None = None
    fast_dev_run: bool | int = False
    overfit_batches: float | int = spec(0.0, ge=0)
    limit_train_batches: float | int | None = spec(None, ge=0)
    limit_val_batches: float | int | None = spec(None, ge=0)
    limit_test_batches: float | int | None = spec(None, ge=0)
    num_sanity_val_steps: int | None = spec(None, ge=-1)
    enable_progress_bar: bool | None = None
    enable_model_summary: bool | None = None
    enable_checkpointing: bool | None = None
    profiler: str | None = spec(None, choices=["simple", "advanced", "pytorch", None])
    detect_anomaly: bool = False
    sync_batchnorm: bool = False
    use_distributed_sampler: bool = True
    reload_dataloaders_every_n_epochs: int = spec(0, ge=0)
    plugins: Any = None

    def check(self, at: str) -> None:
        if self.max_epochs == 0:
            fail(
                at,
                "max_epochs",
                "=0 trains nothing; to only test a checkpoint use train=false "
                "ckpt_path=<file> (or research-eval run_dir=<run>); -1 trains until stopped",
            )
        if isinstance(self.fast_dev_run, int) and self.fast_dev_run < 0:
            fail(at, "fast_dev_run", f"={self.fast_dev_run} must be a bool or a count >= 0")


@dataclass
class ModelCheckpoint(Schema):
    targets = ("lightning.pytorch.callbacks.ModelCheckpoint",)
    monitor: str | None = None
    mode: str = spec("min", choices=["min", "max"])
    filename: str | None = None
    save_last: bool | str | None = None
    save_top_k: int = spec(1, ge=-1)
    auto_insert_metric_name: bool = True
    every_n_epochs: int | None = spec(None, ge=0)
    every_n_train_steps: int | None = spec(None, ge=0)
    save_weights_only: bool = False
    save_on_train_epoch_end: bool | None = None
    verbose: bool = False


@dataclass
class EarlyStopping(Schema):
    targets = ("lightning.pytorch.callbacks.EarlyStopping",)
    monitor: str = "val/loss"
    mode: str = spec("min", choices=["min", "max"])
    patience: int = spec(3, ge=0)
    min_delta: float = spec(0.0, ge=0.0)
    check_finite: bool = True


@dataclass
class LearningRateMonitor(Schema):
    targets = ("lightning.pytorch.callbacks.LearningRateMonitor",)
    logging_interval: str | None = spec(None, choices=["step", "epoch", None])
    log_momentum: bool = False


@dataclass
class Wandb(Schema):
    targets = ("lightning.pytorch.loggers.WandbLogger",)
    project: str | None = None
    entity: str | None = None
    name: str | None = None
    group: str | None = None
    job_type: str | None = None
    tags: list[str] | None = None
    notes: str | None = None
    mode: str = spec("offline", choices=["offline", "online", "disabled", "shared"])
    log_model: bool | str = False
    id: str | None = None
    save_dir: str | None = "."
    settings: dict | None = None  # wandb.Settings fields, e.g. x_transaction_log_flush_interval


@dataclass
class CSV(Schema):
    targets = ("lightning.pytorch.loggers.CSVLogger",)
    name: str | None = "lightning_logs"
    save_dir: str | None = None
    flush_logs_every_n_steps: int = spec(100, ge=1)


@dataclass
class SLURMEnvironment(Schema):
    targets = ("lightning.pytorch.plugins.environments.SLURMEnvironment",)
    auto_requeue: bool = True
    requeue_signal: Any = None
