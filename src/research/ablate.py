"""`research-ablate <name>`: run an ablation (variants x seeds) as one Hydra multirun.

An ablation file `conf/ablation/<name>.yaml` names a base (overrides for every job), either
`variants` (name -> overrides) or `axes` (crossed: axis -> option -> overrides), the `seeds`, and
optionally `tags`, report `metrics` and the report's `baseline` variant. Every job runs
`research-train` with W&B group = the ablation's folder name and job_type = its variant. Runs
already completed under `logs/ablations/<name>/` (same config hash and seed) are skipped, so
re-running after a crash only runs what is missing or failed; a job killed mid-run continues from
its own `last.ckpt`; `--dry-run` lists what would run. Extra overrides that change what is
computed (the config hash) make another ablation: its runs go to
`logs/ablations/<name>+<overrides>/`, never pooled with the ablation's own.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shlex
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from research.config.compose import check_command_line, config_dir, group_options
from research.config.errors import ConfigError
from research.tracking.identity import affects_result, run_id
from research.tracking.run_dir import (
    CHECKPOINT_DIR,
    METRICS_FILE,
    find_unfinished_run,
    read_metrics,
)

_SLUG_LENGTH = 80


@dataclass
class Job:
    variant: str
    seed: int
    overrides: list[str]
    run_id: str = ""
    done: bool = False
    resume: Path | None = None  # the last.ckpt of this job's killed earlier attempt


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
    names = list(variants(spec))
    if spec.get("baseline") is not None and spec["baseline"] not in names:
        raise ConfigError(
            f"ablation {name!r}: baseline {spec['baseline']!r} is not one of its variants: "
            f"{', '.join(names)}"
        )
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


def folder_name(name: str, spec: dict[str, Any], extra: list[str]) -> str:
    """The ablation's folder (and W&B group): its name, plus `+<overrides>` when the extra
    command-line overrides change any job's config hash."""
    if not extra:
        return name
    variant, overrides = next(iter(variants(spec).items()))
    common = [*(spec.get("base") or []), *overrides, f"seed={spec['seeds'][0]}"]
    common.append(f"variant={variant}")
    (plain,) = check_command_line("train", common)
    (changed,) = check_command_line("train", [*common, *extra])
    if run_id(plain) == run_id(changed):
        return name
    named = [o for o in extra if affects_result(o.lstrip("+~").partition("=")[0])] or extra
    slug = re.sub(r"[^A-Za-z0-9._=,-]+", "-", ",".join(named))
    if len(slug) > _SLUG_LENGTH:
        slug = slug[:_SLUG_LENGTH] + "-" + run_id(changed).split("-")[0][:6]
    return f"{name}+{slug}"


def _selected(names: list[str], chosen: str | None, what: str) -> list[str]:
    """`chosen` ("a,b") as a subset of `names`; every name when None."""
    if chosen is None:
        return names
    picked = [c.strip() for c in chosen.split(",") if c.strip()]
    unknown = [c for c in picked if c not in names]
    if unknown or not picked:
        raise ConfigError(
            f"{what} {','.join(unknown) or repr(chosen)}: not in this ablation; choose from: "
            f"{', '.join(names)}"
        )
    return picked


def plan(
    name: str,
    spec: dict[str, Any],
    extra: list[str],
    folder: str | None = None,
) -> list[Job]:
    """Every (variant, seed) job of the ablation with its overrides, run id, whether it already
    completed, and the checkpoint to resume from when an earlier attempt was killed."""
    folder = folder or name
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
                f"group='{folder}'",
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
            log_root = ablation_dir(config, folder)
            completed = _completed_run_ids(log_root)
        job.done = job.run_id in completed
        unfinished = None if job.done else find_unfinished_run(log_root, job.run_id)
        if unfinished is not None:
            job.resume = unfinished / CHECKPOINT_DIR / "last.ckpt"
            job.overrides.append(f"ckpt_path='{job.resume}'")
    return jobs


def ablation_dir(config: dict[str, Any], folder: str) -> Path:
    return Path(config["paths"]["log_dir"]) / "ablations" / folder


def _completed_run_ids(root: Path) -> set[str]:
    ids = set()
    for path in root.rglob(METRICS_FILE):
        metrics = read_metrics(path.parent) or {}
        if metrics.get("status") == "completed" and metrics.get("run_id"):
            ids.add(metrics["run_id"])
    return ids


def _launch(folder: Path, jobs: list[Job], launcher_args: list[str], command: str) -> int:
    from research.cli import run, train_task

    sweep_dir = folder / datetime.now().strftime("%Y-%m-%d_%H-%M-%S-%f")
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
            f"hydra.sweeper.jobs_file='{jobs_file}'",
            f"hydra.sweep.dir='{sweep_dir}'",
            "hydra.sweep.subdir=${hydra.job.num}_${variant}_s${seed}",
            *launcher_args,
        ],
        command=command,
    )


def _state(job: Job, chosen: bool) -> str:
    if job.done:
        return "done, skipped"
    if not chosen:
        return "not selected"
    return f"to run, resumes {job.resume}" if job.resume else "to run"


def summary_line(label: str, jobs: list[Job], folder: Path) -> str:
    """`ablation NAME: 18/18 runs completed`: the whole ablation, whichever call ran what."""
    completed = _completed_run_ids(folder)
    done = sum(job.run_id in completed for job in jobs)
    return f"ablation {label}: {done}/{len(jobs)} runs completed ({folder})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="research-ablate", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="an ablation in conf/ablation/")
    parser.add_argument(
        "overrides",
        nargs="*",
        help="extra overrides for every job; ones that change the config hash put the runs in "
        "their own folder logs/ablations/<name>+<overrides>/",
    )
    parser.add_argument("--dry-run", action="store_true", help="list the jobs, run nothing")
    parser.add_argument("--seeds", metavar="S[,S..]", help="run only these of the seeds")
    parser.add_argument("--only", metavar="VARIANT[,..]", help="run only these variants")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command = shlex.join(["research-ablate", *(sys.argv[1:] if argv is None else argv)])
    try:
        spec = load_ablation(args.name)
        launcher_args = [o for o in args.overrides if o.startswith(("launcher=", "hydra."))]
        extra = [o for o in args.overrides if o not in launcher_args]
        only = set(_selected(list(variants(spec)), args.only, "--only"))
        seeds = set(_selected([str(s) for s in spec["seeds"]], args.seeds, "--seeds"))
        folder = folder_name(args.name, spec, extra)
        jobs = plan(args.name, spec, extra, folder)
    except ConfigError as err:
        print(f"research-ablate: error: {err}", file=sys.stderr)
        return 2
    chosen = [job for job in jobs if job.variant in only and str(job.seed) in seeds]
    todo = [job for job in chosen if not job.done]
    for job in jobs:
        print(f"{job.variant:24s} seed={job.seed:<4d} {job.run_id}  {_state(job, job in chosen)}")
    print(
        f"{len(todo)} of {len(jobs)} jobs to run"
        + (f" (in {folder})" if folder != args.name else "")
    )
    (config,) = check_command_line("train", jobs[0].overrides)
    root = ablation_dir(config, folder)
    if args.dry_run or not todo:
        return 0
    code = _launch(root, todo, launcher_args, command)
    print(summary_line(folder, jobs, root))
    return code


def entry() -> None:
    sys.exit(main())
