"""Top-level keys of train.yaml and eval.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import MAX_SEED, Schema, spec

MATMUL_PRECISIONS = ["highest", "high", "medium"]


@dataclass
class TrainRun(Schema):
    """The top-level keys of train.yaml, the entry config of `research-train`."""

    targets = ("@train",)
    required = ("data", "model", "loss", "optimizer", "trainer", "paths.log_dir", "seed")
    task_name: str = "train"
    """Names the runs' folder (<log_dir>/<task_name>/runs/...), the job's log file and W&B job type
    (without a variant); not part of the run id."""
    seed: int = spec(0, ge=0, le=MAX_SEED)
    """Seed of every RNG, 0 .. 2**32-1 (numpy's range). Part of the run id (config hash + seed)."""
    float32_matmul_precision: str | None = spec(None, choices=[*MATMUL_PRECISIONS, None])
    """Matrix products of float32 tensors (torch.set_float32_matmul_precision), applied for the
    job and put back after it: highest (full float32), high (TF32 on GPUs that have it, at a
    multiple of float32's peak rate) or medium (bf16); null: torch's default, highest. Mixed
    precision's bf16/fp16 products are unaffected. Part of the run id unless null (formerly
    trainer.float32_matmul_precision; runs that set it there keep their ids)."""
    tags: list[str] = spec([])
    """W&B tags of this run (research-ablate adds "ablation" and the ablation's name)."""
    group: str | None = None
    """W&B group of this run (research-ablate sets it to the ablation's name)."""
    variant: str | None = None
    """Name of the ablation variant this run belongs to (set by research-ablate); W&B job_type."""
    trial: int | None = None
    """Optuna trial number of this run (set by the hparams_search sweeper); in metrics.json, W&B."""
    experiment: str | None = None
    """Name of the experiment config in use (set by experiment/*.yaml), reported in metrics.json."""
    train: bool = True
    """Fit the model; false skips fitting (only the test stage runs, if `test` is set)."""
    test: bool = True
    """Test after fitting: the best checkpoint when one was saved, else the final weights."""
    ckpt_path: str | None = None
    """Resume: null, "last" (this config's newest unfinished run) or a path to a .ckpt file. With
    null, a run dir that already holds last.ckpt (a requeued job) continues from it."""


@dataclass
class EvalRun(Schema):
    """The top-level keys of eval.yaml: `research-eval` re-evaluates a finished run."""

    targets = ("@eval",)
    required = ("paths.log_dir", "run_dir")
    task_name: str = "eval"
    """Names the evaluations' folder (<log_dir>/<task_name>/runs/...) and the job's log file."""
    run_dir: str = ""
    """The run directory to evaluate (it holds .hydra/config.yaml and checkpoints/); required."""
    ckpt: str = "best"
    """Which checkpoint: best, last, or a path to a .ckpt file."""
    split: str = spec("test", choices=["test", "val"])
    """Split to evaluate: test or val."""
    overrides: list[str] = spec([])
    """Changes to the run's saved config for this evaluation only, as key=value strings of keys
    it has (+key=value adds one), e.g.
    'overrides=["data.eval_num_pairs=[32]","model.net.rope_scaling.rope_type=linear"]'."""
    trust_run_dir: bool = False
    """Build whatever the run's saved config names. By default only declared components are
    built: a run dir from elsewhere could otherwise run any code through a `_target_`."""
