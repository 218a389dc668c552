"""One test per private third-party API in research.compat, against the installed libraries: an
upgrade that changes one of them fails here, by name."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import lightning as L
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from omegaconf import OmegaConf
from torch.utils.data import DataLoader, TensorDataset

from research import compat
from research.callbacks.last_checkpoint import LastCheckpoint
from research.config.instantiate import HYDRA_HOOKS
from research.config.paths import config_dir
from research.utils.engine_versions import version_base
from tests.helpers.tiny_module import Tiny

Test = TypeVar("Test", bound=Callable[..., Any])
# Each function of research.compat, and the package whose internal its test reaches.
REACHED: dict[str, str] = {}


def _moved(package: str, functions: tuple[str, ...], err: Exception) -> NoReturn:
    """Fail in one line: the package, its installed version, and what no longer imports."""
    said = (str(err).splitlines() or [""])[0]
    named = ", ".join(f"research.compat.{f}" for f in functions)
    pytest.fail(
        f"{package} {version(package)}: {named} reaches an internal that moved "
        f"({type(err).__name__}: {said})",
        pytrace=False,
    )


def reaches(package: str, *functions: str) -> Callable[[Test], Test]:
    """Mark a test as the test of `functions`, which reach an internal of `package`: an
    ImportError or AttributeError in it fails in one line naming the package and version."""

    def mark(test: Test) -> Test:
        REACHED.update(dict.fromkeys(functions, package))

        @functools.wraps(test)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                return test(*args, **kwargs)
            except (ImportError, AttributeError) as err:
                moved = err
            _moved(package, functions, moved)  # outside the except: no traceback chained

        return checked  # type: ignore[return-value]

    return mark


@reaches("hydra-core", "hydra_args_parser")
def test_hydra_args_parser_reads_the_flags_hydra_main_reads():
    parsed = compat.hydra_args_parser().parse_args(["-m", "seed=1,2", "--cfg", "job"])
    assert parsed.multirun and parsed.cfg == "job" and parsed.overrides == ["seed=1,2"]


@reaches("hydra-core", "hydra_basic_sweep_jobs")
def test_hydra_basic_sweep_jobs_lists_the_jobs_in_launch_order():
    parsed = OverridesParser.create().parse_overrides(["a=1,2", "b=x,y"])
    jobs = compat.hydra_basic_sweep_jobs(parsed)
    assert jobs == [["a=1", "b=x"], ["a=1", "b=y"], ["a=2", "b=x"], ["a=2", "b=y"]]


@reaches("hydra-core", "hydra_apply_value_overrides")
def test_hydra_apply_value_overrides_sets_adds_and_removes_in_struct_mode():
    cfg = OmegaConf.create({"a": {"b": 1, "c": 2}})
    OmegaConf.set_struct(cfg, True)
    parsed = OverridesParser.create().parse_overrides(["a.b=5", "+a.d=3", "~a.c"])
    compat.hydra_apply_value_overrides(cfg, parsed)
    assert OmegaConf.to_container(cfg) == {"a": {"b": 5, "d": 3}}
    with pytest.raises(Exception, match="Could not override 'a.zz'"):
        compat.hydra_apply_value_overrides(
            cfg, OverridesParser.create().parse_overrides(["a.zz=1"])
        )


@reaches("hydra-core", "hydra_record_override_dirname")
def test_hydra_record_override_dirname_sorts_joins_and_excludes_as_hydra_does():
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        cfg = compose("train", return_hydra_config=True)
    settings = cfg.hydra.job.config.override_dirname
    settings.kv_sep, settings.item_sep, settings.exclude_keys = ":", "+", ["seed"]
    cfg.hydra.overrides.task = ["seed=3", "b=2", "a=1"]
    parsed = OverridesParser.create().parse_overrides(list(cfg.hydra.overrides.task))
    compat.hydra_record_override_dirname(cfg.hydra, parsed)
    assert cfg.hydra.job.override_dirname == "a:1+b:2"


@reaches("hydra-core", "hydra_run_job")
def test_hydra_run_job_runs_a_task_as_hydra_runs_one_job(tmp_path: Path):
    with initialize_config_dir(config_dir=str(config_dir()), **version_base()):
        cfg = compose("train", ["seed=7"], return_hydra_config=True)
    OmegaConf.update(cfg, "hydra.run.dir", str(tmp_path / "run"))
    seen = []
    done = compat.hydra_run_job(
        cfg, lambda task_cfg: seen.append(task_cfg.seed) or 42, str(config_dir()), HYDRA_HOOKS
    )
    assert done.return_value == 42 and seen == [7]
    assert (tmp_path / "run" / ".hydra" / "config.yaml").is_file()
    assert OmegaConf.load(tmp_path / "run" / ".hydra" / "overrides.yaml") == ["seed=7"]


@reaches("hydra-core", "hydra_config_header")
def test_hydra_config_header_is_the_package_header_as_hydra_reads_it():
    assert compat.hydra_config_header("# @package _global_\n\nx: 1") == {"package": "_global_"}
    assert compat.hydra_config_header("x: 1\n# @package a") == {"package": None}
    with pytest.raises(ValueError, match="Too many components"):
        compat.hydra_config_header("# @package a b")


@reaches("hydra-core", "hydra_config_file_name")
def test_hydra_config_file_name_adds_hydras_extension():
    assert compat.hydra_config_file_name("optimizer/adam") == "optimizer/adam.yaml"
    assert compat.hydra_config_file_name("train.yaml") == "train.yaml"


@reaches("hydra-core", "hydra_list_config_entry")
def test_hydra_list_config_entry_lists_groups_and_configs_as_hydra_does(tmp_path: Path):
    from hydra.core.object_type import ObjectType

    from hydra_plugins.research_configs.declared_source import DeclaredConfigSource

    (tmp_path / "group").mkdir()
    (tmp_path / "group" / "option.yaml").write_text("x: 1\n")
    (tmp_path / "__init__.py").write_text("")
    source = DeclaredConfigSource(provider="test", path=str(tmp_path))
    listed: list[str] = []
    for name in ("group", "__init__.py"):
        compat.hydra_list_config_entry(source, listed, name, name, None)
    compat.hydra_list_config_entry(source, listed, "group/option.yaml", "option.yaml", None)
    assert listed == ["group", "option"]
    only_groups: list[str] = []
    compat.hydra_list_config_entry(
        source, only_groups, "group/option.yaml", "option.yaml", ObjectType.GROUP
    )
    assert only_groups == []


@reaches("lightning", "lightning_reruns_command_line")
def test_lightning_reruns_command_line_only_for_its_subprocess_launcher():
    ddp = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", logger=False)
    single = L.Trainer(accelerator="cpu", devices=1, logger=False)
    assert compat.lightning_reruns_command_line(ddp.strategy)
    assert not compat.lightning_reruns_command_line(single.strategy)


@reaches("lightning", "wandb_logger_started", "wandb_logger_without_anonymous")
def test_wandb_logger_reads_and_changes_what_lightning_keeps_before_a_run_starts(tmp_path: Path):
    from lightning.pytorch.loggers import WandbLogger

    logger = WandbLogger(save_dir=str(tmp_path), mode="offline")
    assert "anonymous" in logger._wandb_init  # what Lightning sends today
    compat.wandb_logger_without_anonymous(logger)
    assert "anonymous" not in logger._wandb_init and logger._wandb_init["mode"] == "offline"
    assert not compat.wandb_logger_started(logger)


@pytest.mark.slow  # a W&B run started and finished: 4.5 s
@reaches("lightning", "wandb_logger_started", "wandb_logger_without_anonymous")
def test_wandb_logger_started_and_without_anonymous(tmp_path: Path):
    from lightning.pytorch.loggers import WandbLogger

    logger = WandbLogger(save_dir=str(tmp_path), mode="offline", settings={"silent": True})
    assert "anonymous" in logger._wandb_init  # what Lightning sends today
    compat.wandb_logger_without_anonymous(logger)
    assert "anonymous" not in logger._wandb_init
    assert not compat.wandb_logger_started(logger)
    logger.experiment.finish()
    assert compat.wandb_logger_started(logger)


_LAUNCH_PROBE = """
import sys, wandb
from research import compat
compat.wandb_skip_unstaged_launch_inputs()
compat.wandb_skip_unstaged_launch_inputs()  # a second call must not wrap the wrapper
applied = []
if sys.argv[1] == "staged":
    from wandb.sdk.launch.inputs import internal
    internal.StagedLaunchInputs.apply = lambda self, run: applied.append(run.id)
run = wandb.init(mode="offline", dir=sys.argv[2], settings=wandb.Settings(silent=True))
run.finish()
print(compat.WANDB_LAUNCH_INPUTS in sys.modules, applied == [run.id])
"""


@reaches("wandb", "wandb_skip_unstaged_launch_inputs")
def test_wandb_skip_unstaged_launch_inputs_reaches_what_it_patches(monkeypatch):
    """What the probe below runs in a process of its own, reached here (one line if moved)."""
    import wandb
    from wandb.sdk.wandb_run import Run

    Run._detect_and_apply_job_inputs  # noqa: B018 - reached (one line if it moved)
    called = []

    def stock(run: Any) -> None:  # in place of W&B's, which another test may have patched
        called.append(run)

    monkeypatch.setattr(Run, "_detect_and_apply_job_inputs", stock)
    compat.wandb_skip_unstaged_launch_inputs()
    assert Run._detect_and_apply_job_inputs is not stock
    monkeypatch.setitem(sys.modules, compat.WANDB_LAUNCH_INPUTS, sys.modules[__name__])
    Run._detect_and_apply_job_inputs("run")
    assert called == ["run"]  # with the module imported, W&B's own runs
    module = compat.WANDB_LAUNCH_INPUTS.removeprefix("wandb.").replace(".", "/")
    if not (Path(wandb.__file__).parent / f"{module}.py").is_file():
        raise ImportError(f"no module named {compat.WANDB_LAUNCH_INPUTS}")


@pytest.mark.parametrize(("staged", "expected"), [("none", "False False"), ("staged", "True True")])
@pytest.mark.slow
@reaches("wandb", "wandb_skip_unstaged_launch_inputs")
def test_wandb_skip_unstaged_launch_inputs_applies_inputs_only_where_some_can_be_staged(
    tmp_path: Path, staged: str, expected: str
):
    """A fresh process each: whether W&B Launch's module is imported is per process."""
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCH_PROBE, staged, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split("\n")[-2] == expected


@reaches("wandb", "wandb_package_list_from_headers")
def test_wandb_package_list_from_headers_lists_what_wandb_lists(monkeypatch):
    import wandb.util

    monkeypatch.setattr(wandb.util, "working_set", wandb.util.working_set)  # restored after
    listed_by_wandb = sorted((d.key, d.version) for d in wandb.util.working_set())
    compat.wandb_package_list_from_headers()
    patched = wandb.util.working_set
    compat.wandb_package_list_from_headers()  # a second call must not wrap the patch
    assert wandb.util.working_set is patched
    assert sorted((d.key, d.version) for d in wandb.util.working_set()) == listed_by_wandb
    assert len(listed_by_wandb) > 50  # torch, Lightning, W&B and what they need


def test_package_name_and_version_come_from_the_headers_only():
    metadata = "Metadata-Version: 2.1\r\nName: real\r\nVersion: 1.2\r\n\r\nName: fake\nVersion: 9"
    assert compat._name_and_version(metadata) == ("real", "1.2")
    assert compat._name_and_version("Name: only\n\nVersion: 3") == ("only", None)
    assert compat._name_and_version("") == (None, None)


@reaches("wandb", "wandb_record")
def test_wandb_record_parses_a_run_files_records():
    record = compat.wandb_record()()
    record.history.item.add(key="loss", value_json="0.5")
    again = compat.wandb_record()()
    again.ParseFromString(record.SerializeToString())
    assert again.WhichOneof("record_type") == "history"
    assert again.history.item[0].key == "loss"


@pytest.fixture
def study():
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study()


@reaches("optuna", "optuna_trial", "optuna_live_trial")
def test_optuna_trial_and_live_trial_reach_a_running_trial(study):
    asked = study.ask()
    trial = compat.optuna_trial(study, asked.number)
    trial.report(0.5, step=1)
    (frozen,) = study.get_trials(deepcopy=False)
    assert frozen.intermediate_values == {1: 0.5}
    compat.optuna_live_trial(study, frozen).set_user_attr("why", "test")
    assert study.get_trials()[0].user_attrs == {"why": "test"}


@reaches("optuna", "optuna_grid_sampler", "optuna_grid_point")
def test_optuna_grid_sampler_asks_which_points_are_left_and_never_stops_the_study(study):
    calls = []

    def unvisited(sampler, study_, left):
        calls.append(list(left))
        return left

    study.sampler = compat.optuna_grid_sampler(unvisited, {"x": [1, 2]}, seed=0)
    for _ in range(2):
        trial = study.ask()
        trial.suggest_categorical("x", [1, 2])
        study.tell(trial, 1.0)  # Optuna's own sampler would stop the study after the last point
    assert study.sampler.is_exhausted(study) and calls == [[]]
    grid_id, space = compat.optuna_grid_point(study.trials[0])
    assert grid_id in (0, 1) and study.sampler.same_search_space(space)


def test_importing_compat_imports_none_of_the_libraries():
    code = (
        "import sys, research.compat; "
        "assert not {'hydra', 'optuna', 'lightning'} & set(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _rank_zero_answers() -> int:
    import submitit

    if submitit.JobEnvironment().global_rank != 0:
        os._exit(9)  # this task dies, leaving no result, as with a node that failed
    return 7


@pytest.mark.slow  # submitit polls a local job's state every few seconds
@reaches("submitit", "submitit_first_task_results")
def test_submitit_first_task_results_survive_a_task_that_left_no_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import submitit

    # The tasks unpickle the function above: they must import this test module.
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[1]))
    executor = submitit.LocalExecutor(folder=tmp_path / "%j")
    executor.update_parameters(tasks_per_node=2, nodes=1, timeout_min=2)
    job = executor.submit(_rank_zero_answers)
    with compat.submitit_first_task_results():
        assert job.results() == [7]
    with pytest.raises(submitit.core.utils.UncompletedJobError):
        job.results()  # submitit's own reading: every task must have answered


@reaches("torch", "inductor_cpp_compilers")
def test_inductor_cpp_compilers_follow_inductors_setting():
    from torch._inductor import config

    with config.patch({"cpp.cxx": (None, "my-g++")}):
        assert compat.inductor_cpp_compilers() == ["my-g++"]
    assert compat.inductor_cpp_compilers()  # g++ or $CXX here


class CountsBatchEnds(L.Callback):
    def __init__(self) -> None:
        self.ends = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.ends += 1


@reaches("lightning", "lightning_skip_idle_batch_hooks")
def test_lightning_skip_idle_batch_hooks_nones_only_the_ones_that_do_nothing():
    counts, last = CountsBatchEnds(), LastCheckpoint(dirpath="checkpoints")
    by_steps = ModelCheckpoint(dirpath="checkpoints", every_n_train_steps=2)
    by_time = ModelCheckpoint(dirpath="checkpoints", train_time_interval=timedelta(minutes=5))
    compat.lightning_skip_idle_batch_hooks([counts, last, by_steps, by_time])
    kept = [h for h in compat.LIGHTNING_PER_BATCH_HOOKS if getattr(counts, h) is not None]
    assert kept == ["on_train_batch_end"]
    # ModelCheckpoint implements it, but saving by epoch only it returns at once: skipped.
    assert last.on_train_batch_end is None and last.on_before_backward is None
    # Saving by steps or by time, it is where the checkpoint is written: kept.
    assert callable(by_steps.on_train_batch_end) and callable(by_time.on_train_batch_end)


def _fit(
    folder: Path, skip: bool, **checkpoint: Any
) -> tuple[int, dict[str, list[float]], list[str]]:
    """Batch ends seen, the lrs LearningRateMonitor logged and the checkpoints written."""
    counts, lrs = CountsBatchEnds(), LearningRateMonitor()
    saves = ModelCheckpoint(dirpath=folder / "checkpoints", **checkpoint)
    trainer = L.Trainer(
        accelerator="cpu",
        max_epochs=2,
        logger=CSVLogger(folder / "csv"),
        log_every_n_steps=1,
        enable_progress_bar=False,
        callbacks=[counts, saves, lrs],
    )
    if skip:
        compat.lightning_skip_idle_batch_hooks(trainer.callbacks)
    torch.manual_seed(0)
    trainer.fit(Tiny(), DataLoader(TensorDataset(torch.randn(12, 2)), batch_size=4))
    return counts.ends, lrs.lrs, sorted(p.name for p in (folder / "checkpoints").iterdir())


@pytest.mark.parametrize(
    ("checkpoint", "files"),
    [
        ({}, ["epoch=1-step=6.ckpt"]),
        (
            {"every_n_train_steps": 2, "save_top_k": -1},
            [f"epoch={s // 4}-step={s}.ckpt" for s in (2, 4, 6)],
        ),
    ],
)
def test_lightning_skip_idle_batch_hooks_leaves_a_fit_unchanged(
    tmp_path: Path, checkpoint: dict[str, Any], files: list[str]
):
    skipped = _fit(tmp_path / "skipped", True, **checkpoint)
    assert skipped == _fit(tmp_path / "dispatched", False, **checkpoint)
    assert skipped[0] == 6
    assert skipped[2] == files


def _quiet_trainer(**trainer_args: Any) -> L.Trainer:
    """A CPU Trainer with no logger, progress bar or model summary, given `trainer_args`."""
    return L.Trainer(
        accelerator="cpu",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **trainer_args,
    )


def _fit_two_epochs(checkpoint: ModelCheckpoint) -> None:
    """Two epochs of three steps, saving through `checkpoint` only."""
    trainer = _quiet_trainer(max_epochs=2, callbacks=[checkpoint])
    trainer.fit(Tiny(), DataLoader(TensorDataset(torch.randn(12, 2)), batch_size=4))


@reaches("lightning", "lightning_checkpoint_saved_last")
def test_lightning_checkpoint_saved_last_is_the_step_and_path_of_the_latest_save(tmp_path: Path):
    checkpoint = ModelCheckpoint(dirpath=tmp_path, save_top_k=-1)
    _fit_two_epochs(checkpoint)
    assert compat.lightning_checkpoint_saved_last(checkpoint) == (
        6,
        str(tmp_path / "epoch=1-step=6.ckpt"),
    )


@reaches("lightning", "lightning_model_checkpoint_with_save_hooks")
def test_lightning_model_checkpoint_with_save_hooks_runs_them_at_every_save(tmp_path: Path):
    seen: list[tuple[str, Any]] = []

    class Recording(compat.lightning_model_checkpoint_with_save_hooks()):  # type: ignore[misc]
        def save_point_metrics(self, trainer: L.Trainer, metrics: Any) -> Any:
            lightnings = metrics()
            seen.append(("metrics", int(lightnings["step"])))
            return lightnings

        def save_file(self, trainer: L.Trainer, filepath: str, save: Any) -> None:
            save()
            seen.append(("file", Path(filepath).name if Path(filepath).is_file() else None))

    checkpoint = Recording(dirpath=tmp_path, save_top_k=-1)
    _fit_two_epochs(checkpoint)
    assert seen == [
        ("metrics", 3),
        ("file", "epoch=0-step=3.ckpt"),
        ("metrics", 6),
        ("file", "epoch=1-step=6.ckpt"),
    ]
    assert isinstance(checkpoint, ModelCheckpoint)
    assert compat.lightning_model_checkpoint_with_save_hooks() is type(checkpoint).__base__


@reaches("lightning", "lightning_cuda_peak_flops")
def test_lightning_cuda_peak_flops_is_a_chips_row_of_lightnings_table():
    h100 = compat.lightning_cuda_peak_flops("h100 sxm")
    assert h100[torch.bfloat16] == 989.4e12 and h100["tfloat32"] == 494.7e12
    with pytest.raises(KeyError):
        compat.lightning_cuda_peak_flops("no such chip")


@reaches("lightning", "lightning_log_skips_same_device_moves")
def test_lightning_log_skips_same_device_moves_only_where_nothing_would_move(monkeypatch):
    from lightning.pytorch.trainer.connectors.logger_connector import result

    compat.lightning_log_skips_same_device_moves()
    walks = []
    walk = result.apply_to_collection
    monkeypatch.setattr(
        result, "apply_to_collection", lambda *a, **k: walks.append(1) or walk(*a, **k)
    )
    results = result._ResultCollection(training=False)
    results.batch = None
    results.log("on_validation_epoch_end", "val/acc", torch.tensor(0.5), batch_size=1)
    metric = results["on_validation_epoch_end.val/acc"]
    assert walks == []  # created on the CPU, logged from the CPU: nothing to move
    metric.to("cpu")  # a device by name: left to Lightning, as before
    assert len(walks) == 1
    metric.to(torch.device("meta"))  # somewhere else: moved, defaults too
    assert len(walks) == 2
    assert metric.value.device.type == metric.cumulated_batch_size.device.type == "meta"
    assert metric._defaults["value"].device.type == "meta"
    from torchmetrics import MeanMetric

    mean = MeanMetric()
    mean.update(torch.tensor(2.0))
    results.log("on_validation_epoch_end", "val/mean", mean, metric_attribute="mean")
    # An accumulator holding a torchmetrics Metric is always moved by Lightning.
    results["on_validation_epoch_end.val/mean"].to(torch.device("cpu"))
    assert len(walks) == 3


class LogsTensorsAndAMetric(Tiny):
    """Logs a scalar tensor each validation step and a torchmetrics mean (moved by Lightning:
    a `Metric` is never skipped)."""

    def __init__(self) -> None:
        super().__init__()
        from torchmetrics import MeanMetric

        self.mean = MeanMetric()

    def validation_step(self, batch: list[torch.Tensor], batch_idx: int) -> None:
        self.log("val/step", torch.tensor(float(batch_idx + 1)), batch_size=len(batch[0]))
        self.mean.update(batch[0].sum(1))
        self.log("val/mean", self.mean)


def test_lightning_log_skips_same_device_moves_leaves_logged_values_unchanged():
    compat.lightning_log_skips_same_device_moves()
    module = LogsTensorsAndAMetric()
    trainer = _quiet_trainer(max_epochs=1, enable_checkpointing=False)
    data = torch.arange(12.0).reshape(6, 2)
    loader = DataLoader(TensorDataset(data), batch_size=4)  # batches of 4 and 2 rows
    trainer.fit(module, loader, loader)
    # The epoch mean weighted by batch size, (1 * 4 + 2 * 2) / 6, and the mean of row sums.
    assert trainer.callback_metrics["val/step"].item() == pytest.approx(8 / 6)
    assert trainer.callback_metrics["val/mean"].item() == pytest.approx(data.sum(1).mean().item())


def _fake_sbatch(folder: Path, says: str, code: int) -> Path:
    """A folder holding an `sbatch` that writes `says` to stderr and exits with `code`."""
    folder.mkdir()
    sbatch = folder / "sbatch"
    sbatch.write_text(f"#!/bin/sh\necho '{says}' >&2\nexit {code}\n")
    sbatch.chmod(0o755)
    return folder


@reaches("submitit", "sbatch_tests_first")
def test_sbatch_tests_first_refuses_what_sbatch_would_queue_for_ever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from submitit.core.utils import FailedJobError
    from submitit.slurm.slurm import SlurmExecutor

    stock = SlurmExecutor._make_submission_command
    executor = SlurmExecutor(folder=tmp_path / "jobs")
    refusing = _fake_sbatch(tmp_path / "refusing", "Requested node configuration", 1)
    monkeypatch.setenv("PATH", f"{refusing}{os.pathsep}{os.environ['PATH']}")
    refused = pytest.raises(FailedJobError, match="^sbatch: error: Requested node configuration$")
    with compat.sbatch_tests_first(), refused:
        executor._make_submission_command(tmp_path / "job.sh")
    assert SlurmExecutor._make_submission_command is stock
    taking = _fake_sbatch(tmp_path / "taking", "sbatch: Job 1 to start", 0)
    monkeypatch.setenv("PATH", f"{taking}{os.pathsep}{os.environ['PATH']}")
    with compat.sbatch_tests_first():
        assert executor._make_submission_command(tmp_path / "job.sh") == [
            "sbatch",
            str(tmp_path / "job.sh"),
        ]


def test_every_compat_function_has_a_test_naming_its_package():
    import inspect

    functions = {
        name
        for name, member in vars(compat).items()
        if inspect.isfunction(inspect.unwrap(member))  # functools.cache'd ones too
        and member.__module__ == compat.__name__
        and not name.startswith("_")
    }
    assert functions - {"apply_patches", "vanilla"} == set(REACHED)
    assert {patch.function for patch in compat.PATCHES} <= set(REACHED)


def test_a_moved_internal_fails_in_one_line_naming_the_package_and_its_version():
    moved = ImportError(
        "cannot import name 'get_args_parser' from 'hydra._internal.utils'\n(more lines)"
    )
    with pytest.raises(pytest.fail.Exception) as failed:
        _moved("hydra-core", ("hydra_args_parser",), moved)
    assert str(failed.value) == (
        f"hydra-core {version('hydra-core')}: research.compat.hydra_args_parser reaches an "
        "internal that moved (ImportError: cannot import name 'get_args_parser' from "
        "'hydra._internal.utils')"
    )

    @reaches("lightning")
    def gone() -> None:
        raise AttributeError("type object 'ModelCheckpoint' has no attribute '_save_checkpoint'")

    with pytest.raises(pytest.fail.Exception, match=r"^lightning \S+: .*has no attribute"):
        gone()


# Where each point of compat.apply_patches is reached, with what it is given.
POINTS: dict[str, tuple[Any, ...]] = {
    "job": (),
    "trainer": ([],),
    "wandb": (),
    "wandb_logger": (object(),),
    "slurm_launch": (),
}


def _apply_everywhere() -> None:
    for point, targets in POINTS.items():
        with compat.apply_patches(point, *targets):
            pass


def test_apply_patches_makes_each_patch_at_its_point_and_none_with_research_vanilla(
    monkeypatch: pytest.MonkeyPatch,
):
    assert set(POINTS) == {patch.point for patch in compat.PATCHES}
    made: list[str] = []
    for patch in compat.PATCHES:  # looked up by name when applied: replaced here
        monkeypatch.setattr(
            compat, patch.function, lambda *_, name=patch.function: made.append(name)
        )
    for off in ("", "0"):
        monkeypatch.setenv(compat.VANILLA, off)
        made.clear()
        _apply_everywhere()
        assert made == [patch.function for patch in compat.PATCHES]
    for on in ("1", "true"):
        monkeypatch.setenv(compat.VANILLA, on)
        made.clear()
        _apply_everywhere()
        assert made == []
    with pytest.raises(ValueError, match="no patch is made at 'nowhere'"):
        compat.apply_patches("nowhere")


def test_a_patch_made_for_a_block_lasts_until_the_block_ends(monkeypatch: pytest.MonkeyPatch):
    import contextlib

    seen: list[str] = []

    @contextlib.contextmanager
    def block() -> Any:
        seen.append("made")
        yield
        seen.append("undone")

    monkeypatch.setattr(compat, "submitit_first_task_results", block)
    monkeypatch.setattr(compat, "sbatch_tests_first", block)
    monkeypatch.delenv(compat.VANILLA, raising=False)
    with compat.apply_patches("slurm_launch"):
        assert seen == ["made", "made"]
    assert seen == ["made", "made", "undone", "undone"]


def test_the_docs_table_of_patches_is_compats_list():
    page = Path(__file__).parents[1] / "docs" / "pages" / "reference" / "compat.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    start = lines.index("| patch (`research.compat.`) | applied at | what | why | what it saves |")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    assert rows == [
        f"| `{p.function}` | `{p.point}` | {p.what} | {p.why} | {p.saves} |" for p in compat.PATCHES
    ]


# A default run in a process of its own, then which process-wide patches are in place.
_RUN_PROBE = """
import json, sys
from research.cli import train
try:
    code = train.main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
import wandb.util
from lightning.pytorch.trainer.connectors.logger_connector.result import _ResultMetric
from wandb.sdk.wandb_run import Run
in_place = {
    "lightning_log_skips_same_device_moves": _ResultMetric.to,
    "wandb_skip_unstaged_launch_inputs": Run._detect_and_apply_job_inputs,
    "wandb_package_list_from_headers": wandb.util.working_set,
}
patched = sorted(k for k, v in in_place.items() if v.__module__ == "research.compat")
print(json.dumps({"code": code, "patched": patched}))
"""


@pytest.mark.slow  # two default runs, each in a process of its own: 40-60 s
def test_a_default_run_gives_the_same_metrics_with_research_vanilla(tmp_path: Path):
    from tests.helpers.cli import FAST, cli_env, metrics, run_dirs

    seen = {}
    for vanilla in ("1", "0"):
        workdir = tmp_path / f"vanilla-{vanilla}"
        workdir.mkdir()
        done = subprocess.run(
            [sys.executable, "-c", _RUN_PROBE, *FAST],
            cwd=workdir,
            env={**cli_env(workdir), compat.VANILLA: vanilla},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        said = json.loads(done.stdout.strip().splitlines()[-1])
        assert said["code"] == 0, done.stderr[-3000:]
        (run,) = run_dirs(workdir)
        seen[vanilla] = said["patched"], metrics(run)
    (none, plain), (all_, patched) = seen["1"], seen["0"]
    assert none == [] and all_ == sorted(
        [
            "lightning_log_skips_same_device_moves",
            "wandb_package_list_from_headers",
            "wandb_skip_unstaged_launch_inputs",
        ]
    )
    assert plain["status"] == patched["status"] == "completed"
    assert plain["best"]["test/acc"] == patched["best"]["test/acc"]
    assert plain["best"] == patched["best"] and plain["final"] == patched["final"]


def test_an_override_of_a_method_that_moved_fails_when_the_class_is_made():
    """A subclass's override of a method the base no longer has would never be called."""
    with pytest.raises(AttributeError, match="ModelCheckpoint has no method _gone"):
        compat._still_has(ModelCheckpoint, "_save_checkpoint", "_gone")


def test_patches_are_made_only_through_apply_patches():
    """One switch: code outside compat.py that made a patch itself would ignore it."""
    import ast

    patches = {patch.function for patch in compat.PATCHES}
    src = Path(__file__).parents[1] / "src"
    direct = [
        f"{path.relative_to(src)}:{node.lineno}: compat.{node.attr}"
        for path in sorted(src.rglob("*.py"))
        if path.name != "compat.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr in patches
    ]
    assert direct == []
