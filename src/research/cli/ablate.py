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

`--until-decided` adds seeds in batches to each variant until its difference to the baseline is
decided (research.ablation.decide) or the seed budget is spent, and writes `decisions.json`.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from research.ablation.decide import (
    Rule,
    Verdict,
    choose_metric,
    completed_values,
    judge,
    next_counts,
    seed_sequence,
    write_decisions,
)
from research.ablation.plan import Job, ablation_dir, folder_name, plan, summary_line
from research.ablation.spec import check_not_set_per_job, load_ablation, variants
from research.cli.app import run, train_task
from research.cli.console_script import run_console_script
from research.config.compose import check_command_line
from research.config.errors import ConfigError
from research.config.names import check_overrides, quoted


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
            f"hydra.sweeper.jobs_file={quoted(jobs_file)}",
            f"hydra.sweep.dir={quoted(sweep_dir)}",
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
    until = parser.add_argument_group(
        "seeds until decided",
        "add seeds to each variant until an anytime-valid confidence sequence of its paired "
        "difference to the `baseline` excludes 0 or lies within ±margin, or the budget is spent; "
        "decisions go to <ablation folder>/decisions.json (and research-report)",
    )
    until.add_argument("--until-decided", action="store_true", help="run until decided")
    until.add_argument("--max-seeds", type=int, metavar="N", help="seed budget (default 10)")
    until.add_argument("--batch", type=int, metavar="B", help="seeds added per round (default 2)")
    until.add_argument(
        "--alpha", type=float, metavar="A", help="error rate over all variants (default 0.05)"
    )
    until.add_argument(
        "--margin", type=float, metavar="M", help="equivalent when the interval is within ±M"
    )
    until.add_argument(
        "--metric",
        metavar="M[=max|min]",
        help="the metric decided on (default: the file's first `metrics`, else the monitored "
        "metric's test value, e.g. test/acc); its direction from the checkpoint mode",
    )
    return parser


_UNTIL_OPTIONS = ("max_seeds", "batch", "alpha", "margin", "metric")


def _check_until(args: argparse.Namespace, spec: dict[str, Any], compared: list[str]) -> None:
    """Refuse --until-decided's mistakes before anything runs (one line each)."""
    given = [f"--{o.replace('_', '-')}" for o in _UNTIL_OPTIONS if getattr(args, o) is not None]
    if not args.until_decided:
        if given:
            raise ConfigError(f"{', '.join(given)} only apply with --until-decided; add it")
        return
    if spec.get("baseline") is None:
        raise ConfigError(
            f"--until-decided compares each variant with the ablation's baseline; add "
            f"`baseline: <variant>` to conf/ablation/{args.name}.yaml"
        )
    if args.seeds is not None:
        raise ConfigError("--until-decided chooses the seeds itself; drop --seeds")
    if not compared:
        raise ConfigError(f"--only names no variant besides the baseline {spec['baseline']}")
    args.max_seeds = 10 if args.max_seeds is None else args.max_seeds
    args.batch = 2 if args.batch is None else args.batch
    args.alpha = 0.05 if args.alpha is None else args.alpha
    if args.batch < 1:
        raise ConfigError(f"--batch {args.batch}: give 1 or more seeds per round")
    if not 0 < args.alpha < 1:
        raise ConfigError(f"--alpha {args.alpha}: give a number between 0 and 1, e.g. 0.05")
    if args.margin is not None and not args.margin > 0:
        raise ConfigError(f"--margin {args.margin}: give a positive difference, e.g. 0.005")
    seed_sequence(spec["seeds"], args.max_seeds)  # the budget fits the file's seeds


def _show(verdict: Verdict) -> str:
    def bound(value: float | None, infinite: str) -> str:
        return infinite if value is None else f"{value:+.4g}"

    where = (
        f"Δ={verdict.mean:+.4g} CS [{bound(verdict.low, '-inf')}, {bound(verdict.high, '+inf')}]"
        if verdict.mean is not None
        else ""
    )
    return (
        f"{verdict.variant:24s} n={len(verdict.seeds):<3d}{where:40s} {verdict.decision} "
        f"({verdict.reason})"
    )


def _paired(
    variant: str, baseline: str, seeds: list[int], jobs: list[Job], values: dict[str, float]
) -> tuple[list[int], list[float]]:
    """The seeds where both `variant` and `baseline` have a value, and the differences."""
    ids = {(job.variant, job.seed): job.run_id for job in jobs}
    both = [s for s in seeds if ids[variant, s] in values and ids[baseline, s] in values]
    return both, [values[ids[variant, s]] - values[ids[baseline, s]] for s in both]


def _until_decided(
    args: argparse.Namespace,
    spec: dict[str, Any],
    rule: Rule,
    compared: list[str],
    run_in: tuple[str, list[str], Path],
    launcher_args: list[str],
    command: str,
) -> int:
    """Rounds of seeds until every compared variant is decided or at the budget; each round is
    one multirun of what is missing (finished runs are reused, so a re-run continues)."""
    folder, extra, root = run_in
    baseline = str(spec["baseline"])
    sequence = seed_sequence(spec["seeds"], rule.max_seeds)
    counts = {v: len(spec["seeds"]) for v in compared}
    verdicts = {v: Verdict(v, "undecided", "not run yet") for v in compared}
    print(
        f"until decided: {rule.metric} ({rule.direction}) of each variant minus {baseline}, "
        f"paired by seed; alpha {rule.alpha} over {len(compared)} variants (each "
        f"{rule.level:.3g}), up to {rule.max_seeds} seeds, {args.batch} more per round"
        + (f", margin ±{rule.margin:g}" if rule.margin else "")
    )
    code = 0
    while open_ := [v for v in compared if not verdicts[v].final]:
        need = {v: sequence[: counts[v]] for v in open_}
        need[baseline] = sequence[: max(counts[v] for v in open_)]
        chosen = {v: o for v, o in variants(spec).items() if v in need}
        jobs = plan(args.name, {**spec, "variants": chosen, "seeds": need[baseline]}, extra, folder)
        jobs = [job for job in jobs if job.seed in need[job.variant]]
        todo = [job for job in jobs if not job.done]
        for job in todo:
            print(f"{job.variant:24s} seed={job.seed:<4d} {job.run_id}  {_state(job, True)}")
        if todo:
            print(f"{len(todo)} of {len(jobs)} jobs to run for {', '.join(open_)} (in {folder})")
        if todo and args.dry_run:
            return 0
        if any(job.running for job in todo):
            print("some jobs run in another process; re-run this command when they finish")
            code = 1
            break
        if todo and _launch(root, todo, launcher_args, command) != 0:
            print("some jobs failed; re-run this command to retry them and go on")
            code = 1
            break
        values = completed_values(root, rule.metric)
        missing = [job.run_id for job in jobs if job.run_id not in values]
        if missing:
            print(
                f"research-ablate: error: run {missing[0]} completed without {rule.metric}; "
                "give --metric with a metric the runs record",
                file=sys.stderr,
            )
            return 2
        for variant in open_:
            paired = _paired(variant, baseline, need[variant], jobs, values)
            verdicts[variant] = judge(variant, *paired, rule)
        counts = next_counts(counts, {v: verdicts[v] for v in open_}, rule, args.batch)
        for variant in open_:
            print(_show(verdicts[variant]))
    if not args.dry_run:
        path = write_decisions(root, args.name, baseline, rule, args.batch, list(verdicts.values()))
        print(f"decisions written to {path}")
    return code


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_intermixed_args(argv)  # overrides may follow the options
    command = shlex.join(["research-ablate", *(sys.argv[1:] if argv is None else argv)])
    try:
        check_overrides(args.overrides)
        spec = load_ablation(args.name)
        launcher_args = [o for o in args.overrides if o.startswith(("launcher=", "hydra."))]
        extra = [o for o in args.overrides if o not in launcher_args]
        check_not_set_per_job(extra, "")
        only = set(_selected(list(variants(spec)), args.only, "--only"))
        compared = [v for v in variants(spec) if v in only and v != spec.get("baseline")]
        _check_until(args, spec, compared)
        seeds = set(_selected([str(s) for s in spec["seeds"]], args.seeds, "--seeds"))
        folder = folder_name(args.name, spec, extra)
        jobs = plan(args.name, spec, extra, folder)
        (config,) = check_command_line("train", jobs[0].overrides)
        if args.until_decided:
            asked = args.metric or next(iter(spec.get("metrics") or []), None)
            metric, way = choose_metric(asked, config)
            rule = Rule(metric, way, args.alpha, len(compared), args.margin, args.max_seeds)
    except ConfigError as err:
        print(f"research-ablate: error: {err}", file=sys.stderr)
        return 2
    root = ablation_dir(config, folder)
    if args.until_decided:
        return _until_decided(
            args, spec, rule, compared, (folder, extra, root), launcher_args, command
        )
    chosen = [job for job in jobs if job.variant in only and str(job.seed) in seeds]
    todo = [job for job in chosen if not job.done and not job.running]
    for job in jobs:
        print(f"{job.variant:24s} seed={job.seed:<4d} {job.run_id}  {_state(job, job in chosen)}")
    print(
        f"{len(todo)} of {len(jobs)} jobs to run"
        + (f" (in {folder})" if folder != args.name else "")
    )
    if args.dry_run or not todo:
        return 0
    code = _launch(root, todo, launcher_args, command)
    print(summary_line(folder, jobs, root))
    return code


def entry() -> None:
    run_console_script(main)
