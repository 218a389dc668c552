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
import json
import shlex
import sys
from datetime import datetime
from pathlib import Path

from research.ablation.plan import Job, ablation_dir, folder_name, plan, summary_line
from research.ablation.spec import load_ablation, variants
from research.cli.app import run, train_task
from research.cli.console import protect_console
from research.config.compose import check_command_line
from research.config.errors import ConfigError
from research.config.names import check_overrides


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


def _launch(folder: Path, jobs: list[Job], launcher_args: list[str], command: str) -> int:
    """Run `jobs` as one multirun in a new sweep dir of `folder`; a job that another caller
    completed or is running by the time it starts is skipped."""
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
        one_attempt_in=folder,
    )


def _state(job: Job, chosen: bool) -> str:
    if job.done:
        return "done, skipped"
    if job.running:
        return f"running in {job.running}, skipped"
    if not chosen:
        return "not selected"
    return f"to run, resumes {job.resume}" if job.resume else "to run"


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
        check_overrides(args.overrides)
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
    todo = [job for job in chosen if not job.done and not job.running]
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
    protect_console()
    sys.exit(main())
