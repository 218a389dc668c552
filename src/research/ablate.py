"""`research-ablate <name>`: run an ablation (variants x seeds) as one Hydra multirun.

An ablation file `conf/ablation/<name>.yaml` names a base (overrides for every job), either
`variants` (name -> overrides) or `axes` (crossed: axis -> option -> overrides), the `seeds`, and
optionally `tags` and report `metrics`. Every job runs `research-train` with W&B group = the
ablation's name and job_type = its variant. Runs already completed under
`logs/ablations/<name>/` (same config hash and seed) are skipped, so re-running after a crash only
runs what is missing or failed; `--dry-run` lists what would run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from research.config.compose import check_command_line, config_dir, group_options
from research.config.errors import ConfigError
from research.tracking.identity import run_id
from research.tracking.run_dir import METRICS_FILE, read_metrics


@dataclass
class Job:
    variant: str
    seed: int
    overrides: list[str]
    run_id: str = ""
    done: bool = False


def load_ablation(name: str) -> dict[str, Any]:
    path = config_dir() / "ablation" / f"{name}.yaml"
    if not path.is_file():
        options = ", ".join(group_options("ablation")) or "none"
        raise ConfigError(
            f"ablation {name!r}: no conf/ablation/{name}.yaml; choose one of: {options}"
        )
    spec = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    assert isinstance(spec, dict)
    if bool(spec.get("variants")) == bool(spec.get("axes")):
        raise ConfigError(f"ablation {name!r}: give exactly one of `variants` or `axes`")
    if not spec.get("seeds"):
        raise ConfigError(f"ablation {name!r}: `seeds` must list at least one seed")
    return spec


def variants(spec: dict[str, Any]) -> dict[str, list[str]]:
    """Named override sets; axes are crossed into names like `sgd+no_norm`."""
    if spec.get("variants"):
        return {str(k): list(v or []) for k, v in spec["variants"].items()}
    axes = [list(options.items()) for options in spec["axes"].values()]
    crossed = {}
    for combo in itertools.product(*axes):
        crossed["+".join(str(k) for k, _ in combo)] = [o for _, ovr in combo for o in ovr or []]
    return crossed


def plan(name: str, spec: dict[str, Any], extra: list[str]) -> list[Job]:
    """Every (variant, seed) job with its overrides, run id and whether it already completed."""
    tags = json.dumps(list(spec.get("tags") or []) + ["ablation", name])
    jobs = [
        Job(
            variant,
            int(seed),
            [
                *(spec.get("base") or []),
                *overrides,
                *extra,
                f"seed={seed}",
                f"variant={variant}",
                f"group={name}",
                f"tags={tags}",
            ],
        )
        for variant, overrides in variants(spec).items()
        for seed in spec["seeds"]
    ]
    completed: set[str] = set()
    log_root: Path | None = None
    for job in jobs:
        (config,) = check_command_line("train", job.overrides)
        job.run_id = run_id(config)
        if log_root is None:
            log_root = Path(config["paths"]["log_dir"]) / "ablations" / name
            completed = _completed_run_ids(log_root)
        job.done = job.run_id in completed
    return jobs


def _completed_run_ids(root: Path) -> set[str]:
    ids = set()
    for path in root.rglob(METRICS_FILE):
        metrics = read_metrics(path.parent) or {}
        if metrics.get("status") == "completed" and metrics.get("run_id"):
            ids.add(metrics["run_id"])
    return ids


def _launch(name: str, jobs: list[Job], log_dir: Path, launcher_args: list[str]) -> int:
    from research.cli import run, train_task

    sweep_dir = log_dir / "ablations" / name / datetime.now().strftime("%Y-%m-%d_%H-%M-%S-%f")
    sweep_dir.mkdir(parents=True)
    jobs_file = sweep_dir / "jobs.json"
    jobs_file.write_text(json.dumps([job.overrides for job in jobs], indent=1))
    return run(
        "research-ablate",
        "train",
        train_task,
        [
            "-m",
            "hydra/sweeper=list",
            f"hydra.sweeper.jobs_file={jobs_file}",
            f"hydra.sweep.dir={sweep_dir}",
            "hydra.sweep.subdir=${hydra.job.num}_${variant}_s${seed}",
            *launcher_args,
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="research-ablate", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="an ablation in conf/ablation/")
    parser.add_argument("overrides", nargs="*", help="extra overrides for every job")
    parser.add_argument("--dry-run", action="store_true", help="list the jobs, run nothing")
    args = parser.parse_args(argv)
    try:
        spec = load_ablation(args.name)
        launcher_args = [o for o in args.overrides if o.startswith(("launcher=", "hydra."))]
        extra = [o for o in args.overrides if o not in launcher_args]
        jobs = plan(args.name, spec, extra)
    except ConfigError as err:
        print(f"research-ablate: error: {err}", file=sys.stderr)
        return 2
    todo = [job for job in jobs if not job.done]
    for job in jobs:
        state = "done, skipped" if job.done else "to run"
        print(f"{job.variant:24s} seed={job.seed:<4d} {job.run_id}  {state}")
    print(f"{len(todo)} of {len(jobs)} jobs to run")
    if args.dry_run or not todo:
        return 0
    (config,) = check_command_line("train", todo[0].overrides)
    return _launch(args.name, todo, Path(config["paths"]["log_dir"]), launcher_args)


def entry() -> None:
    sys.exit(main())
