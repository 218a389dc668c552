"""Training on a GPU: each model family under each trainer precision, and DDP over nccl.

Every run is a real `research-train` command (`trainer=gpu callbacks=throughput logger=csv`), one
Hydra multirun per family over `trainer.precision`, so a family's precisions share one process
and its data cache. The table gives, per run, the whole run's wall time, the last epoch's
training throughput (samples/s, tokens/s, FLOP/s and MFU against Lightning's table of GPU peaks
at that precision) and the quality it reached, so a precision that trains faster but learns
less shows it:

- `cnn`: the default run (CNN on digits, 10 epochs); test accuracy of the best checkpoint.
- `lm`: the context-extension causal LM (stdlib source, context 128) at a GPU size (width 512,
  8 layers, 8 heads, batch 64, 500 steps); best val/loss, test perplexity.
- `colbert`: ColBERT on the stdlib code-search task (MiniLM, one epoch, the experiment's recipe);
  best val nDCG@10, test nDCG@10.
- `ddp`: the default run under `trainer=ddp` (DistributedDataParallel on every visible GPU,
  nccl) in bf16-mixed.
- `lm_compiled`: the `lm` run with `model.compile=true` in bf16-mixed.
- `lm_tf32`: the `lm` run in 32-true with `float32_matmul_precision=high` (TF32 matrix
  products), against `lm`'s 32-true row (full float32, torch's default).

    python benchmarks/gpu_training.py [--families cnn lm colbert ddp lm_compiled lm_tf32]
        [--precisions 32-true 16-mixed bf16-mixed] [--backbone DIR] [--json results.json]

Needs a CUDA GPU. Runs write under a temporary RESEARCH_ROOT (or --root), removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GPU = ["trainer=gpu", "callbacks=throughput", "logger=csv", "trainer.enable_progress_bar=false"]
LM = [
    "experiment=context_extension",
    "model.net.d_model=512",
    "model.net.n_layers=8",
    "model.net.n_heads=8",
    "data.batch_size=64",
    "trainer.max_epochs=2",
]
FAMILIES: dict[str, list[str]] = {
    "cnn": GPU,
    "lm": GPU + LM,
    "colbert": GPU + ["experiment=colbert_stdlib"],
    "ddp": GPU + ["trainer=ddp", "trainer.precision=bf16-mixed"],
    "lm_compiled": GPU + LM + ["model.compile=true", "trainer.precision=bf16-mixed"],
    "lm_tf32": GPU + LM + ["trainer.precision=32-true", "float32_matmul_precision=high"],
}
# Families whose precision is fixed above, so they are one run, not a sweep over --precisions.
SINGLE = {"ddp", "lm_compiled", "lm_tf32"}
# The metrics each family's quality is read from (metrics.json's `best`, else its `final`).
QUALITY = {
    "cnn": ["test/acc"],
    "ddp": ["test/acc"],
    "lm": ["val/loss", "test/ppl"],
    "lm_compiled": ["val/loss", "test/ppl"],
    "lm_tf32": ["val/loss", "test/ppl"],
    "colbert": ["val/ndcg@10", "test/ndcg@10"],
}
TRAIN = "from research.cli.train import entry; entry()"


def run_family(
    family: str, precisions: list[str], root: Path, backbone: str | None, timeout: float
) -> float:
    """One multirun of `family` under `root`, stopped after `timeout` seconds; its wall time in
    seconds (the runs' own results are read from their metrics.json)."""
    overrides = list(FAMILIES[family])
    if family == "colbert" and backbone:
        overrides.append(f"model.net.backbone={backbone}")
    if family not in SINGLE:
        overrides.append("trainer.precision=" + ",".join(precisions))
    command = [sys.executable, "-c", TRAIN, "-m", *overrides, f"hydra.sweep.dir={root / family}"]
    env = {**os.environ, "RESEARCH_ROOT": str(root), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"{family}: stopped after {timeout:.0f} s")
        return time.perf_counter() - start
    if done.returncode != 0:
        print(f"{family}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def rows_of(family: str, root: Path) -> list[dict[str, Any]]:
    """One row per run of the family, from each run's metrics.json."""
    rows = []
    for path in sorted((root / family).glob("*/metrics.json")):
        record = json.loads(path.read_text())
        final, config = record.get("final", {}), record.get("config", {})
        row = {
            "family": family,
            "precision": config.get("trainer", {}).get("precision"),
            "status": record.get("status"),
            "wall_s": record.get("wall_time_s"),
            "epochs": final.get("epoch"),
            "steps": final.get("step"),
        }
        for name in ("samples_per_s", "tokens_per_s", "flops_per_s", "mfu", "flops_per_step"):
            row[name] = final.get(f"throughput/{name}")
        for metric in QUALITY[family]:
            row[metric] = record.get("best", {}).get(metric, final.get(metric))
        row["ddp"] = record.get("ddp")  # world size, nodes and backend, with a process group
        row["error"] = record.get("error")
        rows.append(row)
    return rows


def number(value: Any, scale: float = 1.0, digits: int = 0) -> str:
    return "-" if value is None else f"{value / scale:,.{digits}f}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| run | precision | status | wall s | samples/s | tokens/s | TFLOP/s | MFU | quality |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        quality = ", ".join(
            f"{metric} {row[metric]:.4f}"
            for metric in QUALITY[row["family"]]
            if row.get(metric) is not None
        )
        ddp = row.get("ddp")
        status = row["status"] + (f" ({ddp['backend']} x{ddp['world_size']})" if ddp else "")
        lines.append(
            f"| {row['family']} | {row['precision']} | {status} "
            f"| {number(row['wall_s'], digits=1)} | {number(row['samples_per_s'])} "
            f"| {number(row['tokens_per_s'])} | {number(row['flops_per_s'], 1e12, 1)} "
            f"| {number(row['mfu'], 0.01, 1)}{'%' if row['mfu'] is not None else ''} "
            f"| {quality or row.get('error') or '-'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES))
    parser.add_argument("--precisions", nargs="+", default=["32-true", "16-mixed", "bf16-mixed"])
    parser.add_argument("--backbone", help="ColBERT's backbone folder (default: the config's)")
    parser.add_argument("--root", type=Path, help="keep the runs here (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds for each family's multirun"
    )
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("gpu_training.py: no CUDA GPU visible; this benchmark needs one")
    print(f"{torch.cuda.get_device_name()} x{torch.cuda.device_count()}, torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as scratch:
        root = args.root or Path(scratch)
        rows = []
        for family in args.families:
            seconds = run_family(family, args.precisions, root, args.backbone, args.timeout)
            rows += rows_of(family, root)
            print(f"{family}: {seconds:.0f} s (whole multirun)", flush=True)
            print(table([row for row in rows if row["family"] == family]), flush=True)
    print("all runs:\n" + table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
