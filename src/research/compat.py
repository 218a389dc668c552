"""Every private API of a third-party library the project relies on, in one place.

Each function wraps one use, with the reason no public API serves, so an upgrade that changes one
of them breaks here and in its test (tests/test_compat.py), not somewhere in a run. Importing
this module imports none of the libraries: each is imported where it is used.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import subprocess
from collections.abc import Callable, Iterable, Iterator
from typing import Any


def hydra_args_parser() -> argparse.ArgumentParser:
    """Hydra's own command-line parser: the CLI reads the flags (-m, --cfg, --help) exactly as
    `hydra.main` will, before composing anything. Hydra keeps it in `hydra._internal.utils`."""
    from hydra._internal.utils import get_args_parser

    return get_args_parser()


def hydra_basic_sweep_jobs(overrides: list[Any]) -> list[list[str]]:
    """The override list of every job Hydra's basic sweeper launches for parsed `overrides`, in
    its launch order (a sweep stopped by a signal records which jobs never started)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper.split_arguments(overrides, None)[0]


def hydra_apply_value_overrides(cfg: Any, overrides: list[Any]) -> None:
    """Apply parsed overrides that choose no config (`key=v`, `+key=v`, `++key=v`, `~key`) to a
    composed config as Hydra's composition does once the defaults list is merged, struct mode and
    error messages included. Hydra keeps that step in `ConfigLoaderImpl`, with no public API."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    ConfigLoaderImpl._apply_overrides_to_config(overrides, cfg)  # noqa: SLF001


def hydra_override_dirname(overrides: list[Any], settings: Any) -> str:
    """`hydra.job.override_dirname` for parsed task overrides, under the `override_dirname`
    settings (`kv_sep`, `item_sep`, `exclude_keys`) of `hydra.job.config`, as Hydra writes it."""
    from hydra._internal.config_loader_impl import get_overrides_dirname

    return get_overrides_dirname(
        overrides=overrides,
        kv_sep=settings.kv_sep,
        item_sep=settings.item_sep,
        exclude_keys=list(settings.exclude_keys),
    )


def hydra_run_job(cfg: Any, task: Any, config_dir: str) -> Any:
    """Run `task` on a composed config (with its `hydra` node) as Hydra runs a single job: the
    run dir named and created, .hydra/ saved, logging configured, HydraConfig set, Hydra's job
    callbacks called; returns Hydra's JobReturn. Hydra exposes `run_job` publicly but builds
    its context (config loader, callbacks, job name) only inside `hydra.main`."""
    from hydra import initialize_config_dir
    from hydra._internal.callbacks import Callbacks
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.utils import JobRuntime, run_job
    from hydra.types import HydraContext

    with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
        loader = GlobalHydra.instance().hydra.config_loader  # type: ignore[union-attr]
        context = HydraContext(config_loader=loader, callbacks=Callbacks(cfg))
        JobRuntime.instance().set("name", str(cfg.hydra.job.name))
        return run_job(
            task_function=task,
            config=cfg.copy(),
            job_dir_key="hydra.run.dir",
            job_subdir_key=None,
            hydra_context=context,
        )


def omegaconf_child(node: Any, key: Any) -> Any:
    """The child node of a DictConfig without resolving or converting it (nested DictConfigs
    and ListConfigs stay themselves), for walking a config that may hold interpolations."""
    return node._get_node(key)  # noqa: SLF001


def lightning_reruns_command_line(strategy: Any) -> bool:
    """True when Lightning starts this node's other ranks by re-running `sys.argv` (its
    subprocess script launcher), which inside a sweep would re-run the whole sweep per rank."""
    from lightning.pytorch.strategies.launchers import _SubprocessScriptLauncher

    return isinstance(getattr(strategy, "launcher", None), _SubprocessScriptLauncher)


# The hooks Lightning calls once per batch, only through its callback dispatch (other hooks, such
# as state_dict, are also called directly and must stay methods).
LIGHTNING_PER_BATCH_HOOKS = (
    "on_train_batch_start",
    "on_before_backward",
    "on_after_backward",
    "on_before_optimizer_step",
    "on_before_zero_grad",
    "on_train_batch_end",
    "on_validation_batch_start",
    "on_validation_batch_end",
    "on_test_batch_start",
    "on_test_batch_end",
    "on_predict_batch_start",
    "on_predict_batch_end",
)


def lightning_skip_idle_batch_hooks(callbacks: Iterable[Any]) -> None:
    """Take each per-batch hook that does nothing out of Lightning's dispatch, by setting it to
    None on the instance: a hook a callback inherits unchanged from `Callback`, and the
    `on_train_batch_end` of a `ModelCheckpoint` that saves neither by step count nor by time
    (it checks its state and returns, 15 us a step under Lightning's simple profiler).
    Lightning calls every hook on every callback inside a profiler context named after it, a
    few microseconds whether it does anything or not: about 70 calls a training step with a
    default run's eleven callbacks. Its dispatch (`trainer/call.py`) skips a hook attribute
    that is not callable; no public switch does."""
    from lightning.pytorch.callbacks import Callback, ModelCheckpoint

    for callback in callbacks:
        for name in LIGHTNING_PER_BATCH_HOOKS:
            if getattr(type(callback), name, None) is getattr(Callback, name):
                setattr(callback, name, None)
        if (
            isinstance(callback, ModelCheckpoint)
            and callback._every_n_train_steps < 1  # noqa: SLF001
            and callback._train_time_interval is None  # noqa: SLF001
        ):
            callback.on_train_batch_end = None


def lightning_cuda_peak_flops(chip: str) -> dict[Any, float]:
    """Lightning's peak FLOP/s by dtype for one chip of its GPU table, keyed as its
    `get_available_flops` names chips ("h100 sxm"), for a GPU whose name it fails to read. Only
    the lookup by device is public; the table is `_CUDA_FLOPS`."""
    from lightning.fabric.utilities.throughput import _CUDA_FLOPS

    return _CUDA_FLOPS[chip]


@functools.cache
def lightning_log_skips_same_device_moves() -> None:
    """Make `self.log` skip moving a logged value's accumulator to the device it is already on.

    Lightning's `_ResultCollection.log` calls `_ResultMetric.to(value.device)` on every call, and
    that walks the accumulator's whole `__dict__` with `apply_to_collection`, deep-copying its
    metadata: a `self.log` of a scalar took 519 us with it and 102 us without on a 2-core CPU
    (`benchmarks/self_log_cost.py`), paid for each of the six metrics a default run logs at
    an epoch's end. The move is skipped only where every tensor it would move is already on that
    device; a logged torchmetrics `Metric`, or any other call, moves as before. No public switch
    exists. Patched once per process (the class is shared by every trainer in it)."""
    from lightning.pytorch.trainer.connectors.logger_connector.result import _ResultMetric

    move = _ResultMetric.to

    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and len(args) == 1 and _tensors_all_on(self.__dict__, args[0]):
            return self
        return move(self, *args, **kwargs)

    _ResultMetric.to = to


def _tensors_all_on(fields: dict[str, Any], device: Any) -> bool:
    """Whether every tensor among `fields` (an accumulator's attributes, and the dicts and
    lists among them: its states, defaults, parameters and buffers) is on `device`; False for
    anything else that could hold one (a torchmetrics `Metric`)."""
    import torch

    if not isinstance(device, torch.device):
        return False
    for field in fields.values():
        for value in field.values() if isinstance(field, dict) else (field,):
            for item in value if isinstance(value, list | tuple) else (value,):
                if isinstance(item, torch.Tensor):
                    if item.device != device:
                        return False
                elif isinstance(item, torch.nn.Module):
                    return False
    return True


def lightning_checkpoint_saved_last(callback: Any) -> tuple[int, str]:
    """The global step and the path of a `ModelCheckpoint`'s latest save. Lightning keeps both
    (for its `save_last="link"`) but exposes neither; `last_model_path` is only set by
    `save_last`, and `best_model_path` may be an older save than the latest."""
    return callback._last_global_step_saved, callback._last_checkpoint_saved  # noqa: SLF001


@functools.cache
def lightning_model_checkpoint_with_save_hooks() -> type:
    """Lightning's `ModelCheckpoint` with two private steps of a save reachable under public
    names, for a subclass to change (`research.callbacks.last_checkpoint`): Lightning has no
    hook at the moment a checkpoint file is written, nor for the metrics a save point reads.

    - `save_point_metrics(trainer, metrics)`: the metrics a save point's file name and monitor
      read (`_monitor_candidates`); `metrics()` gives Lightning's.
    - `save_file(trainer, filepath, save)`: around the one call that writes a checkpoint and
      updates the callback's bookkeeping (`_save_checkpoint`); `save()` does Lightning's.

    One class, made once: every subclass and isinstance check sees the same base."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    class ModelCheckpointWithSaveHooks(ModelCheckpoint):
        def save_point_metrics(self, trainer: Any, metrics: Callable[[], Any]) -> Any:
            return metrics()

        def save_file(self, trainer: Any, filepath: str, save: Callable[[], None]) -> None:
            save()

        def _monitor_candidates(self, trainer: Any) -> Any:
            lightnings = functools.partial(super()._monitor_candidates, trainer)
            return self.save_point_metrics(trainer, lightnings)

        def _save_checkpoint(self, trainer: Any, filepath: str) -> None:
            lightnings = functools.partial(super()._save_checkpoint, trainer, filepath)
            self.save_file(trainer, filepath, lightnings)

    return ModelCheckpointWithSaveHooks


def wandb_logger_started(logger: Any) -> bool:
    """Whether a Lightning WandbLogger has created its W&B run; its `experiment` property would
    start one, so finishing a job that never logged must look at the private attribute."""
    return logger._experiment is not None  # noqa: SLF001


def wandb_logger_without_anonymous(logger: Any) -> None:
    """Stop Lightning's WandbLogger from passing `anonymous=None` to `wandb.init`: W&B >= 0.19
    warns on any value of that retired setting, and Lightning always sends the key."""
    logger._wandb_init.pop("anonymous", None)  # noqa: SLF001


def wandb_cheaper_run_start() -> None:
    """The two patches below, applied before any W&B run starts: they make `wandb.init` cheaper
    and leave what the run records as it was."""
    wandb_skip_unstaged_launch_inputs()
    wandb_package_list_from_headers()


WANDB_LAUNCH_INPUTS = "wandb.sdk.launch.inputs.internal"


def wandb_skip_unstaged_launch_inputs() -> None:
    """Spare every W&B run start the import of W&B Launch (0.6-0.9 s here, about half of what
    W&B adds to a job's start) when no Launch input was staged. `Run._detect_and_apply_job_inputs`
    imports the module that holds the staged inputs on every `wandb.init`; inputs can only
    have been staged by code that imported that module already, so while it is not imported
    there is nothing to apply. Patched once per process; no setting switches it off."""
    import sys

    from wandb.sdk.wandb_run import Run

    original = Run._detect_and_apply_job_inputs  # noqa: SLF001
    if getattr(original, "skips_unstaged", False):
        return

    def detect_and_apply_job_inputs(self: Any) -> None:
        if WANDB_LAUNCH_INPUTS in sys.modules:
            original(self)

    detect_and_apply_job_inputs.skips_unstaged = True  # type: ignore[attr-defined]
    Run._detect_and_apply_job_inputs = detect_and_apply_job_inputs  # noqa: SLF001


def wandb_package_list_from_headers() -> None:
    """Spare every W&B run start the parse of each installed package's whole metadata file.
    For the run's requirements.txt, W&B lists the environment with `wandb.util.working_set`,
    whose `metadata["Name"]` and `version` each parse a package's METADATA whole, long
    description included: 0.1-0.18 s for the 203 packages here. Name and version are header
    lines at the top of that file, so reading up to the first blank line gives the same list.
    Patched once per process."""
    import wandb.util

    if getattr(wandb.util.working_set, "reads_headers", False):
        return

    def working_set() -> Iterator[Any]:
        from importlib import metadata

        for dist in metadata.distributions():
            text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
            name, version = _name_and_version(text)
            if name and version:  # nothing to list without both
                yield wandb.util.InstalledDistribution(key=name, version=version)

    working_set.reads_headers = True  # type: ignore[attr-defined]
    wandb.util.working_set = working_set


def _name_and_version(metadata_text: str) -> tuple[str | None, str | None]:
    """The `Name` and `Version` headers of a core-metadata file (headers end at a blank line)."""
    found: dict[str, str] = {}
    for line in metadata_text.splitlines():
        if not line.strip():
            break
        key, colon, value = line.partition(":")
        if colon and key in ("Name", "Version"):
            found.setdefault(key, value.strip())
    return found.get("Name"), found.get("Version")


def wandb_record() -> Any:
    """The protobuf class of one record of a W&B run file (`run-<id>.wandb`). W&B keeps it in
    its internal protocol module, and ships no reader of its own since its core moved to Go."""
    from wandb.proto.wandb_internal_pb2 import Record

    return Record


def optuna_trial(study: Any, number: int) -> Any:
    """A live `optuna.Trial` for trial `number` of `study` (loaded from its storage), as a job in
    another process needs to report intermediate values to it; Optuna only knows a trial's
    storage id inside the study."""
    import optuna

    storage = study._storage  # noqa: SLF001
    trial_id = storage.get_trial_id_from_study_id_trial_number(study._study_id, number)  # noqa: SLF001
    return optuna.trial.Trial(study, trial_id)


def optuna_live_trial(study: Any, frozen: Any) -> Any:
    """The live trial behind a running FrozenTrial (only a live one takes user attributes)."""
    import optuna

    return optuna.trial.Trial(study, frozen._trial_id)  # noqa: SLF001


def optuna_grid_point(trial: Any) -> tuple[int | None, Any]:
    """(grid point id, search space) a GridSampler stored on a trial, (None, None) for a trial of
    another sampler; Optuna keeps both in the trial's system attributes."""
    attrs = trial.system_attrs
    return attrs.get("grid_id"), attrs.get("search_space")


def optuna_grid_sampler(unvisited: Any, search_space: dict[str, Any], seed: int | None) -> Any:
    """Optuna's GridSampler whose choice of the grid points left to try goes through
    `unvisited(sampler, study, ids)` (ids: the points Optuna counts as left), and which leaves
    stopping to its caller: Optuna's own stops the study from `after_trial`, which only works
    inside `Study.optimize`, not under ask and tell."""
    import optuna

    class GridSampler(optuna.samplers.GridSampler):
        def _get_unvisited_grid_ids(self, study: Any) -> list[int]:
            return unvisited(self, study, super()._get_unvisited_grid_ids(study))

        def same_search_space(self, space: Any) -> bool:
            return self._same_search_space(space)

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            """Nothing to stop: the sweeper ends the search once `is_exhausted(study)`."""

    return GridSampler(search_space, seed=seed)


@contextlib.contextmanager
def submitit_first_task_results() -> Iterator[None]:
    """Within the block, `Job.results()` of a submitit job of several tasks waits for all of
    them and returns the first task's result alone; submitit keeps a job's tasks in its private
    `_sub_jobs` and raises for any task that left no result (one that died with its node)."""
    from submitit.core.core import Job

    stock = Job.results

    def first_task(job: Any) -> list[Any]:
        tasks = job._sub_jobs  # noqa: SLF001
        if not tasks:
            return stock(job)
        job.wait()
        return [tasks[0].result()]

    Job.results = first_task  # type: ignore[method-assign]
    try:
        yield
    finally:
        Job.results = stock  # type: ignore[method-assign]


@contextlib.contextmanager
def sbatch_tests_first() -> Iterator[None]:
    """Within the block, submitit's SLURM executor runs `sbatch --test-only` on each submission
    file before it submits it, and raises submitit's FailedJobError with sbatch's `error:` lines
    where it fails: a request no node can meet (more CPUs or memory than any node has) is refused
    then, where sbatch itself would queue it for ever on a cluster without EnforcePartLimits.
    submitit builds the command in its private `_make_submission_command`."""
    from submitit.core.utils import FailedJobError
    from submitit.slurm.slurm import SlurmExecutor

    stock = SlurmExecutor._make_submission_command

    def tested(executor: Any, path: Any) -> list[str]:
        command = stock(executor, path)
        trial = subprocess.run(
            [command[0], "--test-only", *command[1:]], capture_output=True, text=True, check=False
        )
        if trial.returncode != 0:
            said = (trial.stderr or trial.stdout).strip().splitlines()
            raise FailedJobError(
                "\n".join(ln if ln.startswith("sbatch:") else f"sbatch: error: {ln}" for ln in said)
            )
        return command

    SlurmExecutor._make_submission_command = tested  # type: ignore[method-assign]
    try:
        yield
    finally:
        SlurmExecutor._make_submission_command = stock  # type: ignore[method-assign]


def inductor_cpp_compilers() -> list[str]:
    """The C++ compilers torch.compile's inductor tries, in order, for CPU kernels ($CXX, else
    g++; clang++ on macOS): `torch._inductor.config.cpp.cxx` has no public accessor. Its None
    entry (a conda download, only with TORCH_INDUCTOR_INSTALL_GXX set) is left out."""
    from torch._inductor import config

    candidates = config.cpp.cxx if isinstance(config.cpp.cxx, (list, tuple)) else [config.cpp.cxx]
    return [str(c) for c in candidates if c is not None]
