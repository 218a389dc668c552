"""Checks of a checked config against the machine, made before torch loads and before any run dir
exists: a mistake found here is one line, exit status 2, and nothing left on disk.

The schemas say whether a value is valid at all; these say whether it can work here: the file a
resume names, the folder logs go to, the accelerator asked for, the run dir a command reuses.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import zipfile
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from research.config.devices import process_limit, usable_cores
from research.config.errors import ConfigError
from research.config.registry import declaration
from research.config.saved_run import SAVED_CONFIG
from research.config.schema import check_node, walk_targets
from research.tracking.identity import NOT_IDENTITY, NOT_IDENTITY_NESTED, run_id
from research.tracking.run_dir import CHECKPOINT_DIR, STARTED_FILE, read_metrics

# What `torch.save(..., _use_new_zipfile_serialization=False)` files start with: pickle
# protocol 2, then torch's magic number as a 10-byte long.
LEGACY_TORCH_SAVE = b"\x80\x02\x8a\x0a"


def not_a_checkpoint(path: Path) -> str | None:
    """Why `path` cannot be a file `torch.save` wrote, or None: a zip archive with one folder
    holding `data.pkl` (or the legacy format). Only the archive's index is read, so a resume or
    an evaluation given another file fails before its run dir exists, not after it started."""
    if not path.is_file():
        return "no such file"
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except zipfile.BadZipFile:
        with path.open("rb") as file:
            legacy = file.read(len(LEGACY_TORCH_SAVE)) == LEGACY_TORCH_SAVE
        return None if legacy else "not a checkpoint (torch.save writes a zip archive)"
    except OSError as err:
        return f"unreadable ({err.strerror or err})"
    if not any(name.count("/") == 1 and name.endswith("/data.pkl") for name in names):
        return "a zip archive, but not a checkpoint (torch.save writes <folder>/data.pkl in it)"
    return None


def check_ckpt_path(config: dict[str, Any]) -> None:
    """A resume file must exist and be a checkpoint (`last` is looked up by the CLI, null
    starts fresh)."""
    ckpt = config.get("ckpt_path")
    if ckpt in (None, "last"):
        return
    path = Path(ckpt).expanduser()
    problem = not_a_checkpoint(path)
    if problem is not None:
        raise ConfigError(
            f"ckpt_path={ckpt}: {problem}; give a .ckpt file, `last` (this config's newest "
            "unfinished run) or null (start fresh)"
        )


def check_declared_files(config: dict[str, Any]) -> None:
    """Each declared component's own machine check (`Schema.check_machine`): the files a
    dataset's config names, found before the run dir is made instead of when the data is set
    up."""
    for at, node in walk_targets(config):
        schema = declaration(str(node["_target_"]))
        if schema is not None:
            check_node(at, node, schema).check_machine(at, str(node["_target_"]), config)


def check_writable(folder: Path, key: str) -> None:
    """`folder` can be created (if need be) and written to; the probe file is removed at once
    and no folder is created. As root, permission bits do not stop writes, so this writes."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(
            f"{key}={folder}: {existing} is a file, not a folder; set {key} to a folder"
        )
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise ConfigError(
            f"{key}={folder}: cannot write in {existing} ({err.strerror}); set {key} "
            "(or RESEARCH_LOG_DIR) to a writable folder"
        ) from None


def _visible_gpus() -> bool:
    """NVIDIA or ROCm device files, unless CUDA_VISIBLE_DEVICES hides every device."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    dev = Path("/dev")
    return (dev / "nvidiactl").exists() or any(dev.glob("nvidia[0-9]*")) or (dev / "kfd").exists()


def _apple_silicon() -> bool:
    return platform.system() == "Darwin" and platform.machine() == "arm64"


AVAILABLE = {
    "cuda": _visible_gpus,
    "gpu": lambda: _visible_gpus() or _apple_silicon(),
    "mps": _apple_silicon,
    "tpu": lambda: find_spec("torch_xla") is not None,
}


def check_accelerator(config: dict[str, Any], at: str = "trainer") -> None:
    """An accelerator this machine has (auto and cpu always work)."""
    accelerator = str((config.get("trainer") or {}).get("accelerator", "auto"))
    probe = AVAILABLE.get(accelerator)
    if probe is not None and not probe():
        raise ConfigError(
            f"{at}.accelerator={accelerator}: this machine has no {accelerator} device "
            "(no GPU device files visible); use trainer.accelerator=cpu or auto, or launch on a "
            "machine that has one (launcher=submitit_slurm)"
        )


def check_workers(config: dict[str, Any]) -> None:
    """Loader workers this machine can run: each is a process with its own copy of the dataset,
    and thousands of them take minutes to fork and to stop."""
    workers = (config.get("data") or {}).get("num_workers")
    cores = usable_cores()
    limit = process_limit(cores)
    if isinstance(workers, int) and workers > limit:
        raise ConfigError(
            f"data.num_workers={workers} starts {workers} loader processes but this machine has "
            f"{cores} usable cores; use data.num_workers between 0 and {limit}"
        )


def check_machine(configs: list[dict[str, Any]], hydra: Any) -> None:
    """What the schemas cannot know: files, folders and devices of this machine. Jobs that run
    elsewhere (SLURM) are not checked against this machine's devices."""
    remote = "slurm" in str(hydra.launcher.get("_target_", "")).lower()
    for log_dir in sorted({str(c["paths"]["log_dir"]) for c in configs}):
        check_writable(Path(log_dir), "paths.log_dir")
    for config in configs:
        check_ckpt_path(config)
        check_declared_files(config)
        if not remote:
            check_accelerator(config)
            check_workers(config)


def _identity_part(config: dict[str, Any]) -> dict[str, Any]:
    """The keys a run's id depends on, flattened to dotted names."""
    flat: dict[str, Any] = {}

    def walk(node: Any, at: str) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, f"{at}.{key}" if at else str(key))
        else:
            flat[at] = node

    for key, value in config.items():
        if key not in NOT_IDENTITY or key == "seed":
            skip = NOT_IDENTITY_NESTED.get(key, ())
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if k not in skip}
            walk(value, key)
    return flat


def differing_keys(saved: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """Dotted keys (seed included) whose values differ between two resolved configs."""
    a, b = _identity_part(saved), _identity_part(wanted)
    absent = object()
    return sorted(k for k in a.keys() | b.keys() if a.get(k, absent) != b.get(k, absent))


def _saved_run_id(run_dir: Path, saved: dict[str, Any] | None) -> str | None:
    """The id a run dir's run was started with (its start marker), else from its config."""
    try:
        return str(json.loads((run_dir / STARTED_FILE).read_text())["run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return run_id(saved) if saved is not None else None


def check_run_dir_identity(run_dir: Path, config: dict[str, Any]) -> None:
    """A run dir holds one run: reusing it (`hydra.run.dir=<dir>`, a resume, a requeue) is
    refused when it holds another config's run, before Hydra overwrites that run's config."""
    saved_file = run_dir / SAVED_CONFIG
    if not saved_file.is_file():
        return
    from research.config.validate import resolve

    try:
        saved: dict[str, Any] | None = resolve(OmegaConf.load(saved_file))
    except Exception:  # noqa: BLE001 - an unreadable saved config still has its start marker
        saved = None
    holds, wanted = _saved_run_id(run_dir, saved), run_id(config)
    if holds is None or holds == wanted:
        return
    keys = differing_keys(saved, config) if saved is not None else []
    shown = ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
    raise ConfigError(
        f"hydra.run.dir={run_dir} holds run {holds}, not this config's run {wanted} "
        f"(differing keys: {shown or 'unknown'}); drop hydra.run.dir to start a new run dir, "
        "or continue that run with its own config"
    )


def check_not_completed(run_dir: Path) -> None:
    """A completed run is never re-entered: it would train again from its last.ckpt, rewrite
    its metrics.json and open another W&B run."""
    metrics = read_metrics(run_dir) or {}
    if metrics.get("status") == "completed":
        raise ConfigError(
            f"hydra.run.dir={run_dir} holds the completed run {metrics.get('run_id')}, which is "
            f"never re-entered; evaluate it with `research-eval run_dir={run_dir}`, or drop "
            "hydra.run.dir to start a new run"
        )


# Room for what a run writes before its first checkpoint: Hydra's saved configs, the job's log,
# the lock and start marker, metrics.json.
MIN_FREE_BYTES = 1 << 20


def check_free_space(folder: Path) -> None:
    """The disk that will hold `folder` has room to start a run (a full disk would otherwise
    fail inside Hydra with a traceback and a half-made run dir)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    stat = os.statvfs(existing)
    free = stat.f_bavail * stat.f_frsize
    if free < MIN_FREE_BYTES:
        raise ConfigError(
            f"cannot start a run in {folder}: its disk is full ({free // 1024} KiB free); free "
            "space, or set paths.log_dir (or RESEARCH_LOG_DIR) to a folder on another disk"
        )


def eval_checkpoint(run_dir: Path, which: str, option: str = "ckpt=") -> Path:
    """The checkpoint research-eval tests: for `best`, the one the run's metrics.json names
    (so a run whose best.ckpt was overwritten or moved is still evaluated on what it reported);
    `last`; or a file path. `option` is how the caller's user spells the choice."""
    if which not in ("best", "last"):
        path = Path(which).expanduser().resolve()
        problem = not_a_checkpoint(path)
        if problem is not None:
            raise ConfigError(f"{option}{which}: {problem}; choose best, last or a .ckpt file")
        return path
    best = (read_metrics(run_dir) or {}).get("best")
    named = best.get("checkpoint") if isinstance(best, dict) else None
    if not isinstance(named, str):
        named = None
    path = run_dir / (named if which == "best" and named else Path(CHECKPOINT_DIR, f"{which}.ckpt"))
    if not path.is_file():
        saved = sorted(p.name for p in (run_dir / CHECKPOINT_DIR).glob("*.ckpt"))
        raise ConfigError(
            f"{option}{which}: {path} does not exist; the run saved: {', '.join(saved) or 'none'}"
        )
    problem = not_a_checkpoint(path)
    if problem is not None:
        raise ConfigError(f"{option}{which}: {path}: {problem}; give another .ckpt file")
    return path
