"""The evaluation step of the context-extension study: RoPE scaling at the matching factors,
without fine-tuning and after a short fine-tune at 4L, then the table and the plot.

    research-ablate context_extension
    python experiments/context_extension/evaluate.py [--finetune-steps 200]

For every completed training run of the ablation (trained at context L):
- as trained: its own test perplexity at L, 2L, 4L, 8L (from its metrics.json);
- RoPE runs, no fine-tuning: `research-eval` with rope_scaling linear / ntk / dynamic / yarn at
  factor k (original_max_position_embeddings = L), read at length kL (k = 2, 4, 8): each length
  gets the factor that stretches L to it;
- RoPE runs, fine-tuned: `research-train ... model.init_from=<its best.ckpt> data.context=4L`
  for --finetune-steps steps (PI's protocol scaled down; tokens per step as in training) with
  each scaling at factor 4, and once with no scaling (the control), then tested at L..8L.
Every perplexity is over the same held-out tokens (data.eval_tokens), at every length. Runs and
evaluations already completed are read back, not run again. Writes results.md (mean ± std over
seeds) and ppl_vs_length.png next to this file (or --out).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

SCALINGS = ("linear", "ntk", "dynamic", "yarn")
POSITIONS = ("none", "learned", "sinusoidal", "rope")
FINETUNE_FACTOR = 4
PLOT_CEILING = 100.0  # perplexity; the unigram baseline is about 580
HERE = Path(__file__).parent


def completed_runs(root: Path, experiment: str = "context_extension") -> list[dict[str, Any]]:
    """The newest completed training run per run id (config hash + seed) under root."""
    runs: dict[str, dict[str, Any]] = {}
    for path in sorted(root.rglob("metrics.json")):
        run = json.loads(path.read_text())
        if run.get("status") != "completed" or run.get("task_name") != "train":
            continue
        if run.get("experiment") != experiment or run["config"]["model"].get("init_from"):
            continue
        known = runs.get(run["run_id"])
        if known is None or run["finished_at"] > known["finished_at"]:
            runs[run["run_id"]] = run
    return list(runs.values())


def lengths(run: dict[str, Any]) -> list[int]:
    data = run["config"]["data"]
    return sorted({data["context"], *(data.get("eval_lengths") or [])})


def ppl_at(metrics: dict[str, Any], context: int, length: int) -> float:
    return metrics[f"test/ppl{'' if length == context else f'@{length}'}"]


def scaling_overrides(method: str, factor: int, original: int) -> list[str]:
    # Spaces after the colons: research-eval's overrides are read as YAML, research-train's by
    # Hydra's grammar; this form means the same mapping to both.
    block = (
        f"{{rope_type: {method}, factor: {factor}, original_max_position_embeddings: {original}}}"
    )
    return [f"model.net.rope_scaling={block}"]


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit(f"{name} is not on PATH; activate the project's virtualenv")
    return found


def _run(command: list[str], metrics_file: Path) -> dict[str, Any]:
    """Run a research-* command unless its metrics.json says it already completed."""
    if metrics_file.is_file() and json.loads(metrics_file.read_text())["status"] == "completed":
        return json.loads(metrics_file.read_text())
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or not metrics_file.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{' '.join(command[:2])} failed ({metrics_file.parent}): {last}")
    return json.loads(metrics_file.read_text())


def scaled(run: dict[str, Any], method: str, factor: int, out: Path) -> float:
    """Test perplexity at factor x L of a run evaluated under a RoPE scaling, no fine-tuning."""
    context = run["config"]["data"]["context"]
    overrides = [*scaling_overrides(method, factor, context)]
    overrides.append(f"data.eval_lengths=[{factor * context}]")
    folder = out / run["run_id"] / f"{method}-x{factor}"
    command = [
        _tool("research-eval"),
        f"run_dir={run['run_dir']}",
        f"overrides={json.dumps(overrides)}",
        f"hydra.run.dir={folder}",
    ]
    return ppl_at(_run(command, folder / "metrics.json")["final"], context, factor * context)


def finetuned(run: dict[str, Any], method: str, steps: int, out: Path) -> dict[int, float]:
    """Test perplexity per length after fine-tuning a run at 4L with one scaling (or none)."""
    data = run["config"]["data"]
    context, long = data["context"], FINETUNE_FACTOR * data["context"]
    checkpoint = Path(run["run_dir"]) / run["best"]["checkpoint"]
    folder = out / f"{run['run_id']}-ft-{method}"
    others = [n for n in lengths(run) if n != long]
    command = [
        _tool("research-train"),
        "experiment=context_extension",
        f"seed={run['seed']}",
        f"model.net.position={run['config']['model']['net']['position']}",
        f"model.init_from={checkpoint}",
        f"data.context={long}",
        f"data.eval_lengths=[{','.join(map(str, others))}]",
        # The same tokens per step as training: batch_size x context stays constant.
        f"data.batch_size={max(1, data['batch_size'] // FINETUNE_FACTOR)}",
        "trainer.max_epochs=1",
        f"trainer.limit_train_batches={steps}",
        f"optimizer.lr={run['config']['optimizer']['lr'] / 10}",
        "scheduler.warmup_steps=0",
        "logger=none",
        f"variant=finetune_{method}",
        "group=context_extension_finetune",
        f"hydra.run.dir={folder}",
    ]
    if method != "none":
        command += scaling_overrides(method, FINETUNE_FACTOR, context)
    final = _run(command, folder / "metrics.json")["final"]
    return {n: ppl_at(final, long, n) for n in lengths(run)}


def collect(runs: list[dict[str, Any]], steps: int, out: Path) -> dict[str, dict[int, list]]:
    """Perplexity per row (method) and length, one value per seed."""
    rows: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in sorted(runs, key=lambda r: (POSITIONS.index(_position(r)), r["seed"])):
        context = run["config"]["data"]["context"]
        for length in lengths(run):
            rows[f"{_position(run)}, as trained"][length].append(
                ppl_at(run["final"], context, length)
            )
        if _position(run) != "rope":
            continue
        for method in SCALINGS:
            rows[f"rope + {method}"][context].append(ppl_at(run["final"], context, context))
            for length in lengths(run)[1:]:
                factor = length // context
                rows[f"rope + {method}"][length].append(scaled(run, method, factor, out))
        if steps:
            for method in ("none", *SCALINGS):
                name = f"rope + {method}, fine-tuned at {FINETUNE_FACTOR}L"
                for length, ppl in finetuned(run, method, steps, out).items():
                    rows[name][length].append(ppl)
    return rows


def _position(run: dict[str, Any]) -> str:
    return run["config"]["model"]["net"]["position"]


def _cell(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def table(rows: dict[str, dict[int, list[float]]]) -> str:
    header = sorted({length for row in rows.values() for length in row})
    lines = ["| method | n | " + " | ".join(f"ppl@{n}" for n in header) + " |"]
    lines.append("|---|---:|" + "---:|" * len(header))
    for name, by_length in rows.items():
        n = len(next(iter(by_length.values())))
        cells = " | ".join(_cell(by_length[h]) if h in by_length else "" for h in header)
        lines.append(f"| {name} | {n} | {cells} |")
    return "\n".join(lines) + "\n"


def plot(rows: dict[str, dict[int, list[float]]], path: Path) -> None:
    """Two panels on one scale, without and after fine-tuning; the y axis stops at
    `PLOT_CEILING` so that a row that did not learn (named under the panel) does not flatten the
    rest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lengths = sorted({x for row in rows.values() for x in row})
    panels = {"without fine-tuning": [], "fine-tuned at 4L": []}
    for name in rows:
        panels["fine-tuned at 4L" if "fine-tuned" in name else "without fine-tuning"].append(name)
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for axis, (title, names) in zip(axes, panels.items(), strict=True):
        off_scale = []
        for name in names:
            by_length = rows[name]
            xs = sorted(by_length)
            means = [statistics.mean(by_length[x]) for x in xs]
            if min(means) > PLOT_CEILING:
                off_scale.append(f"{name} ({min(means):.0f}-{max(means):.0f})")
                continue
            spread = [statistics.stdev(by_length[x]) if len(by_length[x]) > 1 else 0 for x in xs]
            label = name.replace(", fine-tuned at 4L", "")
            axis.errorbar(xs, means, yerr=spread, marker="o", capsize=3, label=label)
        axis.set(xscale="log", xlabel="evaluation length (tokens)", title=title)
        axis.set_xticks(lengths, [str(n) for n in lengths])
        axis.minorticks_off()
        axis.legend(fontsize=7)
        if off_scale:
            axis.text(
                0.02,
                0.02,
                "off scale: " + "; ".join(off_scale),
                fontsize=7,
                transform=axis.transAxes,
            )
    axes[0].set(ylabel="test ppl", ylim=(None, PLOT_CEILING))
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("logs/ablations/context_extension"))
    parser.add_argument("--finetune-steps", type=int, default=200, help="0: no fine-tuning")
    parser.add_argument("--eval-dir", type=Path, help="evaluations and fine-tunes (root/eval)")
    parser.add_argument("--out", type=Path, default=HERE, help="results.md, ppl_vs_length.png")
    parser.add_argument(
        "--seeds",
        type=lambda text: {int(s) for s in text.split(",")},
        help="only these seeds, e.g. 0,1 (to share the work between processes; a last call "
        "without --seeds reads every finished evaluation back and writes the whole table)",
    )
    args = parser.parse_args(argv)
    runs = [r for r in completed_runs(args.root) if args.seeds is None or r["seed"] in args.seeds]
    if not runs:
        raise SystemExit(f"no completed context_extension training runs under {args.root}")
    rows = collect(runs, args.finetune_steps, args.eval_dir or args.root / "eval")
    text = table(rows)
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(text)
    plot(rows, args.out / "ppl_vs_length.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
