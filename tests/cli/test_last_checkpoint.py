"""`last.ckpt` is the last finished epoch, whether or not the monitored metric improved in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lightning as L
import pytest

import research.run.fit as fit
from research.tracking.checkpoints import read_checkpoint
from tests.helpers.cli import FAST, run_cli, run_dirs


class _Probe(L.Callback):
    """At the start of every epoch after the first, and at the end of training: the epoch that
    `last.ckpt` holds and the epoch of the history's last row. Checkpoints are written on a
    thread, so it first waits for the writes already asked for."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.seen: list[tuple[int, int]] = []

    def _look(self, trainer: L.Trainer) -> None:
        trainer.strategy.checkpoint_io.wait()
        last = read_checkpoint(self.run_dir / "checkpoints" / "last.ckpt")
        lines = (self.run_dir / "history.jsonl").read_text().splitlines()
        self.seen.append((last["epoch"], json.loads(lines[-1])["epoch"]))

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.current_epoch > 0:
            self._look(trainer)

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._look(trainer)


@pytest.mark.parametrize("mid_epoch", [False, True])
@pytest.mark.slow
def test_last_checkpoint_follows_every_epoch_when_the_monitor_never_improves(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, mid_epoch: bool
):
    probes: list[_Probe] = []
    built = fit._callbacks

    def with_probe(config: dict[str, Any], run_dir: Path, has_logger: bool) -> list[Any]:
        probes.append(_Probe(run_dir))
        return [probes[-1], *built(config, run_dir, has_logger)]

    monkeypatch.setattr(fit, "_callbacks", with_probe)
    # Monitored with mode=min, the epoch number never improves after epoch 0.
    done = run_cli(
        "research-train",
        *FAST,
        "logger=none",
        "trainer.max_epochs=4",
        "callbacks.model_checkpoint.monitor=epoch",
        "callbacks.model_checkpoint.mode=min",
        *(["trainer.val_check_interval=0.5"] if mid_epoch else []),
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = run_dirs(workdir)
    assert probes[0].seen == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert read_checkpoint(run / "checkpoints" / "best.ckpt")["epoch"] == 0
