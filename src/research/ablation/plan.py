"""The jobs of an ablation: every (variant, seed) with its overrides, its run id, whether it already
completed under `logs/ablations/<folder>/`, and the checkpoint a killed earlier attempt left.

Extra command-line overrides that change what is computed (the config hash) make another ablation:
its runs go to `logs/ablations/<name>+<overrides>/`, never pooled with the ablation's own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from research.ablation.spec import variants
from research.config.compose import check_command_line
from research.config.errors import ConfigError
from research.config.names import quoted
from research.config.shared_compositions import shared_compositions
from research.tracking.identity import affects_result, run_id
from research.tracking.run_dir import (
    CHECKPOINT_DIR,
    METRICS_FILE,
    find_unfinished_run,
    other_attempt,
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
    running: Path | None = None  # the run dir where another live process runs this job now


def folder_name(name: str, spec: dict[str, Any], extra: list[str]) -> str:
    """The ablation's folder (and W&B group): its name, plus `+<overrides>` when the extra
    command-line overrides change any job's config hash."""
    if not extra:
        return name
    variant, overrides = next(iter(variants(spec).items()))
    common = [*(spec.get("base") or []), *overrides, f"seed={spec['seeds'][0]}"]
    common.append(f"variant={variant}")
    plain = job_config(common, variant, overrides)
    changed = job_config([*common, *extra], variant, overrides)
    if run_id(plain) == run_id(changed):
        return name
    named = [o for o in extra if affects_result(o.lstrip("+~").partition("=")[0])] or extra
    slug = re.sub(r"[^A-Za-z0-9._=,-]+", "-", ",".join(named))
    if len(slug) > _SLUG_LENGTH:
        slug = slug[:_SLUG_LENGTH] + "-" + run_id(changed).split("-")[0][:6]
    return f"{name}+{slug}"


def plan(
    name: str,
    spec: dict[str, Any],
    extra: list[str],
    folder: str | None = None,
) -> list[Job]:
    """Every (variant, seed) job of the ablation with its overrides, run id, whether it already
    completed or another process runs it now, and the checkpoint to resume from when an earlier
    attempt was killed."""
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
                f"group={quoted(folder)}",
                f"tags={tags}",
            ],
        )
        for variant, overrides in variants(spec).items()
        for seed in spec["seeds"]
    ]
    completed: set[str] = set()
    log_root: Path | None = None
    own = variants(spec)
    with shared_compositions():
        configs = [job_config(job.overrides, job.variant, own[job.variant]) for job in jobs]
    for job, config in zip(jobs, configs, strict=True):
        job.run_id = run_id(config)
        if log_root is None:
            log_root = ablation_dir(config, folder)
            completed = _completed_run_ids(log_root)
        job.done = job.run_id in completed
        attempt = None if job.done else other_attempt(log_root, job.run_id)
        if attempt is not None and attempt[1] == "running":
            job.running = attempt[0]
            continue
        unfinished = None if job.done else find_unfinished_run(log_root, job.run_id)
        if unfinished is not None:
            job.resume = unfinished / CHECKPOINT_DIR / "last.ckpt"
            job.overrides.append(f"ckpt_path={quoted(job.resume)}")
    return jobs


def job_config(overrides: list[str], variant: str, own: list[str]) -> dict[str, Any]:
    """One job's checked config. A mistake that only the variant's own overrides make (a key
    that the command line's other choices removed, say) names the variant, whose overrides are
    not on the command line the user typed."""
    try:
        (config,) = check_command_line("train", overrides)
    except ConfigError as err:
        try:
            check_command_line("train", [o for o in overrides if o not in own])
        except ConfigError:
            raise err from None
        raise ConfigError(f"variant {variant} ({' '.join(own)}): {err}") from None
    return config


def ablation_dir(config: dict[str, Any], folder: str) -> Path:
    return Path(config["paths"]["log_dir"]) / "ablations" / folder


def _completed_run_ids(root: Path) -> set[str]:
    ids = set()
    for path in root.rglob(METRICS_FILE):
        metrics = read_metrics(path.parent) or {}
        if metrics.get("status") == "completed" and metrics.get("run_id"):
            ids.add(metrics["run_id"])
    return ids


def summary_line(label: str, jobs: list[Job], folder: Path) -> str:
    """`ablation NAME: 18/18 runs completed`: the whole ablation, whichever call ran what."""
    completed = _completed_run_ids(folder)
    done = sum(job.run_id in completed for job in jobs)
    return f"ablation {label}: {done}/{len(jobs)} runs completed ({folder})"
