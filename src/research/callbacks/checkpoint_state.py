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

            def moved(path: Any, old: str = old, new: str = new) -> Any:
                text = str(path) if path else ""
                return new + text[len(old) :] if text.startswith(old) else path

            state["dirpath"] = new
            for name in _CHECKPOINT_PATHS:
                if name in state:
                    state[name] = moved(state[name])
            if isinstance(state.get("best_k_models"), dict):
                state["best_k_models"] = {moved(k): v for k, v in state["best_k_models"].items()}
            if trainer.is_global_zero:
                named = [state.get(name) for name in _CHECKPOINT_PATHS]
                _link_missing(old, new, [*named, *(state.get("best_k_models") or {})])


def _link_missing(old: str, new: str, paths: list[Any]) -> None:
    """Give each checkpoint under `new` that is missing there but still under `old` (its earlier
    name) a second name there."""
    for path in {str(p) for p in paths if p and str(p).startswith(new)}:
        source = Path(old + path[len(new) :])
        if source.is_file() and not Path(path).exists():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            link_atomic(source, path)
