"""Lightning's Trainer, callbacks and loggers, as far as the shipped configs set them."""

from __future__ import annotations

import re
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
    """lightning.pytorch.Trainer; the run adds callbacks, loggers and default_root_dir (torch's
    float32 matmul precision, which the Trainer does not take, is the top-level
    `float32_matmul_precision`)."""

    targets = ("lightning.pytorch.Trainer", "lightning.Trainer")
    accelerator: str = spec("auto", choices=ACCELERATORS)
    """Hardware to run on; auto picks an available GPU (CUDA, MPS) or TPU, else the CPU."""
    devices: int | str | list[int] = "auto"
    """Devices per node: a count, a list of indices, -1 for all, or auto (per accelerator)."""
    num_nodes: int = spec(1, ge=1)
    """Machines for distributed training (with a multi-node launcher such as SLURM)."""
    strategy: str = "auto"
    """How training is spread over devices: auto, ddp, fsdp, ... (trainer=ddp and fsdp set it)."""
    precision: str | int | None = spec(None, choices=[*PRECISIONS, None])
    """Numeric precision, e.g. 32-true, 16-mixed or bf16-mixed (AMP); null: 32-true."""
    min_epochs: int | None = spec(None, ge=0)
    """Train at least this many epochs, even if a callback asks to stop; null: no minimum."""
    max_epochs: int | None = spec(None, ge=-1)
    """Stop after this many epochs; -1 trains until stopped (max_steps, max_time, a callback);
    null: 1000 unless max_steps is set. 0 is refused (it would train nothing)."""
    max_steps: int = spec(-1, ge=-1)
    """Stop after this many optimizer steps; -1: no step limit. 0 is refused (it would train
    nothing)."""
    max_time: str | dict | None = None
    """Stop after this much wall-clock time: "DD:HH:MM:SS" or a dict such as {hours: 12};
    null: no limit."""
    val_check_interval: float | int | None = spec(None, gt=0)
    """Validate after this fraction of an epoch (float) or this many training batches (int);
    null: once per epoch. Mid-epoch validation saves a checkpoint after each one."""
    check_val_every_n_epoch: int | None = spec(1, ge=1)
    """Validate every n epochs; null: by val_check_interval batches alone (an int then)."""
    log_every_n_steps: int | None = spec(None, ge=1)
    """Write logged training values to the loggers every this many steps; null: 50."""
    gradient_clip_val: float | None = spec(None, ge=0.0)
    """Clip gradients at this value (after AMP unscaling); null or 0: no clipping."""
    gradient_clip_algorithm: str | None = spec(
        None, choices=["norm", "value", None], id_if_changed=True
    )
    """norm: rescale the whole gradient to that norm; value: clamp each entry. null: norm."""
    accumulate_grad_batches: int = spec(1, ge=1)
    """Accumulate gradients over this many batches per optimizer step: a larger effective batch."""
    deterministic: bool | str | None = None
    """Use only deterministic torch algorithms (reproducible, may be slower); "warn" only warns."""
    benchmark: bool | None = None
    """Sets torch.backends.cudnn.benchmark (tunes conv kernels per input shape); null: leave it."""
    fast_dev_run: bool | int = False
    """Smoke test: n batches (true: 1) of train, val and test, without checkpoints or loggers."""
    overfit_batches: float | int = spec(0.0, ge=0)
    """Train and validate on this fraction (float) or count (int) of batches only, unshuffled."""
    limit_train_batches: float | int | None = spec(None, ge=0)
    """Fraction (float) or number (int) of training batches per epoch, per device; null: all.
    0 is refused (it would train nothing)."""
    limit_val_batches: float | int | None = spec(None, ge=0)
    """Fraction (float) or number (int) of validation batches per check, per device; null: all."""
    limit_test_batches: float | int | None = spec(None, ge=0)
    """Fraction (float) or number (int) of test batches, per device; null: all."""
    num_sanity_val_steps: int | None = spec(None, ge=-1)
    """Validation batches run before training, to fail early; -1: all, 0: none, null: 2."""
    enable_progress_bar: bool | None = None
    """Show Lightning's progress bar; null: true."""
    enable_model_summary: bool | None = None
    """Print the model summary (layers, parameter counts) at the start; null: true."""
    enable_checkpointing: bool | None = spec(None, id_if_changed=True)
    """Whether checkpoints are written; null: exactly when callbacks.model_checkpoint is
    configured (Lightning's own would add a default one, which writes files nobody asked for)."""
    profiler: str | None = spec(None, choices=["simple", "advanced", "pytorch", None])
    """Profile training to find bottlenecks: simple, advanced (cProfile) or pytorch; null: off."""
    detect_anomaly: bool = False
    """Autograd anomaly detection: names the op that made a NaN in backward (slow; debugging)."""
    sync_batchnorm: bool = spec(False, id_if_changed=True)
    """Turn BatchNorm layers into SyncBatchNorm, so batch statistics span every process."""
    use_distributed_sampler: bool = spec(True, id_if_changed=True)
    """Wrap the samplers in a DistributedSampler when distributed; false keeps the datamodule's."""
    reload_dataloaders_every_n_epochs: int = spec(0, ge=0, id_if_changed=True)
    """Rebuild the dataloaders every n epochs, for data that changes; 0: build them once."""
    plugins: Any = spec(None, id_if_changed=True)
    """Lightning plugins, e.g. a SLURMEnvironment node; each is instantiated, and atomic checkpoint
    writes are always added."""

    def check(self, at: str) -> None:
        for key, otherwise in _TRAINS_NOTHING_AT_ZERO.items():
            value = getattr(self, key)
            if value is not None and not isinstance(value, bool) and value == 0:
                fail(
                    at,
                    key,
                    f"={value} trains nothing; to only test a checkpoint use train=false "
                    f"ckpt_path=<file> (or research-eval run_dir=<run>); {otherwise}",
                )
        if isinstance(self.fast_dev_run, int) and self.fast_dev_run < 0:
            fail(at, "fast_dev_run", f"={self.fast_dev_run} must be a bool or a count >= 0")
        check_duration(at, "max_time", self.max_time)

    def check_run(self, at: str, target: str, config: dict[str, Any]) -> None:
        configured = has_model_checkpoint(config)
        if self.enable_checkpointing is True and not configured:
            fail(
                at,
                "enable_checkpointing",
                "=true but no callbacks.model_checkpoint is configured; add one (callbacks=default "
                "has it) or leave enable_checkpointing null",
            )
        if self.enable_checkpointing is False and configured:
            fail(
                at,
                "enable_checkpointing",
                "=false but callbacks.model_checkpoint is configured; remove it with "
                "callbacks.model_checkpoint=null, or leave enable_checkpointing null",
            )


# The Trainer limits at which a run trains nothing (and then tests untrained weights), with what
# the user may have meant instead.
_TRAINS_NOTHING_AT_ZERO = {
    "max_epochs": "-1 trains until stopped",
    "max_steps": "-1 (the default) sets no step limit",
    "limit_train_batches": "null (the default) trains on every batch",
}


def is_model_checkpoint(node: dict[str, Any] | None) -> bool:
    """Whether a callbacks node builds a ModelCheckpoint (the run's only checkpoint writer)."""
    return str((node or {}).get("_target_", "")).endswith("ModelCheckpoint")


def has_model_checkpoint(config: dict[str, Any]) -> bool:
    """Whether the run's callbacks include a ModelCheckpoint."""
    return any(is_model_checkpoint(node) for node in (config.get("callbacks") or {}).values())


# What Lightning's Timer accepts: a "DD:HH:MM:SS" string or timedelta keyword arguments.
_DURATION = re.compile(r"\d+:\d\d:\d\d:\d\d")
_DURATION_KEYS = ("weeks", "days", "hours", "minutes", "seconds", "milliseconds", "microseconds")


def check_duration(at: str, key: str, value: str | dict | None) -> None:
    """A duration Lightning's Timer accepts; it refuses anything else only once the run dir is
    made (or, for an unknown dict key, with a TypeError)."""
    valid = 'give "DD:HH:MM:SS" (e.g. "00:12:00:00") or a dict such as {hours: 12}'
    if isinstance(value, str) and not _DURATION.fullmatch(value.strip()):
        fail(at, key, f"={value!r} is not a duration; {valid}")
    if isinstance(value, dict):
        for unit, amount in value.items():
            if unit not in _DURATION_KEYS:
                fail(
                    at,
                    key,
                    f"={value!r}: {unit!r} is not a unit of time; use {', '.join(_DURATION_KEYS)}",
                )
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0:
                fail(at, key, f"={value!r}: {unit} must be a number >= 0; {valid}")


@dataclass
class ModelCheckpoint(Schema):
    """lightning.pytorch.callbacks.ModelCheckpoint; files go to <run dir>/checkpoints."""

    targets = ("lightning.pytorch.callbacks.ModelCheckpoint",)
    monitor: str | None = None
    """Logged metric that ranks checkpoints (also a search's objective and the run's "best"
    metrics); null: only the latest checkpoint is kept."""
    mode: str = spec("min", choices=["min", "max"])
    """Whether a lower (min) or higher (max) monitored value is better."""
    filename: str | None = None
    """File name without .ckpt; may format {epoch}, {step} or metrics. null: "{epoch}-{step}"."""
    save_last: bool | str | None = None
    """Also keep last.ckpt, the newest checkpoint (what resuming reads), written after every
    epoch (or validation) whether or not the metric improved; "link" is taken as true, since a
    link would point at the last improving checkpoint."""
    save_top_k: int = spec(1, ge=-1)
    """How many of the best checkpoints to keep; 0: none, -1: all."""
    auto_insert_metric_name: bool = True
    """Put "name=" before each metric in filename; false for names with "/" (they make folders)."""
    every_n_epochs: int | None = spec(None, ge=0, id_if_changed=True)
    """Epochs between checkpoints; 0: no top-k saving; null: every epoch, unless saving by steps."""
    every_n_train_steps: int | None = spec(None, ge=0, id_if_changed=True)
    """Save every this many training steps instead of per epoch; null or 0: off."""
    save_weights_only: bool = spec(False, id_if_changed=True)
    """Save the model's weights only, without optimizer and scheduler state: training cannot
    resume from such a file."""
    save_on_train_epoch_end: bool | None = None
    """Save at the end of the training epoch (true) or after validation (false); null: Lightning
    decides. The run forces false when validation runs mid-epoch."""
    verbose: bool = spec(False, id_if_changed=True)
    """Log each save, and each check where the monitored value missed the top k."""


@dataclass
class EarlyStopping(Schema):
    """lightning.pytorch.callbacks.EarlyStopping: stops when a metric stops improving."""

    targets = ("lightning.pytorch.callbacks.EarlyStopping",)
    monitor: str = "val/loss"
    """Logged metric watched for improvement."""
    mode: str = spec("min", choices=["min", "max"])
    """min: stop when the metric stops decreasing; max: when it stops increasing."""
    patience: int = spec(3, ge=0)
    """Validation checks (not epochs) without improvement before training stops."""
    min_delta: float = spec(0.0, ge=0.0)
    """Smallest change of the metric that counts as an improvement."""
    check_finite: bool = True
    """Stop at once when the metric becomes NaN or infinite."""


@dataclass
class LearningRateMonitor(Schema):
    """lightning.pytorch.callbacks.LearningRateMonitor: logs the learning rate."""

    targets = ("lightning.pytorch.callbacks.LearningRateMonitor",)
    logging_interval: str | None = spec(None, choices=["step", "epoch", None])
    """Log the learning rate every step or every epoch; null: at each scheduler's own interval."""
    log_momentum: bool = spec(False, id_if_changed=True)
    """Also log the momentum (Adam's first beta)."""


@dataclass
class Wandb(Schema):
    """Lightning's WandbLogger (research's writes one W&B row a step); the run sets save_dir (and a
    missing id or name)."""

    targets = (
        "research.tracking.wandb_logger.WandbLogger",
        "lightning.pytorch.loggers.WandbLogger",
    )
    project: str | None = None
    """W&B project of the run; null: $WANDB_PROJECT, else "lightning_logs"."""
    entity: str | None = None
    """W&B user or team that owns the project; null: your default entity."""
    name: str | None = None
    """Display name of the run; null: one made from the run's overrides and seed."""
    group: str | None = None
    """W&B group that gathers related runs (wandb.yaml passes the top-level group)."""
    job_type: str | None = None
    """W&B job type, to filter runs within a group (wandb.yaml: the variant, else task_name)."""
    tags: list[str] | None = None
    """W&B tags of the run (wandb.yaml passes the top-level tags)."""
    notes: str | None = None
    """A longer description of the run, shown in W&B."""
    mode: str = spec("offline", choices=["offline", "online", "disabled", "shared"])
    """offline writes locally (upload later with wandb sync), online syncs live, disabled turns
    W&B off, shared lets several processes log to one run."""
    log_model: bool | str = False
    """Upload checkpoints as W&B artifacts: true at the end of training, "all" as saved."""
    id: str | None = None
    """W&B run id, to log into an existing run; null: a new id, or the resumed run's."""
    save_dir: str | None = "."
    """Where W&B writes its files; the run replaces it with its run dir."""
    settings: dict | None = None
    """wandb.Settings fields passed to wandb.init, e.g. x_transaction_log_flush_interval."""


@dataclass
class CSV(Schema):
    """lightning.pytorch.loggers.CSVLogger: metrics.csv, hparams.yaml in save_dir/name/version."""

    targets = ("lightning.pytorch.loggers.CSVLogger",)
    name: str | None = "lightning_logs"
    """Subfolder of save_dir for the logs; null writes the versions into save_dir itself."""
    save_dir: str = "."
    """Where the logs go; the run replaces it with its run dir (the current directory when the
    node is instantiated on its own)."""
    flush_logs_every_n_steps: int = spec(100, ge=1)
    """Write buffered metrics to disk every this many steps."""


@dataclass
class SLURMEnvironment(Schema):
    """Lightning's SLURM cluster environment (a Trainer plugin), e.g. for its auto-requeue."""

    targets = ("lightning.pytorch.plugins.environments.SLURMEnvironment",)
    auto_requeue: bool = True
    """On the requeue signal, save a checkpoint and requeue the job (scontrol requeue);
    launcher=submitit_slurm turns it off, as submitit requeues."""
    requeue_signal: Any = None
    """The signal SLURM sends to ask for a requeue; null: SIGUSR1."""
