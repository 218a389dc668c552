"""research-ablate end to end: a tiny ablation, its report, a re-run that skips finished work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

REPO_CONF = Path(__file__).parents[2] / "conf"
ABLATION = """
base: [debug=limit, logger=none, trainer.enable_progress_bar=false]
variants:
  adam: []
  sgd: [optimizer=sgd, optimizer.lr=0.05]
  broken: [optimizer=sgd, optimizer.lr=1e30]
seeds: [0, 1]
"""


@pytest.fixture(scope="module")
def ablation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("ablation")
    conf = root / "conf"
    shutil.copytree(REPO_CONF, conf)
    (conf / "ablation" / "tiny.yaml").write_text(ABLATION)
    return root, {"RESEARCH_CONFIG_DIR": str(conf)}


def _metrics(root: Path) -> list[dict]:
    found = sorted((root / "logs" / "ablations" / "tiny").rglob("metrics.json"))
    return [json.loads(p.read_text()) for p in found if "report" not in p.parts]


def test_ablation_runs_reports_and_skips_finished_runs(ablation):
    root, env = ablation
    first = run_cli("research-ablate", "tiny", cwd=root, env=env, timeout=600)
    assert first.returncode == 1, first.stderr[-2000:]  # the diverging variant fails the sweep
    assert "6 of 6 jobs to run" in first.stdout
    runs = _metrics(root)
    assert sorted((m["variant"], m["seed"], m["status"]) for m in runs) == [
        ("adam", 0, "completed"),
        ("adam", 1, "completed"),
        ("broken", 0, "diverged"),
        ("broken", 1, "diverged"),
        ("sgd", 0, "completed"),
        ("sgd", 1, "completed"),
    ]
    assert {m["config"]["group"] for m in runs} == {"tiny"}
    assert all("ablation" in m["config"]["tags"] for m in runs)

    report = run_cli("research-report", "tiny", cwd=root, env=env)
    assert report.returncode == 0, report.stderr[-2000:]
    table = (root / "logs" / "ablations" / "tiny" / "report" / "report.csv").read_text()
    for variant in ("adam", "sgd"):
        accs = [m["best"]["val/acc"] for m in runs if m["variant"] == variant]
        mean = sum(accs) / len(accs)
        line = next(ln for ln in table.splitlines() if ln.startswith(variant + ","))
        assert any(abs(float(cell) - mean) < 1e-9 for cell in line.split(",")[1:] if cell)
    broken = next(ln for ln in report.stdout.splitlines() if ln.startswith("| broken"))
    assert "| 0 |" in broken and "| 2 |" in broken  # n = 0 completed, 2 diverged

    dry = run_cli("research-ablate", "tiny", "--dry-run", cwd=root, env=env)
    assert dry.returncode == 0 and "2 of 6 jobs to run" in dry.stdout
    again = run_cli("research-ablate", "tiny", cwd=root, env=env, timeout=600)
    assert again.returncode == 1
    assert "2 of 6 jobs to run" in again.stdout
    assert len(_metrics(root)) == 8  # only the two failed jobs ran again


def test_unknown_ablation_lists_the_choices(ablation):
    root, env = ablation
    done = run_cli("research-ablate", "nope", cwd=root, env=env)
    assert done.returncode == 2
    assert "no conf/ablation/nope.yaml; choose one of: cnn_sgd_momentum" in done.stderr
