"""The one line a job ends with: how it ended, its monitored metric, and where its outputs are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from research.tracking.run_dir import CHECKPOINT_DIR


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _metrics(payload: dict[str, Any]) -> str:
    """'val/acc (max) best 0.963 at epoch 1, test/acc 0.983' from a metrics.json payload; an
    evaluation of another split (no best, no test metrics) shows that split's."""
    best, final = payload.get("best") or {}, payload.get("final") or {}
    monitor = payload.get("monitor")
    parts = []
    if monitor and monitor in best:
        where = f" at epoch {best['epoch']}" if "epoch" in best else ""
        parts.append(f"{monitor} ({payload.get('mode')}) best {_number(best[monitor])}{where}")
    tested = {k: v for k, v in (best or final).items() if k.startswith("test/")} or (
        {} if best else final
    )
    twin = f"test/{monitor.split('/', 1)[1]}" if monitor and "/" in monitor else None
    shown = [twin] if twin in tested else sorted(tested)[:2]
    parts += [f"{name} {_number(tested[name])}" for name in shown]
    return ", ".join(parts)


def _outputs(run_dir: Path, wandb_id: str | None) -> str:
    found = [name for name in ("metrics.json", "history.jsonl") if (run_dir / name).is_file()]
    if (run_dir / CHECKPOINT_DIR).is_dir():
        found.append(f"{CHECKPOINT_DIR}/")
    runs = sorted((run_dir / "wandb").glob(f"offline-run-*-{wandb_id}")) if wandb_id else []
    text = f"run dir {run_dir} ({', '.join(found)})"
    return text + (f"; upload with: wandb sync {runs[-1]}" if runs else "")


def summary_line(prog: str, payload: dict[str, Any], hint: str | None = None) -> str:
    """`<prog>: <status> in <s>; <metrics>; run dir <dir> (...)` from what metrics.json holds;
    a failed run says its error, an interrupted one how to resume (`hint`)."""
    status, error = payload.get("status", "failed"), payload.get("error")
    if status == "interrupted" and error:
        head = f"{prog}: {error}"
    elif error:
        head = f"{prog}: {status}: {error}"
    else:
        head = f"{prog}: {status} in {payload.get('wall_time_s', 0):.1f} s"
    parts = [head, *([hint] if hint else [])]
    metrics = _metrics(payload)
    if metrics:
        parts.append(metrics)
    wandb_id = (payload.get("wandb") or {}).get("run_id")
    parts.append(_outputs(Path(payload["run_dir"]), wandb_id))
    return "; ".join(parts)
