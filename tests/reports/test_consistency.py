"""A variant pooled from runs of different configs is split with a warning; --where filters."""

from __future__ import annotations

from pathlib import Path

import pytest

from research.reports import ReportError, RunsWarning, build_report, load_runs
from tests.reports.conftest import write_run


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`sgd` run at 10 epochs with seeds 0-2, then a cut-down re-run at 1 epoch, same name."""
    root = tmp_path_factory.mktemp("mixed")
    for sweep, epochs in (("full", 10), ("cut", 1)):
        for seed in range(3):
            overrides = [f"trainer.max_epochs={epochs}", f"seed={seed}", "variant=sgd"]
            write_run(root / sweep / f"{seed}_sgd_s{seed}", seed, overrides, variant="sgd")
        write_run(root / sweep / "adam_s0", 0, [f"trainer.max_epochs={epochs}"], variant="adam")
    return root


def test_runs_of_different_configs_are_split_and_the_keys_named(mixed: Path):
    with pytest.warns(RunsWarning) as caught:
        runs = load_runs(mixed)
    counts = runs["variant"].value_counts().to_dict()
    assert counts == {
        "sgd [trainer.max_epochs=1]": 3,
        "sgd [trainer.max_epochs=10]": 3,
        "adam [trainer.max_epochs=1]": 1,
        "adam [trainer.max_epochs=10]": 1,
    }
    notes = [str(w.message) for w in caught]
    assert any(
        "variant 'sgd' holds runs of 2 different configs (differing keys: trainer.max_epochs)" in n
        for n in notes
    )


@pytest.mark.slow
def test_where_keeps_one_config_and_the_variant_whole(mixed: Path, tmp_path: Path):
    runs = load_runs(mixed, ["trainer.max_epochs=10"])
    assert runs["variant"].value_counts().to_dict() == {"sgd": 3, "adam": 1}
    assert sorted(runs.query("variant == 'sgd'")["seed"]) == [0, 1, 2]
    assert len(load_runs(mixed, ["trainer.max_epochs=10", "seed=0"])) == 2
    report = build_report(mixed, tmp_path, where=["trainer.max_epochs=1"])
    assert "| sgd | 3 |" in report.markdown and not report.warnings


def test_where_mistakes_are_one_line_errors(mixed: Path):
    with pytest.raises(
        ReportError,
        match=r"--where trainer.max_epoch: no run has this config key; did you mean "
        r"trainer.max_epochs\?",
    ):
        load_runs(mixed, ["trainer.max_epoch=1"])
    with pytest.raises(
        ReportError, match=r"--where trainer.max_epochs=3 matches no run; its values: 1, 10"
    ):
        load_runs(mixed, ["trainer.max_epochs=3"])
    with pytest.raises(ReportError, match=r"--where 'epochs' is not KEY=VALUE"):
        load_runs(mixed, ["epochs"])
