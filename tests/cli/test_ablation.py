"""research-ablate end to end: a tiny ablation, its report, a re-run that skips finished work."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.cli import BIN, cli_env, run_cli
from tests.helpers.locks import held_by_another_process

REPO_CONF = Path(__file__).parents[2] / "conf"
ABLATION = """
base: [debug=limit, logger=none, trainer.enable_progress_bar=false]
variants:
  adam: []
  sgd: [optimizer=sgd, optimizer.lr=0.05]
  broken: [optimizer=sgd, optimizer.lr=1e30]
seeds: [0, 1]
baseline: adam
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


@pytest.mark.slow
def test_ablation_runs_reports_and_skips_finished_runs(ablation):
    root, env = ablation
    # A restricted call first: two variants, one seed.
    part = run_cli(
        "research-ablate", "tiny", "--only", "adam,sgd", "--seeds", "0", cwd=root, env=env
    )
    assert part.returncode == 0, part.stderr[-2000:]
    assert "2 of 6 jobs to run" in part.stdout
    assert part.stdout.count("not selected") == 4
    assert "ablation tiny: 2/6 runs completed" in part.stdout
    assert {m["command"] for m in _metrics(root)} == {
        "research-ablate tiny --only adam,sgd --seeds 0"
    }

    first = run_cli("research-ablate", "tiny", cwd=root, env=env, timeout=600)
    assert first.returncode == 1, first.stderr[-2000:]  # the diverging variant fails the sweep
    assert "4 of 6 jobs to run" in first.stdout
    assert "ablation tiny: 4/6 runs completed" in first.stdout  # the whole ablation, not this call
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
    assert "| adam (baseline) |" in report.stdout  # the ablation file's `baseline`

    dry = run_cli("research-ablate", "tiny", "--dry-run", cwd=root, env=env)
    assert dry.returncode == 0 and "2 of 6 jobs to run" in dry.stdout
    # An override that changes what is computed makes its own ablation folder; one that does
    # not (a display setting) keeps the ablation's runs.
    cut = ["trainer.max_epochs=1", "trainer.enable_model_summary=false", "--dry-run"]
    cut = run_cli("research-ablate", "tiny", *cut, cwd=root, env=env)
    assert "6 of 6 jobs to run (in tiny+trainer.max_epochs=1)" in cut.stdout, cut.stderr
    quiet = ["trainer.enable_model_summary=false", "--dry-run"]
    same = run_cli("research-ablate", "tiny", *quiet, cwd=root, env=env)
    assert "2 of 6 jobs to run\n" in same.stdout
    again = run_cli("research-ablate", "tiny", cwd=root, env=env, timeout=600)
    assert again.returncode == 1
    assert "2 of 6 jobs to run" in again.stdout
    assert len(_metrics(root)) == 8  # only the two failed jobs ran again


def test_only_and_seeds_name_what_is_valid(ablation):
    root, env = ablation
    done = run_cli("research-ablate", "tiny", "--only", "adam,nope", cwd=root, env=env)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "research-ablate: error: --only nope: not in this ablation; choose from: adam, sgd, broken"
    )
    done = run_cli("research-ablate", "tiny", "--seeds", "7", cwd=root, env=env)
    assert (
        done.returncode == 2 and "--seeds 7: not in this ablation; choose from: 0, 1" in done.stderr
    )


def test_unknown_ablation_lists_the_choices(ablation):
    root, env = ablation
    done = run_cli("research-ablate", "nope", cwd=root, env=env)
    assert done.returncode == 2
    assert (
        "no conf/ablation/nope.yaml; choose one of: cnn_momentum, cnn_sgd_momentum" in done.stderr
    )


KILLED = """
base: [logger=none, trainer.max_epochs=4, data.batch_size=8, trainer.enable_progress_bar=false]
variants:
  only: []
seeds: [0]
"""


@pytest.mark.slow
def test_a_killed_job_resumes_from_its_own_last_checkpoint(ablation):
    root, env = ablation
    (Path(env["RESEARCH_CONFIG_DIR"]) / "ablation" / "killed.yaml").write_text(KILLED)
    proc = subprocess.Popen(
        [str(BIN / "research-ablate"), "killed"],
        cwd=root,
        env={**cli_env(root), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    folder = root / "logs" / "ablations" / "killed"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        histories = list(folder.glob("*/*/history.jsonl"))
        if histories and len(histories[0].read_text().splitlines()) >= 2:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    (killed,) = [p.parent for p in folder.glob("*/*/history.jsonl")]
    assert not (killed / "metrics.json").exists()

    again = run_cli("research-ablate", "killed", cwd=root, env=env, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    checkpoint = killed / "checkpoints" / "last.ckpt"
    assert f"to run, resumes {checkpoint}" in again.stdout
    assert "ablation killed: 1/1 runs completed" in again.stdout
    (done,) = [json.loads(p.read_text()) for p in folder.glob("*/*/metrics.json")]
    assert done["status"] == "completed" and done["resumed_from"] == str(checkpoint)
    epochs = [
        json.loads(line)["epoch"]
        for line in (Path(done["run_dir"]) / "history.jsonl").read_text().splitlines()
    ]
    assert epochs == [0, 1, 2, 3]  # carried on, not started over


PAIR = """
base: [debug=limit, logger=none, trainer.enable_progress_bar=false]
variants:
  a: []
  b: [optimizer.lr=0.01]
seeds: [0]
"""


def _pair(ablation: tuple[Path, dict[str, str]], name: str) -> Path:
    root, env = ablation
    (Path(env["RESEARCH_CONFIG_DIR"]) / "ablation" / f"{name}.yaml").write_text(PAIR)
    return root / "logs" / "ablations" / name


@pytest.mark.slow
def test_a_job_another_process_runs_is_skipped(ablation):
    root, env = ablation
    folder = _pair(ablation, "inflight")
    dry = run_cli("research-ablate", "inflight", "--dry-run", cwd=root, env=env)
    (run_id,) = [line.split()[2] for line in dry.stdout.splitlines() if line.startswith("a ")]
    live = folder / "2026-01-01_00-00-00-000000" / "0_a_s0"  # another caller's job, running
    live.mkdir(parents=True)
    (live / ".research.json").write_text(json.dumps({"run_id": run_id}))
    with held_by_another_process(live):
        done = run_cli("research-ablate", "inflight", "--only", "a", cwd=root, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"running in {live}, skipped" in done.stdout
    assert "0 of 2 jobs to run" in done.stdout
    assert sorted(p.name for p in folder.iterdir()) == [live.parent.name]  # nothing launched


@pytest.mark.slow
def test_two_callers_at_once_run_every_job_once(ablation):
    root, env = ablation
    folder = _pair(ablation, "twice")
    callers = [
        subprocess.Popen(
            [str(BIN / "research-ablate"), "twice"],
            cwd=root,
            env={**cli_env(root), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=600) for proc in callers]
    ended = [(proc.returncode, out, err) for proc, (out, err) in zip(callers, outputs, strict=True)]
    assert [code for code, _, _ in ended] == [0, 0], ended
    runs = [json.loads(p.read_text()) for p in folder.rglob("metrics.json")]
    assert sorted(m["variant"] for m in runs) == ["a", "b"]  # 2 runs for 2 jobs, not 4
    assert {m["status"] for m in runs} == {"completed"}
    assert not [p for p in folder.rglob(".hydra") if not (p.parent / "metrics.json").exists()]
    said = "".join(out for _, out, _ in ended)
    assert said.count("skipped") >= 2  # each job the other caller had: done, running or skipped
