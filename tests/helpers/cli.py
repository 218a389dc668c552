"""Run the command-line tools as a user would, and read what a run leaves behind. Shared by the
end-to-end tests (tests/cli, tests/reports, ...).

`run_cli` calls the entry point's `main(argv)` in this process (as lightning-hydra-template's tests
do): the console output is captured, and the global state a command changes (environment,
working directory, sys.argv, logging handlers, Hydra's singletons) is put back afterwards, so
tests stay independent without paying a Python + torch start-up per command. `subprocess=True`
runs the installed console script instead, where a process of its own is the point: signals,
DDP ranks, SLURM, a closed console, what a fresh interpreter imports.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess as sp
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from research.utils.logging_state import root_logging_restored

BIN = Path(sys.executable).parent
# Short, quiet runs: a few batches of two epochs.
FAST = ["debug=limit", "trainer.enable_progress_bar=false", "trainer.enable_model_summary=false"]


def _entry(prog: str) -> Callable[[list[str]], int]:
    from research.cli import ablate, eval, index, report, train

    return {
        "research-train": train.main,
        "research-eval": eval.main,
        "research-ablate": ablate.main,
        "research-report": report.main,
        "research-index": index.main,
    }[prog]


def cli_env(cwd: Path) -> dict[str, str]:
    """The environment a command gets: none of the caller's W&B or research settings, W&B
    quiet, the hub offline, the project root (where logs/ go) at `cwd`; the session's shared data
    folder is kept."""
    keep = ("RESEARCH_DATA_DIR",)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WANDB_", "RESEARCH_")) or k in keep
    }
    env.update(
        WANDB_SILENT="true", HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore", RESEARCH_ROOT=str(cwd)
    )
    return env


@contextlib.contextmanager
def _isolated(cwd: Path, env: dict[str, str]) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """Within the block: `env` as the environment, `cwd` as the working directory, stdout and
    stderr captured; afterwards everything as it was, Hydra and logging reset."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), list(sys.argv)
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with (
            root_logging_restored(),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            yield out, err
    finally:
        GlobalHydra.instance().clear()
        HydraConfig.instance().cfg = None  # type: ignore[assignment]
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv[:] = saved_argv


def run_cli(
    prog: str,
    *args: str,
    cwd: Path,
    timeout: float = 300,
    env: dict[str, str | None] | None = None,
    subprocess: bool = False,
) -> sp.CompletedProcess[str]:
    """Run `prog args` with `cwd` as working directory and project root; its exit status, stdout
    and stderr. In this process unless `subprocess` (then within `timeout` seconds). `env`
    adds to the environment; a None value removes that variable."""
    merged = {**cli_env(cwd), **(env or {})}
    full_env = {k: v for k, v in merged.items() if v is not None}
    if subprocess:
        return sp.run(
            [str(BIN / prog), *args],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    with _isolated(cwd, full_env) as (out, err):
        try:
            code = _entry(prog)(list(args))
        except SystemExit as exit_:  # argparse's own errors and --help
            code = exit_.code if isinstance(exit_.code, int) else 1
    return sp.CompletedProcess([prog, *args], code, out.getvalue(), err.getvalue())


def shipped_wandb_config() -> dict[str, Any]:
    """conf/logger/wandb.yaml's W&B logger, offline, without its interpolations into the train
    config: what `build_loggers` gets in a default run."""
    from omegaconf import OmegaConf

    node = OmegaConf.load(Path(__file__).parents[2] / "conf" / "logger" / "wandb.yaml").wandb
    for key in ("group", "job_type", "tags"):
        node[key] = None
    node.mode = "offline"
    return OmegaConf.to_container(node)


def wandb_written() -> None:
    """Make W&B finish writing the offline runs of commands run in this process: its service
    writes a run's file out completely when it stops, which a command's process does at exit."""
    import wandb

    wandb.teardown()


def run_dirs(root: Path, task: str = "train") -> list[Path]:
    """Single-run folders under `root`, oldest first."""
    return sorted(p for p in (root / "logs" / task / "runs").glob("*") if p.is_dir())


def metrics(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "metrics.json").read_text())
