"""The evaluation step of the context-extension study: how much context the models use, RoPE
scaling at the matching scales without fine-tuning and after short fine-tunes at 4L of several
budgets, then the tables and the plots.

    research-ablate context_extension
    python experiments/context_extension/evaluate.py [--finetune-steps 25,50,100,200]

For every completed training run of the ablation (trained at context L):
- as trained: its own test perplexity at L, 2L, 4L, 8L (from its metrics.json), and its
  per-position test loss at each length (position_loss.py), with the criterion "uses its whole
  context" at L (position_loss.context_use: the last quarter's targets predicted better from the
  whole window than from its second half); RoPE runs that fail it stop the script before any
  scaling runs (unless --no-context-gate), since scalings of a model that ignores far context
  say little;
- RoPE runs, no fine-tuning: `research-eval` with rope_scaling linear / ntk / yarn at factor k
  (original_max_position_embeddings = L) read at length kL (k = 2, 4, 8), and dynamic NTK at
  one fixed factor, DYNAMIC_FACTOR = 1 (HF's convention: the scale at n tokens is
  max(1, factor * n / L - (factor - 1)), so n / L: k at kL), so every row applies scale k at kL;
  per-position losses of each at every length;
- RoPE runs, fine-tuned: for each budget of --finetune-steps, `research-train ...
  model.init_from=<its best.ckpt> data.context=4L` for that many steps (PI's protocol scaled
  down; tokens per step as in training; each budget its own run, its cosine schedule over its
  own steps) with linear / ntk / yarn at factor 4, dynamic at DYNAMIC_FACTOR, and once with no
  scaling (the control), then tested at L..8L.
Every row names the effective scale it applies at each length. Every perplexity is over the
same held-out tokens (data.eval_tokens), at every length. Runs, evaluations and curves already
completed are read back, not run again. Writes results.md, results.json, ppl_vs_length.png,
finetune_budgets.png and loss_vs_position.png next to this file (or --out); per-model curves
(json + png) and context_use.md under the evaluation folder.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCALINGS = ("linear", "ntk", "dynamic", "yarn")
POSITIONS = ("none", "learned", "sinusoidal", "rope")
FINETUNE_FACTOR = 4
FINETUNE_BUDGETS = (25, 50, 100, 200)
# HF's dynamic NTK with factor 1: scale n / L at n tokens, the scale the other rows apply at n.
DYNAMIC_FACTOR = 1
PLOT_CEILING = 100.0  # perplexity; the unigram baseline is about 580
HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from position_loss import plot_panels, run_position_losses, summary, write_curves  # noqa: E402


@dataclass
class Row:
    """One table row: a model (as trained, scaled, or fine-tuned for `steps`) and its
    perplexity per length, one value per seed, with the effective RoPE scale it applies at
    each length (empty: no scaling)."""

    label: str
    steps: int | None = None
    ppl: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    scale: dict[int, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.label + (f", fine-tuned {self.steps} steps at 4L" if self.steps else "")


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


def row_factor(method: str, length: int, context: int) -> int:
    """The rope_scaling factor a row passes to reach `length` without fine-tuning: the multiple
    of L that stretches L to it, but dynamic NTK's one fixed factor (it scales with n itself)."""
    return DYNAMIC_FACTOR if method == "dynamic" else length // context


def finetune_factor(method: str) -> int:
    return DYNAMIC_FACTOR if method == "dynamic" else FINETUNE_FACTOR


def effective_scale(method: str, factor: float, context: int, length: int) -> float:
    """The scale a row applies at `length`: the factor itself for linear / ntk / yarn, dynamic
    NTK's length-dependent scale (positions.dynamic_scale), 1 with no scaling."""
    if method == "none":
        return 1.0
    if method == "dynamic":
        from research.models.transformer.positions import dynamic_scale

        return dynamic_scale(factor, length, context)
    return float(factor)


def scaled(run: dict[str, Any], method: str, factor: int, length: int, out: Path) -> float:
    """Test perplexity at `length` of a run evaluated under a RoPE scaling, no fine-tuning."""
    context = run["config"]["data"]["context"]
    overrides = [*scaling_overrides(method, factor, context)]
    overrides.append(f"data.eval_lengths=[{length}]")
    folder = out / run["run_id"] / f"{method}-x{factor}-at{length}"
    command = [
        _tool("research-eval"),
        f"run_dir={run['run_dir']}",
        f"overrides={json.dumps(overrides)}",
        f"hydra.run.dir={folder}",
    ]
    return ppl_at(_run(command, folder / "metrics.json")["final"], context, length)


def finetune_command(run: dict[str, Any], method: str, steps: int, folder: Path) -> list[str]:
    """`research-train` fine-tuning a run at 4L for `steps` steps with one scaling (or none)."""
    data = run["config"]["data"]
    context, long = data["context"], FINETUNE_FACTOR * data["context"]
    checkpoint = Path(run["run_dir"]) / run["best"]["checkpoint"]
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
        f"variant=finetune{steps}_{method}",
        "group=context_extension_finetune",
        f"hydra.run.dir={folder}",
    ]
    if method != "none":
        command += scaling_overrides(method, finetune_factor(method), context)
    return command


def finetuned(run: dict[str, Any], method: str, steps: int, out: Path) -> dict[int, float]:
    """Test perplexity per length after fine-tuning a run at 4L for `steps` steps."""
    long = FINETUNE_FACTOR * run["config"]["data"]["context"]
    factor = f"-x{finetune_factor(method)}" if method != "none" else ""
    folder = out / f"{run['run_id']}-ft{steps}-{method}{factor}"
    final = _run(finetune_command(run, method, steps, folder), folder / "metrics.json")["final"]
    return {n: ppl_at(final, long, n) for n in lengths(run)}


def position_curves(run: dict[str, Any], method: str, out: Path) -> dict[str, Any]:
    """Per-position test loss of a run at every length, as trained (method "none", with the
    criterion at L) or under a scaling at each length's `row_factor`, read back when already
    written (json + png); an as-trained json without the current criterion's numbers at L is
    measured again."""
    folder = out / run["run_id"] / "positions"
    name = "as-trained" if method == "none" else method
    context = run["config"]["data"]["context"]
    if (folder / f"{name}.json").is_file():
        saved = json.loads((folder / f"{name}.json").read_text())
        if method != "none" or "loss_truncated" in saved.get(str(context), {}):
            return saved
    groups: dict[int, list[int]] = defaultdict(list)  # one model per factor
    for length in lengths(run):
        groups[row_factor(method, length, context) if method != "none" else 1].append(length)
    losses, truncated = {}, {}
    checkpoint = Path(run["run_dir"]) / run["best"]["checkpoint"]
    for k, group in groups.items():
        overrides = scaling_overrides(method, k, context) if method != "none" else []
        truncate = (context,) if method == "none" else ()
        found, cut = run_position_losses(
            Path(run["run_dir"]), checkpoint, overrides, group, truncate
        )
        losses.update(found)
        truncated.update(cut)
    curves = summary(dict(sorted(losses.items())), truncated)
    title = f"{_position(run)} seed {run['seed']}, {name}"
    write_curves(curves, title, folder, name)
    return curves


def context_gate(runs: list[dict[str, Any]], trained: dict[str, dict[str, Any]]) -> list[str]:
    """The RoPE runs whose per-position loss at L fails position_loss.context_use's criterion."""
    failed = []
    for run in runs:
        verdict = trained[run["run_id"]][str(run["config"]["data"]["context"])]
        if _position(run) == "rope" and not verdict["uses_whole_context"]:
            failed.append(f"seed {run['seed']} ({run['run_id']})")
    return failed


def context_table(runs: list[dict[str, Any]], trained: dict[str, dict[str, Any]]) -> str:
    """Per run at L, over the targets of the last quarter of positions: their mean loss with the
    whole window and with the window from L/2 on, the per-window gain (truncated - full) with its
    95% interval over windows, and the verdict."""
    lines = [
        "| position | variant | seed | loss, whole window | loss, from L/2 | gain [95% CI] "
        "| windows | uses whole context |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for run in _ordered(runs):
        v = trained[run["run_id"]][str(run["config"]["data"]["context"])]
        lines.append(
            f"| {_position(run)} | {run.get('variant') or ''} | {run['seed']} "
            f"| {v['loss_full']:.4f} | {v['loss_truncated']:.4f} "
            f"| {v['gain']:.4f} [{v['low']:.4f}, {v['high']:.4f}] | {v['windows']} "
            f"| {'yes' if v['uses_whole_context'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def collect(
    runs: list[dict[str, Any]], budgets: list[int], out: Path, curves: dict[str, list]
) -> dict[str, Row]:
    """Perplexity per row and length, one value per seed; every per-position curve of a scaled
    model is added to `curves` (row label -> list of that model's curves)."""
    rows: dict[str, Row] = {}

    def row(label: str, steps: int | None = None) -> Row:
        return rows.setdefault(Row(label, steps).name, Row(label, steps))

    for run in _ordered(runs):
        context = run["config"]["data"]["context"]
        trained = row(f"{_position(run)}, as trained")
        for length in lengths(run):
            trained.ppl[length].append(ppl_at(run["final"], context, length))
        if _position(run) != "rope":
            continue
        for method in SCALINGS:
            scaling = row(f"rope + {method}")
            for length in lengths(run):
                factor = row_factor(method, length, context)
                scaling.scale[length] = effective_scale(method, factor, context, length)
                if length == context:  # factor 1: every scaling is the identity
                    scaling.ppl[length].append(ppl_at(run["final"], context, context))
                else:
                    scaling.ppl[length].append(scaled(run, method, factor, length, out))
            curves[scaling.label].append(position_curves(run, method, out))
        for steps in budgets:
            for method in ("none", *SCALINGS):
                tuned = row(f"rope + {method}", steps)
                for length, ppl in finetuned(run, method, steps, out).items():
                    tuned.ppl[length].append(ppl)
                    tuned.scale[length] = effective_scale(
                        method, finetune_factor(method), context, length
                    )
    return rows


def _ordered(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        runs, key=lambda r: (POSITIONS.index(_position(r)), r.get("variant") or "", r["seed"])
    )


def _position(run: dict[str, Any]) -> str:
    return run["config"]["model"]["net"]["position"]


def _cell(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def table(rows: dict[str, Row]) -> str:
    """Mean ± std over seeds per row and length, with the scale each row applies per length."""
    header = sorted({length for row in rows.values() for length in row.ppl})
    names = "/".join(map(str, header))
    lines = [f"| method | scale at {names} | n | " + " | ".join(f"ppl@{n}" for n in header) + " |"]
    lines.append("|---|---|---:|" + "---:|" * len(header))
    for row in rows.values():
        n = len(next(iter(row.ppl.values())))
        scale = "/".join(f"{row.scale[h]:g}" if h in row.scale else "-" for h in header)
        cells = " | ".join(_cell(row.ppl[h]) if h in row.ppl else "" for h in header)
        lines.append(f"| {row.name} | {scale if row.scale else 'none'} | {n} | {cells} |")
    return "\n".join(lines) + "\n"


def as_json(rows: dict[str, Row]) -> dict[str, Any]:
    return {
        row.name: {
            "steps": row.steps,
            "scale": {str(n): s for n, s in sorted(row.scale.items())},
            "ppl": {str(n): v for n, v in sorted(row.ppl.items())},
        }
        for row in rows.values()
    }


def plot(rows: dict[str, Row], path: Path) -> None:
    """One panel without fine-tuning and one per fine-tuning budget, on one scale; the y axis
    stops at `PLOT_CEILING` so that a row that did not learn (named under the panel) does not
    flatten the rest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lengths = sorted({x for row in rows.values() for x in row.ppl})
    panels: dict[str, list[Row]] = defaultdict(list)
    for row in rows.values():
        title = f"fine-tuned {row.steps} steps at 4L" if row.steps else "without fine-tuning"
        panels[title].append(row)
    figure, axes = plt.subplots(
        1, len(panels), figsize=(5.5 * len(panels), 4.5), sharey=True, squeeze=False
    )
    for axis, (title, members) in zip(axes[0], panels.items(), strict=True):
        off_scale = []
        for row in members:
            xs = sorted(row.ppl)
            means = [statistics.mean(row.ppl[x]) for x in xs]
            if min(means) > PLOT_CEILING:
                off_scale.append(f"{row.label} ({min(means):.0f}-{max(means):.0f})")
                continue
            spread = [statistics.stdev(row.ppl[x]) if len(row.ppl[x]) > 1 else 0 for x in xs]
            axis.errorbar(xs, means, yerr=spread, marker="o", capsize=3, label=row.label)
        axis.set(xscale="log", xlabel="evaluation length (tokens)", title=title)
        axis.set_xticks(lengths, [str(n) for n in lengths])
        axis.minorticks_off()
        if axis.get_legend_handles_labels()[0]:  # every row of a panel can be off scale
            axis.legend(fontsize=7)
        if off_scale:
            axis.text(
                0.02,
                0.02,
                "off scale: " + "; ".join(off_scale),
                fontsize=7,
                transform=axis.transAxes,
            )
    axes[0][0].set(ylabel="test ppl", ylim=(None, PLOT_CEILING))
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_budgets(rows: dict[str, Row], path: Path) -> None:
    """Perplexity at each length from 4L on against the fine-tuning budget, a line per scaling:
    how fast each recovers (PI's and YaRN's claims)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tuned = [row for row in rows.values() if row.steps]
    if not tuned:
        return
    context = min(n for row in tuned for n in row.ppl)
    shown = [n for n in sorted({n for row in tuned for n in row.ppl}) if n >= 4 * context]
    figure, axes = plt.subplots(1, len(shown), figsize=(5.5 * len(shown), 4.5), squeeze=False)
    for axis, length in zip(axes[0], shown, strict=True):
        for label in dict.fromkeys(row.label for row in tuned):
            members = sorted((r for r in tuned if r.label == label), key=lambda r: r.steps)
            means = [statistics.mean(r.ppl[length]) for r in members]
            axis.plot([r.steps for r in members], means, marker="o", label=label)
        axis.set(xscale="log", xlabel="fine-tuning steps at 4L", title=f"test ppl@{length}")
        steps = sorted({r.steps for r in tuned})
        axis.set_xticks(steps, [str(s) for s in steps])
        axis.minorticks_off()
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def mean_curves(curves: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, list[float]]]:
    """Per length, each model's per-position curve averaged over seeds."""
    panels: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for label, found in curves.items():
        for length in found[0]:
            seeds = [entry[length]["curve"] for entry in found]
            panels[f"{length} tokens"][label] = [
                statistics.mean(v) for v in zip(*seeds, strict=True)
            ]
    return dict(sorted(panels.items(), key=lambda item: int(item[0].split()[0])))


def budgets(text: str) -> list[int]:
    """--finetune-steps: comma-separated budgets, e.g. 25,50,100,200; 0 for no fine-tuning."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        values = [-1]
    if values == [0]:
        return []
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give positive step counts separated by commas (e.g. 25,50,100,200), "
            "or 0 for no fine-tuning"
        )
    return sorted(set(values))


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    found.add_argument("--root", type=Path, default=Path("logs/ablations/context_extension"))
    found.add_argument(
        "--finetune-steps",
        type=budgets,
        default=list(FINETUNE_BUDGETS),
        help="fine-tuning budgets in steps, comma-separated (default 25,50,100,200); "
        "0: no fine-tuning",
    )
    found.add_argument("--eval-dir", type=Path, help="evaluations and fine-tunes (root/eval)")
    found.add_argument("--out", type=Path, default=HERE, help="results.md, results.json, plots")
    found.add_argument(
        "--seeds",
        type=lambda text: {int(s) for s in text.split(",")},
        help="only these seeds, e.g. 0,1 (to share the work between processes; a last call "
        "without --seeds reads every finished evaluation back and writes the whole table)",
    )
    found.add_argument(
        "--check-context",
        action="store_true",
        help="only the per-position curves of the trained runs and the criterion at L "
        "(context_use.md): to choose the training budget",
    )
    found.add_argument(
        "--no-context-gate",
        action="store_true",
        help="run the scalings even when a RoPE run does not use its whole context at L",
    )
    return found


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    runs = [r for r in completed_runs(args.root) if args.seeds is None or r["seed"] in args.seeds]
    if not runs:
        raise SystemExit(f"no completed context_extension training runs under {args.root}")
    out = args.eval_dir or args.root / "eval"
    trained = {run["run_id"]: position_curves(run, "none", out) for run in runs}
    context = context_table(runs, trained)
    print(context, end="")
    out.mkdir(parents=True, exist_ok=True)
    (out / "context_use.md").write_text(context)
    if args.check_context:
        return 0
    failed = context_gate(runs, trained)
    if failed and not args.no_context_gate:
        raise SystemExit(
            f"RoPE runs {', '.join(failed)} do not use their whole context at L (see "
            f"{out / 'context_use.md'}): train longer (trainer.max_epochs) or pass "
            "--no-context-gate"
        )
    curves: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in _ordered(runs):
        curves[f"{_position(run)}, as trained"].append(trained[run["run_id"]])
    rows = collect(runs, args.finetune_steps, out, curves)
    text = table(rows)
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(f"{text}\nContext use at L (per run):\n\n{context}")
    (args.out / "results.json").write_text(json.dumps(as_json(rows), indent=1) + "\n")
    plot(rows, args.out / "ppl_vs_length.png")
    plot_budgets(rows, args.out / "finetune_budgets.png")
    plot_panels(mean_curves(curves), args.out / "loss_vs_position.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
