"""Every private API of a third-party library the project relies on, in one place.

Each function wraps one use, with the reason no public API serves, so an upgrade that changes one
of them breaks here and in its test (tests/test_compat.py), not somewhere in a run. Importing
this module imports none of the libraries: each is imported where it is used.

The functions that change a library's behaviour (PATCHES) are applied only through
`apply_patches`, and `RESEARCH_VANILLA=1` turns every one of them off, so that an upgrade of a
library can be bisected against the library as released (docs: reference/compat.md).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
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


def hydra_record_override_dirname(hydra: Any, overrides: list[Any]) -> None:
    """Set `hydra.job.override_dirname` of a composed `hydra` node for parsed task `overrides`,
    under its `hydra.job.config.override_dirname` settings, as Hydra's composition does. Hydra
    1.4 makes it an interpolation of its `hydra_override_dirname` resolver over
    `hydra.overrides.task`, which is then already right; 1.3 writes the value, with a function
    it keeps in `hydra._internal.config_loader_impl`."""
    from omegaconf import OmegaConf

    if OmegaConf.is_interpolation(hydra.job, "override_dirname"):
        return
    from hydra._internal.config_loader_impl import get_overrides_dirname

    settings = hydra.job.config.override_dirname
    hydra.job.override_dirname = get_overrides_dirname(
        overrides=overrides,
        kv_sep=settings.kv_sep,
        item_sep=settings.item_sep,
        exclude_keys=list(settings.exclude_keys),
    )


def hydra_run_job(cfg: Any, task: Any, config_dir: str, allowed: Sequence[str]) -> Any:
    """Run `task` on a composed config (with its `hydra` node) as Hydra runs a single job: the
    run dir named and created, .hydra/ saved, logging configured, HydraConfig set, Hydra's job
    callbacks called; returns Hydra's JobReturn. Hydra exposes `run_job` publicly but builds
    its context (config loader, callbacks, job name) only inside `hydra.main`. `allowed`: what
    Hydra 1.4's execution allow-list lets the `hydra` node call (its job callbacks, built
    here, and its logging classes, which `run_job` configures from the context's field)."""
    from hydra import initialize_config_dir
    from hydra._internal.callbacks import Callbacks
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.utils import JobRuntime, run_job
    from hydra.types import HydraContext

    from research.utils.engine_versions import execution_whitelist, version_base

    with (
        initialize_config_dir(config_dir=config_dir, **version_base()),
        execution_whitelist(allowed),
    ):
        loader = GlobalHydra.instance().hydra.config_loader  # type: ignore[union-attr]
        context = HydraContext(config_loader=loader, callbacks=Callbacks(cfg))
        if "execution_whitelist" in {f.name for f in dataclasses.fields(HydraContext)}:
            context.execution_whitelist = list(allowed)
        JobRuntime.instance().set("name", str(cfg.hydra.job.name))
        return run_job(
            task_function=task,
            config=cfg.copy(),
            job_dir_key="hydra.run.dir",
            job_subdir_key=None,
            hydra_context=context,
        )


def hydra_config_header(text: str) -> dict[str, str | None]:
    """The header (`# @package ...`) of a config file's text, as Hydra's own config sources
    parse it, errors included; a config source returns it with each config. Hydra's parser is
    the base class's `ConfigSource._get_header_dict`, used by its file sources."""
    from hydra.plugins.config_source import ConfigSource

    return ConfigSource._get_header_dict(text)  # noqa: SLF001


def hydra_config_file_name(config_path: str) -> str:
    """A config's file name as Hydra's config sources name it (`.yaml` added; Hydra 1.4 refuses
    `.yml`): `ConfigSource._normalize_file_name`, which Hydra's own sources call."""
    from hydra.plugins.config_source import ConfigSource

    return ConfigSource._normalize_file_name(config_path)  # noqa: SLF001


def hydra_list_config_entry(
    source: Any, listed: list[str], path: str, name: str, results_filter: Any
) -> None:
    """Add one folder entry of a config source to `listed` as Hydra's sources list it (a group
    by name, a config without its extension, `__init__.py` and `__pycache__` left out):
    `ConfigSource._list_add_result`, which asks the source's `is_group` and `is_config`."""
    source._list_add_result(  # noqa: SLF001
        files=listed, file_path=path, file_name=name, results_filter=results_filter
    )


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

    _still_has(ModelCheckpoint, "_monitor_candidates", "_save_checkpoint")

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


def _still_has(cls: type, *methods: str) -> None:
    """Raise AttributeError unless `cls` still has each of `methods`: a subclass's override of
    a method that moved would never be called, silently."""
    for name in methods:
        if not callable(getattr(cls, name, None)):
            raise AttributeError(f"{cls.__module__}.{cls.__qualname__} has no method {name}")


def wandb_logger_started(logger: Any) -> bool:
    """Whether a Lightning WandbLogger has created its W&B run; its `experiment` property would
    start one, so finishing a job that never logged must look at the private attribute."""
    return logger._experiment is not None  # noqa: SLF001


def wandb_logger_without_anonymous(logger: Any) -> None:
    """Stop Lightning's WandbLogger from passing `anonymous=None` to `wandb.init`: W&B >= 0.19
    warns on any value of that retired setting, and Lightning always sends the key."""
    logger._wandb_init.pop("anonymous", None)  # noqa: SLF001


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

    _still_has(optuna.samplers.GridSampler, "_get_unvisited_grid_ids", "_same_search_space")

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


VANILLA = "RESEARCH_VANILLA"


def vanilla() -> bool:
    """Whether `RESEARCH_VANILLA` asks for the libraries as released: set to anything but empty
    or 0, no patch is applied."""
    return os.environ.get(VANILLA, "").strip() not in ("", "0")


@dataclasses.dataclass(frozen=True)
class Patch:
    """One change to a library's behaviour: the function of this module that makes it, where
    `apply_patches` makes it (its `point`), and what it does, why, and what it saves (the table
    of docs/pages/reference/compat.md)."""

    function: str
    point: str
    what: str
    why: str
    saves: str


PATCHES = (
    Patch(
        "lightning_log_skips_same_device_moves",
        "job",
        "`self.log` skips moving a logged value's accumulator to the device it is already on "
        "(Lightning's `_ResultMetric.to`, for the process)",
        "Lightning walks and deep-copies the accumulator's attributes at every `self.log`, "
        "even when no tensor would move",
        "519 µs -> 102 µs a `self.log` of a scalar on a 2-core CPU (benchmarks/self_log_cost.py), "
        "for each of the six values logged at an epoch's end",
    ),
    Patch(
        "lightning_skip_idle_batch_hooks",
        "trainer",
        "per-batch hooks a callback inherits empty, and the batch-end hook of a "
        "`ModelCheckpoint` that saves by epoch only, set to None on the callback",
        "Lightning calls every hook of every callback inside a profiler context: about 70 calls "
        "a step with a default run's eleven callbacks",
        "a few µs a call; 15 µs and 5.5 µs a step for the best and last checkpoints' "
        "batch-end hooks (Lightning's simple profiler)",
    ),
    Patch(
        "wandb_skip_unstaged_launch_inputs",
        "wandb",
        "`wandb.init` applies W&B Launch inputs only when W&B Launch's input module is imported "
        "(`Run._detect_and_apply_job_inputs`, for the process)",
        "`wandb.init` imports W&B Launch to apply inputs that only code which imported it "
        "could have staged",
        "0.6-0.9 s at each W&B run start",
    ),
    Patch(
        "wandb_package_list_from_headers",
        "wandb",
        "the package list of a W&B run's requirements.txt read from each package's Name and "
        "Version headers (`wandb.util.working_set`, for the process)",
        "W&B parses every installed package's whole metadata file, long description included",
        "0.10-0.18 s at each W&B run start (203 packages); the list is the same",
    ),
    Patch(
        "wandb_logger_without_anonymous",
        "wandb_logger",
        "Lightning's `WandbLogger` no longer passes `anonymous=None` to `wandb.init`",
        "W&B >= 0.19 warns on any value of that retired setting, and Lightning always sends it",
        "a warning at each W&B run start",
    ),
    Patch(
        "submitit_first_task_results",
        "slurm_launch",
        "during a SLURM launch, `Job.results()` of a job of several tasks is the first task's "
        "result (submitit's `Job.results`)",
        "submitit raises for any task that left no result (one that died with its node), "
        "though rank zero's result is the job's",
        "a job reported failed when rank zero finished it",
    ),
    Patch(
        "sbatch_tests_first",
        "slurm_launch",
        "during a SLURM launch, `sbatch --test-only` before each submission; a refusal is one "
        "line and exit 2 (submitit's `SlurmExecutor._make_submission_command`)",
        "sbatch queues a request no node can meet for ever on a cluster without EnforcePartLimits",
        "a job that would never start, queued",
    ),
)


def apply_patches(point: str, *targets: Any) -> contextlib.ExitStack:
    """Make every patch of PATCHES whose point is `point` (`job`: a job's start; `trainer`: a
    Trainer's callbacks; `wandb`: before a W&B run starts; `wandb_logger`: a WandbLogger;
    `slurm_launch`: around a submitit SLURM launch), on `targets`; none under
    `RESEARCH_VANILLA=1`. A patch made for a block (the submitit ones) lasts until the returned
    stack closes: `with apply_patches("slurm_launch"): ...`."""
    if point not in {patch.point for patch in PATCHES}:
        raise ValueError(f"no patch is made at {point!r}")
    with contextlib.ExitStack() as stack:
        if not vanilla():
            for patch in PATCHES:
                if patch.point == point:
                    made = globals()[patch.function](*targets)  # by name: tests replace them
                    if isinstance(made, contextlib.AbstractContextManager):
                        stack.enter_context(made)
        return stack.pop_all()
