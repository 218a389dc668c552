"""Hydra's conformance suite for sweepers that launch in batches
(`hydra.test_utils.launcher_common_tests.BatchedSweeperTestSuite`), on research's sweepers.

The suite sweeps Hydra's own test app (`hydra.test_utils.a_module`, configs shipped in the wheel)
with `group1=file1,file2 bar=100,200,300` and `max_batch_size=2`, and expects the six jobs of the
cartesian product, in Hydra's order, as three batches of two, each in a folder of its own.

What applies, and where:
- The list sweeper (`hydra/sweeper=list`) runs the suite as it is: its list here is one empty job,
  so the jobs are the command line's sweep, expanded as Hydra's basic sweeper expands it.
- The Optuna sweeper (`hydra/sweeper=optuna_study`) cannot run the suite's one case, by design:
  (1) its jobs are the trials a sampler draws from the swept keys' values, not the product in
  Hydra's order (even the grid sampler visits the grid in an order of its own); (2) every job
  gets `trial=<number>` (a key of research's train config, which Hydra's test app lacks: there
  each job would fail to compose), so a job's overrides are never the sweep's alone; (3)
  `sweep()` records each job's return value in the study and reports the best trial instead of
  returning the jobs' results, as Hydra's own Optuna sweeper does, so the suite has no returns
  to check. `test_optuna_sweeper_batches_as_the_suite_expects` checks on the same app what of
  the case does apply: `n_jobs` trials per batch, one folder per job with its config and its
  own overrides, every grid point once, multirun.yaml with the command line's overrides.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra.core.plugins import Plugins
from hydra.plugins.launcher import Launcher
from hydra.test_utils.launcher_common_tests import BatchedSweeperTestSuite
from hydra.test_utils.test_utils import TSweepRunner, verify_dir_outputs
from omegaconf import OmegaConf

from hydra_plugins.research_sweeper.list_sweeper import ListSweeper
from research.config.paths import config_dir

LIST_TARGET = f"{ListSweeper.__module__}.{ListSweeper.__name__}"


def _research_configs() -> str:
    """The search path entry that brings research's sweeper configs (conf/hydra/sweeper/) to
    Hydra's test app."""
    return f"hydra.searchpath=[file://{config_dir()}]"


@pytest.fixture
def launcher_name() -> str:
    return "basic"


@pytest.fixture
def overrides(tmp_path: Path) -> list[str]:
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([[]]))
    return [
        _research_configs(),
        "hydra/sweeper=list",
        f"hydra.sweeper.jobs_file={jobs}",
        "hydra.sweeper.max_batch_size=2",
    ]


@pytest.mark.slow  # ~1 s, as on Hydra's own basic sweeper: 18 compositions of six jobs
class TestListSweeperWithBatching(BatchedSweeperTestSuite):
    """The suite's one case, as Hydra runs it on its basic sweeper."""


@pytest.mark.usefixtures("hydra_restore_singletons")
def test_the_pre_flight_plans_the_list_crossed_with_the_command_line(tmp_path: Path):
    from research.config.compose import planned_jobs

    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([["+variant=a"], ["+variant=b", "bar=7"]]))
    hydra = OmegaConf.create({"sweeper": {"_target_": LIST_TARGET, "jobs_file": str(jobs)}})
    assert planned_jobs(hydra, ["hydra.verbose=true", "seed=1,2", "+x=0"]) == [
        ["seed=1", "+x=0", "+variant=a"],
        ["seed=2", "+x=0", "+variant=a"],
        ["seed=1", "+x=0", "+variant=b", "bar=7"],
        ["seed=2", "+x=0", "+variant=b", "bar=7"],
    ]


@pytest.mark.slow
@pytest.mark.usefixtures("hydra_restore_singletons")
def test_the_list_crosses_the_command_lines_sweep(hydra_sweep_runner: TSweepRunner, tmp_path: Path):
    """Each listed job once per combination of the command line's sweep, in the list's order,
    and the pre-flight plans the same jobs."""
    from research.config.compose import planned_jobs

    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([["+variant=a"], ["+variant=b", "bar=7"]]))
    hydra = [
        _research_configs(),
        "hydra/sweeper=list",
        f"hydra.sweeper.jobs_file={jobs}",
        "hydra.sweeper.max_batch_size=3",
    ]
    sweep = hydra_sweep_runner(
        calling_file=None,
        calling_module="hydra.test_utils.a_module",
        task_function=None,
        config_path="configs",
        config_name="compose.yaml",
        overrides=[*hydra, "group1=file1,file2"],
        temp_dir=tmp_path / "sweep",
    )
    expected = [
        ["group1=file1", "+variant=a"],
        ["group1=file2", "+variant=a"],
        ["group1=file1", "+variant=b", "bar=7"],
        ["group1=file2", "+variant=b", "bar=7"],
    ]
    with sweep:
        assert sweep.returns is not None
        assert [len(batch) for batch in sweep.returns] == [3, 1]
        launched = [job for batch in sweep.returns for job in batch]
        assert [job.overrides for job in launched] == expected
        assert [job.cfg["foo"] for job in launched] == [10, 20, 10, 20]
        assert [job.cfg["bar"] for job in launched] == [100, 100, 7, 7]
        for job in launched:
            verify_dir_outputs(job, job.overrides)
        hydra_cfg = launched[0].hydra_cfg.hydra
    node = OmegaConf.create({"sweeper": OmegaConf.to_container(hydra_cfg.sweeper)})
    assert planned_jobs(node, ["group1=file1,file2"]) == expected


@pytest.mark.slow
@pytest.mark.usefixtures("hydra_restore_singletons")
def test_optuna_sweeper_batches_as_the_suite_expects(
    hydra_sweep_runner: TSweepRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The suite's case on the Optuna sweeper, less what cannot apply (module docstring): a grid
    over the same six points, two trials per batch."""
    (basic,) = [c for c in Plugins.instance().discover(Launcher) if c.__name__ == "BasicLauncher"]
    batches: list[int] = []

    def launch(self, job_overrides, initial_job_idx):
        batches.append(len(job_overrides))
        return stock(self, job_overrides, initial_job_idx)

    stock = basic.launch
    monkeypatch.setattr(basic, "launch", launch)
    returned: list[float] = []

    def objective(cfg):  # a trial's value: its job's return value
        returned.append(float(cfg.foo + cfg.bar))
        return returned[-1]

    job_overrides = ["group1=file1,file2", "bar=100,200,300"]
    sweep = hydra_sweep_runner(
        calling_file=None,
        calling_module="hydra.test_utils.a_module",
        task_function=objective,
        config_path="configs",
        config_name="compose.yaml",
        overrides=[
            _research_configs(),
            "hydra/sweeper=optuna_study",
            "hydra.sweeper.study_name=conformance",
            "hydra.sweeper.sampler.name=grid",
            "hydra.sweeper.n_trials=6",
            "hydra.sweeper.n_jobs=2",
            "hydra.sweeper.seed=0",
            "+trial=null",  # the key the sweeper sets to each job's trial number
            *job_overrides,
        ],
        temp_dir=tmp_path / "sweep",
    )
    with sweep:
        assert sweep.temp_dir is not None
        sweep_dir = Path(sweep.temp_dir)
        multirun = OmegaConf.load(sweep_dir / "multirun.yaml")
        assert list(multirun.hydra.overrides.task) == ["+trial=null", *job_overrides]
        job_dirs = sorted(p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit())
        assert [p.name for p in job_dirs] == [str(n) for n in range(6)]
        assert batches == [2, 2, 2]
        points = set()
        for job_dir in job_dirs:
            assert (job_dir / ".hydra" / "config.yaml").is_file()
            launched = list(OmegaConf.load(job_dir / ".hydra" / "overrides.yaml"))
            assert launched[0] == "+trial=null" and launched[-1] == f"trial={job_dir.name}"
            points.add(tuple(launched[1:-1]))
        assert points == {
            (f"group1={g}", f"bar={b}") for g in ("file1", "file2") for b in (100, 200, 300)
        }
        results = OmegaConf.load(sweep_dir / "optimization_results.yaml")
        assert results.best_value == max(returned) == 320
