"""What every checkpoint carries besides the weights, and how a run dir resumed from another
folder's checkpoint keeps its checkpoint bookkeeping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning as L

from research.utils.atomic import link_atomic


class RunIdentity(L.Callback):
    """Stores the run id, the W&B run id and the model family in every checkpoint, so a resume
    continues both runs and a checkpoint of another model is refused by name."""

    def __init__(self, run_id: str, wandb_run_id: str | None, model: str) -> None:
        self.run_id = run_id
        self.wandb_run_id = wandb_run_id
        self.model = model

    def on_save_checkpoint(
        self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        checkpoint["research"] = {
            "run_id": self.run_id,
            "wandb_run_id": self.wandb_run_id,
            "model": self.model,
        }


_CHECKPOINT_PATHS = ("best_model_path", "kth_best_model_path", "last_model_path")


class ReanchorCheckpoints(L.Callback):
    """Keeps the checkpoint bookkeeping of a run that continues from another folder's checkpoint:
    a moved or copied run dir, or a new run dir resuming another run (`ckpt_path=<file.ckpt>`,
    `research-ablate` again after a kill).

    ModelCheckpoint saves absolute paths in its state and, when its folder no longer matches,
    drops its best score and then writes `best-v1.ckpt` beside the old `best.ckpt`. Before that
    state is loaded, the paths under the old folder are rewritten to the current one, and a
    checkpoint they name that is still in the old folder but not in the current one is linked
    into it: otherwise a resumed run whose best epoch came before the resume would end naming a
    `best.ckpt` that is not there, and its test of the best checkpoint would fail."""

    def on_load_checkpoint(
        self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        current = {c.state_key: c.dirpath for c in trainer.checkpoint_callbacks}
        for key, state in (checkpoint.get("callbacks") or {}).items():
            new, old = current.get(key), state.get("dirpath") if isinstance(state, dict) else None
            if not new or not old or new == old:
                continue
            moves: dict[str, str] = {}

            def moved(path: Any, old: str = old, new: str = new, moves: dict = moves) -> Any:
                text = str(path) if path else ""
                if not text.startswith(old):
                    return path
                moves[text] = new + text[len(old) :]
                return moves[text]

            state["dirpath"] = new
            for name in _CHECKPOINT_PATHS:
                if name in state:
                    state[name] = moved(state[name])
            if isinstance(state.get("best_k_models"), dict):
                state["best_k_models"] = {moved(k): v for k, v in state["best_k_models"].items()}
            if trainer.is_global_zero:
                _link_missing(moves)


def _link_missing(moves: dict[str, str]) -> None:
    """Give each checkpoint file of the old folder that the new one lacks a second name there."""
    for source, target in moves.items():
        if Path(source).is_file() and not Path(target).exists():
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            link_atomic(source, target)
