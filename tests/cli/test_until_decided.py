"""`research-ablate NAME --until-decided` end to end: seeds added in rounds until the variant is
decided, decisions.json and the report's section, a re-run that continues without re-running;
and its option mistakes, each one line with exit status 2 and nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

REPO_CONF = Path(__file__).parents[2] / "conf"
# `frozen` cannot learn (lr 1e-9): far worse than the baseline on every seed, but by how much
# varies with the seed, so the interval needs a few seeds to exclude 0.
TINY = """
base: [debug=limit, logger=none, trainer.enable_progress_bar=false,
       trainer.enable_model_summary=false]
variants:
  adam: []
  frozen: [optimizer=sgd, optimizer.lr=1e-9]
seeds: [0, 1]
baseline: adam
"""


@pytest.fixture
def conf(tmp_path: Path) -> dict[str, str]:
    conf = tmp_path / "conf"
    shutil.copytree(REPO_CONF, conf)
    (conf / "ablation" / "tiny.yaml").write_text(TINY)
    (conf / "ablation" / "nobase.yaml").write_text(TINY.replace("baseline: adam\n", ""))
    return {"RESEARCH_CONFIG_DIR": str(conf)}


@pytest.mark.slow
def test_seeds_are_added_until_decided_and_a_rerun_continues(tmp_path, conf):
    args = ("tiny", "--until-decided", "--max-seeds", "6", "--batch", "2")
    done = run_cli("research-ablate", *args, cwd=tmp_path, env=conf, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    folder = tmp_path / "logs" / "ablations" / "tiny"
    decisions = json.loads((folder / "decisions.json").read_text())
    (frozen,) = decisions["variants"]
    assert (frozen["variant"], frozen["decision"], frozen["final"]) == ("frozen", "worse", True)
    assert frozen["low"] < frozen["high"] < 0
    n = len(frozen["seeds"])
    assert frozen["seeds"] == list(range(n)) and n in (4, 6)  # rounds of 2 after the file's 2
    assert decisions["metric"] == "final.test/acc" and decisions["direction"] == "max"
    runs = sorted(folder.rglob("metrics.json"))
    assert len(runs) == 2 * n  # the baseline ran exactly the seeds the variant needed
    assert str(tmp_path) not in (folder / "decisions.json").read_text()

    again = run_cli("research-ablate", *args, cwd=tmp_path, env=conf)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "to run" not in again.stdout  # every round's runs are found done
    assert len(sorted(folder.rglob("metrics.json"))) == 2 * n
    assert json.loads((folder / "decisions.json").read_text()) == decisions

    report = run_cli("research-report", "tiny", cwd=tmp_path, env=conf)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "## Seeds until decided (`final.test/acc`, higher is better, against `adam`)" in (
        report.stdout
    )
    assert "| frozen | **worse** |" in report.stdout
    assert "anytime-valid confidence sequence" in (folder / "report" / "report.md").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("nobase", "--until-decided"),
            "--until-decided compares each variant with the ablation's baseline; add "
            "`baseline: <variant>` to conf/ablation/nobase.yaml",
        ),
        (("tiny", "--max-seeds", "5"), "--max-seeds only apply with --until-decided; add it"),
        (("tiny", "--until-decided", "--seeds", "0"), "chooses the seeds itself; drop --seeds"),
        (("tiny", "--until-decided", "--max-seeds", "1"), "give at least 2"),
        (("tiny", "--until-decided", "--alpha", "5"), "--alpha 5.0: give a number between 0"),
        (("tiny", "--until-decided", "--batch", "0"), "--batch 0: give 1 or more"),
        (("tiny", "--until-decided", "--only", "adam"), "names no variant besides the baseline"),
        (
            ("tiny", "--until-decided", "--metric", "test/loss"),
            "give --metric test/loss=max or --metric test/loss=min",
        ),
    ],
)
def test_option_mistakes_are_one_line_and_write_nothing(tmp_path, conf, args, message):
    done = run_cli("research-ablate", *args, cwd=tmp_path, env=conf)
    assert done.returncode == 2, done.stdout
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("research-ablate: error: ")
    assert message in done.stderr
    assert not (tmp_path / "logs").exists()
