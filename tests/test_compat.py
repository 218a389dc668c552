"""One test per private third-party API in research.compat, against the installed libraries: an
upgrade that changes one of them fails here, by name."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from omegaconf import DictConfig, ListConfig, OmegaConf
from torch.utils.data import DataLoader, TensorDataset

from research import compat
from research.callbacks.last_checkpoint import LastCheckpoint
from research.config.paths import config_dir
from tests.helpers.tiny_module import Tiny


def test_hydra_args_parser_reads_the_flags_hydra_main_reads():
    parsed = compat.hydra_args_parser().parse_args(["-m", "seed=1,2", "--cfg", "job"])
    assert parsed.multirun and parsed.cfg == "job" and parsed.overrides == ["seed=1,2"]


def test_hydra_basic_sweep_jobs_lists_the_jobs_in_launch_order():
    parsed = OverridesParser.create().parse_overrides(["a=1,2", "b=x,y"])
    jobs = compat.hydra_basic_sweep_jobs(parsed)
    assert jobs == [["a=1", "b=x"], ["a=1", "b=y"], ["a=2", "b=x"], ["a=2", "b=y"]]


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


def test_hydra_override_dirname_sorts_joins_and_excludes_as_hydra_does():
    parsed = OverridesParser.create().parse_overrides(["seed=3", "b=2", "a=1"])
    settings = OmegaConf.create({"kv_sep": ":", "item_sep": "+", "exclude_keys": ["seed"]})
    assert compat.hydra_override_dirname(parsed, settings) == "a:1+b:2"


def test_hydra_run_job_runs_a_task_as_hydra_runs_one_job(tmp_path: Path):
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("train", ["seed=7"], return_hydra_config=True)
    OmegaConf.update(cfg, "hydra.run.dir", str(tmp_path / "run"))
    seen = []
    done = compat.hydra_run_job(
        cfg, lambda task_cfg: seen.append(task_cfg.seed) or 42, str(config_dir())
    )
    assert done.return_value == 42 and seen == [7]
    assert (tmp_path / "run" / ".hydra" / "config.yaml").is_file()
    assert OmegaConf.load(tmp_path / "run" / ".hydra" / "overrides.yaml") == ["seed=7"]


def test_omegaconf_child_keeps_interpolations_and_containers():
    cfg = OmegaConf.create({"a": "${b}", "b": 1, "c": {"d": [1]}})
    assert compat.omegaconf_child(cfg, "a")._value() == "${b}"
    assert isinstance(compat.omegaconf_child(cfg, "c"), DictConfig)
    assert isinstance(compat.omegaconf_child(cfg.c, "d"), ListConfig)


def test_lightning_reruns_command_line_only_for_its_subprocess_launcher():
    ddp = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", logger=False)
    single = L.Trainer(accelerator="cpu", devices=1, logger=False)
    assert compat.lightning_reruns_command_line(ddp.strategy)
    assert not compat.lightning_reruns_command_line(single.strategy)


@pytest.mark.slow  # a W&B run started and finished: 4.5 s
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


@pytest.mark.parametrize(("staged", "expected"), [("none", "False False"), ("staged", "True True")])
@pytest.mark.slow
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


def test_optuna_trial_and_live_trial_reach_a_running_trial(study):
    asked = study.ask()
    trial = compat.optuna_trial(study, asked.number)
    trial.report(0.5, step=1)
    (frozen,) = study.get_trials(deepcopy=False)
    assert frozen.intermediate_values == {1: 0.5}
    compat.optuna_live_trial(study, frozen).set_user_attr("why", "test")
    assert study.get_trials()[0].user_attrs == {"why": "test"}


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


def test_lightning_checkpoint_saved_last_is_the_step_and_path_of_the_latest_save(tmp_path: Path):
    checkpoint = ModelCheckpoint(dirpath=tmp_path, save_top_k=-1)
    _fit_two_epochs(checkpoint)
    assert compat.lightning_checkpoint_saved_last(checkpoint) == (
        6,
        str(tmp_path / "epoch=1-step=6.ckpt"),
    )


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


def test_lightning_cuda_peak_flops_is_a_chips_row_of_lightnings_table():
    h100 = compat.lightning_cuda_peak_flops("h100 sxm")
    assert h100[torch.bfloat16] == 989.4e12 and h100["tfloat32"] == 494.7e12
    with pytest.raises(KeyError):
        compat.lightning_cuda_peak_flops("no such chip")


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
