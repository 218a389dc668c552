"""Signs of life of a worker's running trials, for parallel workers on one study.

A trial is RUNNING in the study both while another worker runs it and after its worker died
without a word (SIGKILL, a lost node). Only the second may be failed and redrawn; failing the
first would make its worker's `tell` raise. So a worker stamps the time on the trials it runs
every `interval_for(grace_s)` seconds, and a RUNNING trial without a stamp (or start) in the
last `grace_s` seconds (`hydra.sweeper.heartbeat_grace_s`, default `GRACE_S`) is taken as
abandoned. The stamps are user attributes of the trial, so any
Optuna storage carries them (Optuna's own heartbeat works only inside `Study.optimize`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

ALIVE_ATTR = "research:alive"
INTERVAL_S = 10.0
GRACE_S = 60.0


def interval_for(grace_s: float) -> float:
    """How often a worker stamps its trials: several times within the grace, at most every
    INTERVAL_S seconds (each stamp is a write to the study's storage)."""
    return min(INTERVAL_S, grace_s / 4)


def stamp(trial: Any) -> None:
    """Record that `trial` (a live optuna.Trial) is being run now."""
    trial.set_user_attr(ALIVE_ATTR, time.time())


@contextlib.contextmanager
def beating(trials: list[Any], interval_s: float = INTERVAL_S) -> Iterator[None]:
    """Stamp `trials` now and every `interval_s` seconds until the block ends."""
    import optuna

    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval_s):
            for trial in trials:
                with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
                    stamp(trial)

    for trial in trials:
        stamp(trial)
    thread = threading.Thread(target=beat, name="optuna-trial-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def abandoned(trial: Any, now: float, grace_s: float = GRACE_S) -> bool:
    """True for a RUNNING trial (frozen) that no worker has stamped for `grace_s` seconds."""
    last = trial.user_attrs.get(ALIVE_ATTR)
    if last is None and trial.datetime_start is not None:
        last = trial.datetime_start.timestamp()
    return last is None or now - float(last) > grace_s
