"""The run dir of a single `research-train` run, claimed before Hydra writes into it.

Hydra writes `.hydra/config.yaml` into a run dir before the job runs, so a second launch into the
same dir would overwrite the first run's config before any lock inside the job could refuse it.
The pre-flight (research.run.plan) therefore creates (or checks) the dir, takes its lock and pins
it on the command line (or in the Python API's config) first; an ablation job likewise claims
its run id before it starts (research.tracking.claim).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from research.config.errors import ConfigError
from research.config.names import quoted
from research.tracking.run_lock import RunDirBusy, RunDirLock


def given(args: list[str], key: str) -> bool:
    """Whether the command line sets `key` itself (`key=value`)."""
    return any(a.startswith(f"{key}=") for a in args)


def is_rank_zero() -> bool:
    """Lightning's DDP launcher and SLURM start the other ranks with the same command line;
    only rank zero owns the run dir."""
    return all(os.environ.get(var, "0") == "0" for var in ("RANK", "LOCAL_RANK", "SLURM_PROCID"))


def pin(args: list[str], key: str, value: Path) -> None:
    """Make `key=value` the command line's only value of `key`: what Hydra and the other DDP
    ranks (which re-run the command line) use is what the CLI checked and claimed."""
    args[:] = [a for a in args if not a.startswith(f"{key}=")]
    args.append(f"{key}={quoted(value)}")


def _single_run_dir(config: dict[str, Any], hydra: Any, pinned: bool) -> tuple[Path, bool]:
    """The run dir of a single run, and whether it may exist already: `hydra.run.dir=<dir>`
    (`pinned`: named by the user), or for `ckpt_path=last` this config's newest unfinished run;
    else the new dir Hydra names from the time and the overrides."""
    from research.tracking.identity import run_id
    from research.tracking.run_dir import find_unfinished_run

    named = Path(str(hydra.run.dir)).expanduser().absolute()
    if pinned or config.get("ckpt_path") != "last":
        return named, pinned
    log_dir = Path(config["paths"]["log_dir"])
    previous = find_unfinished_run(log_dir, run_id(config))
    if previous is None:
        raise ConfigError(
            f"ckpt_path=last: no unfinished run with run id {run_id(config)} under {log_dir}; "
            "start without ckpt_path or pass a .ckpt path"
        )
    return previous, True


@dataclass
class RunDirClaim:
    """A single run's dir, held by this command from before Hydra writes anything into it until
    the run ended. A dir this command made is removed again if no run started in it, so a
    start-up failure or a signal leaves no half-made run dir."""

    run_dir: Path
    created: bool
    lock: RunDirLock | None = None

    def release(self) -> None:
        from research.tracking.run_dir import STARTED_FILE

        if self.created and not (self.run_dir / STARTED_FILE).exists():
            shutil.rmtree(self.run_dir, ignore_errors=True)
        if self.lock is not None:
            self.lock.release()


def _make_run_dir(run_dir: Path) -> bool:
    """Create `run_dir` (one process wins a race to make it); False when it exists already."""
    from research.run.preflight import check_free_space

    check_free_space(run_dir)
    try:
        run_dir.mkdir(parents=True)
    except FileExistsError:
        return False
    except OSError as err:
        raise ConfigError(
            f"cannot create the run dir {run_dir} ({err.strerror}); set paths.log_dir (or "
            "RESEARCH_LOG_DIR) to a writable folder"
        ) from None
    return True


def claim_run_dir(config: dict[str, Any], hydra: Any, pinned: bool) -> RunDirClaim | None:
    """Claim a single run's dir before Hydra writes into it (`pinned`: the user named it with
    `hydra.run.dir`). An existing dir must hold this config's unfinished run; a name Hydra made
    is never shared (a second process started in the same microsecond gets `<name>-2`). Rank
    zero only: the other ranks run in the dir it claimed."""
    from research.run.preflight import check_not_completed, check_run_dir_identity

    if not is_rank_zero():
        return None
    run_dir, reusable = _single_run_dir(config, hydra, pinned)
    if not reusable:
        names = [run_dir, *(run_dir.with_name(f"{run_dir.name}-{n}") for n in range(2, 100))]
        claim = RunDirClaim(next(name for name in names if _make_run_dir(name)), created=True)
    elif _make_run_dir(run_dir):
        claim = RunDirClaim(run_dir, created=True)
    else:
        check_run_dir_identity(run_dir, config)
        check_not_completed(run_dir)
        claim = RunDirClaim(run_dir, created=False)
    try:
        claim.lock = RunDirLock(claim.run_dir).acquire()
    except RunDirBusy:
        claim.created = False  # the live process that holds it owns it now
        raise
    except OSError as err:  # e.g. a full disk while writing the lock file
        claim.release()
        raise ConfigError(
            f"cannot write in the run dir {claim.run_dir} ({err.strerror}); free space or set "
            "paths.log_dir (or RESEARCH_LOG_DIR) to another folder"
        ) from None
    except BaseException:
        claim.release()
        raise
    return claim


def claim_attempt(prog: str, root: Path, cfg: Any) -> RunDirLock | None:
    """This job's claim on its run id in `root` (see research.tracking.claim); None, after
    saying so and removing the job's fresh dir (Hydra's files only), when another attempt
    completed or is running."""
    from hydra.core.hydra_config import HydraConfig

    from research.config.validate import resolve
    from research.tracking.claim import claim_run
    from research.tracking.identity import run_id

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    config = resolve(cfg)
    claimed = claim_run(root, run_dir, run_id(config))
    if isinstance(claimed, RunDirLock):
        return claimed
    other, state = claimed
    shutil.rmtree(run_dir, ignore_errors=True)
    name = config.get("variant") or run_dir.name
    print(f"{prog}: {name} seed={config.get('seed')} {state} in {other}; skipped", flush=True)
    return None
