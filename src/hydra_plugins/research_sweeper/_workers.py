"""`hydra.sweeper.n_workers=N`: N processes that each pull trials from one shared study.

The workers are submitit jobs, built from the `hydra.launcher` config the way Hydra's submitit
launcher builds its own: under `launcher=submitit_slurm` one SLURM job array (partition, timeout,
cpus, mem, setup, additional_parameters, submitit_folder as configured), otherwise N local
processes (submitit's local executor; `launcher=submitit_local`'s parameters when given). Each
worker runs its trials one at a time in its own process, with Hydra's basic launcher, into the
command's sweep dir; the command waits for them all, then reports the study once.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf, read_write

# Where a trial records the worker that ran it (to find, or kill, a worker in tests and ops).
WORKER_ATTR = "research:worker"
# Local workers without a launcher=submitit_local time limit: a search's own length.
LOCAL_TIMEOUT_MIN = 7 * 24 * 60
# Hydra's basic launcher, by the option Hydra registers for it (`hydra/launcher=basic`).
BASIC_LAUNCHER = "hydra/launcher/basic.yaml"


def this_worker() -> dict[str, Any]:
    """Who runs a trial: host, process id and, in a submitit job (a worker), its job id."""
    try:
        import submitit

        job = submitit.JobEnvironment().job_id
    except (ImportError, RuntimeError):  # not a submitit job: a search without n_workers
        job = None
    return {"host": socket.gethostname(), "pid": os.getpid(), "job_id": job}


def check_launcher(submitit: Mapping[str, Any] | None) -> None:
    """A worker is one process (one task of one node): its trials run inside it. Several tasks
    per job would each be a worker of their own, with no DDP between them. `submitit`: the
    submitit launcher's parameters (its config, or the instance's `params`); None for another
    launcher."""
    from research.config.errors import ConfigError

    if submitit is None:
        return
    tasks, nodes = submitit.get("tasks_per_node", 1), submitit.get("nodes", 1)
    if tasks != 1 or nodes != 1:
        raise ConfigError(
            f"hydra.launcher.tasks_per_node={tasks}, nodes={nodes} with hydra.sweeper.n_workers: "
            "each worker is one process that runs its trials in turn; set "
            "hydra.launcher.tasks_per_node=1 hydra.launcher.nodes=1 (and gpus_per_node to the "
            "GPUs of one trial)"
        )


def _executor(launcher: Any, sweep_dir: Path) -> Any:
    """A submitit executor from the configured launcher's parameters, as Hydra's submitit
    launcher makes one (hydra_submitit_launcher.submitit_launcher.BaseSubmititLauncher.launch)."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import (
        BaseSubmititLauncher,
        SlurmLauncher,
    )

    if isinstance(launcher, BaseSubmititLauncher):
        cluster = "slurm" if isinstance(launcher, SlurmLauncher) else "local"
        params = dict(launcher.params)
    else:  # Hydra's basic launcher: local processes, no time limit of their own
        cluster, params = "local", {"timeout_min": LOCAL_TIMEOUT_MIN}
    folder = params.pop("submitit_folder", str(sweep_dir / ".submitit" / "%j"))
    init = (
        {f"{cluster}_max_num_timeout": params.pop("max_num_timeout")}
        if "max_num_timeout" in params
        else {}
    )
    executor = submitit.AutoExecutor(folder=folder, cluster=cluster, **init)
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    executor.update_parameters(
        **{k if k in base else f"{cluster}_{k}": v for k, v in params.items()}
    )
    return executor


class Worker:
    """One worker, run by submitit in a process of its own: the search sweeper with Hydra's
    basic launcher instead of the configured one, pulling trials until the study is done."""

    def __init__(self, sweeper: Any, arguments: list[str]) -> None:
        self.sweeper, self.arguments = sweeper, arguments

    def __call__(self, index: int, singleton_state: dict[Any, Any]) -> int:
        from hydra.core.config_store import ConfigStore
        from hydra.core.plugins import Plugins
        from hydra.core.singleton import Singleton
        from hydra.core.utils import setup_globals

        Singleton.set_state(singleton_state)
        setup_globals()
        sweeper = self.sweeper
        config = sweeper.config.copy()
        basic = OmegaConf.to_container(ConfigStore.instance().load(BASIC_LAUNCHER).node)
        with read_write(config.hydra):  # Hydra 1.4 hands sweepers a read-only `hydra` node
            OmegaConf.update(config, "hydra.launcher", basic, merge=False)
        sweeper.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=sweeper.hydra_context, task_function=sweeper.task_function, config=config
        )
        sweeper.work(self.arguments)
        return index


def run_workers(sweeper: Any, study: Any, arguments: list[str], sweep_dir: Path) -> Path:
    """Start `sweeper.n_workers` workers and wait until they have all ended, or the search is
    done and `heartbeat_grace_s` has passed (a worker that died without a word may never be
    reported ended: SLURM without accounting); those still not ended then, dead or still queued,
    are cancelled. Each worker that did not end well is named on stderr. Returns the folder of
    the workers' logs."""
    from hydra.core.singleton import Singleton

    from hydra_plugins.research_sweeper._study import search_done

    assert sweeper.launcher is not None
    executor = _executor(sweeper.launcher, sweep_dir)
    n = int(sweeper.n_workers)
    jobs = executor.map_array(Worker(sweeper, arguments), range(n), [Singleton.get_state()] * n)
    logs = Path(str(executor.folder))
    logs = logs.parent if "%j" in logs.name else logs
    print(
        f"hparams_search: {n} workers on study {sweeper.study_name!r} "
        f"(jobs {', '.join(str(j.job_id) for j in jobs)}; logs in {logs})"
    )
    done_at = None
    while not all(job.done() for job in jobs):
        if search_done(study, sweeper.n_trials):
            done_at = done_at or time.monotonic()
            if time.monotonic() - done_at > sweeper.heartbeat_grace_s:
                break
        time.sleep(1.0)
    for index, job in enumerate(jobs):
        if not job.done():
            job.cancel(check=False)
            _warn(
                index,
                job,
                f"had not ended {sweeper.heartbeat_grace_s:g} s after the search "
                "did (it died, or never started): cancelled",
            )
            continue
        if not job.paths.result_pickle.exists():
            # Killed, or its set-up failed: nothing to wait for (job.result() would wait 15 s
            # for a result file a slow network filesystem might not show yet).
            _warn(index, job, f"ended before the search did, without a result ({job.state})")
            continue
        try:
            job.result()
        except Exception as err:  # noqa: BLE001 - any way a worker ends; the others went on
            reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
            _warn(index, job, f"ended before the search did ({reason})")
    return logs


def _warn(index: int, job: Any, what: str) -> None:
    print(
        f"hparams_search: warning: worker {index} (job {job.job_id}) {what}; a trial it was "
        "running, if any, is failed and redrawn by the other workers",
        file=sys.stderr,
    )
