"""The evaluation step of the context-extension study: how much context the models use, RoPE
scaling at the matching scales without fine-tuning and after short fine-tunes at 4L of several
budgets, written as one record per run for derive.py's tables and plots.

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
Every perplexity is over the same held-out tokens (data.eval_tokens), at every length. Runs,
evaluations and curves already completed are read back, not run again. Writes one record per
training run, `runs/<ablation>/<variant>_s<seed>.json` here (research.reports.run_records: the
run's own metrics and history, plus under `evaluation` the criterion's numbers at L and every
scaled and fine-tuned perplexity with the factor and scale it applied), from which `derive.py`
renders the README's tables, verdicts and the perplexity plots; and loss_vs_position.png here
(or --out), per-model curves (json + png) and context_use.md under the evaluation folder.
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
FINETUNE_BUDGETS = (25, 50, 100, 200)
# HF's dynamic NTK with factor 1: scale n / L at n tokens, the scale the other rows apply at n.
DYNAMIC_FACTOR = 1
HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from position_loss import (  # noqa: E402
    context_cells,
    context_use,
    load_checkpoint,
    plot_panels,
    split_losses,
    summary,
    write_curves,
)


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


def scaled_ppl(run: dict[str, Any], method: str, factor: int, length: int, out: Path) -> float:
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
    criterion at L on the test windows, and under "val" on the validation windows, where the
    training budget is chosen and the gate applied) or under a scaling at each length's
    `row_factor`, read back when already written (json + png); an as-trained json without the
    current criterion's numbers at L is measured again."""
    folder = out / run["run_id"] / "positions"
    name = "as-trained" if method == "none" else method
    context = run["config"]["data"]["context"]
    if (folder / f"{name}.json").is_file():
        saved = json.loads((folder / f"{name}.json").read_text())
        if method != "none" or "val" in saved.get(str(context), {}):
            return saved
    groups: dict[int, list[int]] = defaultdict(list)  # one model per factor
    for length in lengths(run):
        groups[row_factor(method, length, context) if method != "none" else 1].append(length)
    losses, truncated = {}, {}
    checkpoint = Path(run["run_dir"]) / run["best"]["checkpoint"]
    for k, group in groups.items():
        overrides = scaling_overrides(method, k, context) if method != "none" else []
        datamodule, net = load_checkpoint(Path(run["run_dir"]), checkpoint, overrides)
        truncate = (context,) if method == "none" else ()
        found, cut = split_losses(datamodule, net, group, truncate)
        losses.update(found)
        truncated.update(cut)
    curves = summary(dict(sorted(losses.items())), truncated)
    if method == "none":  # one group: the model as trained, still loaded
        full, cut = split_losses(datamodule, net, [context], (context,), split="val")
        curves[str(context)]["val"] = context_use(full[context], cut[context])._asdict()
    title = f"{_position(run)} seed {run['seed']}, {name}"
    write_curves(curves, title, folder, name)
    return curves


def context_gate(runs: list[dict[str, Any]], trained: dict[str, dict[str, Any]]) -> list[str]:
    """The RoPE runs that fail position_loss.context_use's criterion at L on the validation
    windows (the budget is a knob: it is chosen, and checked, on validation only)."""
    failed = []
    for run in runs:
        verdict = trained[run["run_id"]][str(run["config"]["data"]["context"])]["val"]
        if _position(run) == "rope" and not verdict["uses_whole_context"]:
            failed.append(f"seed {run['seed']} ({run['run_id']})")
    return failed


def context_table(runs: list[dict[str, Any]], trained: dict[str, dict[str, Any]]) -> str:
    """Per run at L, over the targets of the last quarter of positions, on the validation and
    the test windows: the per-window gain (loss with the window from L/2 on - loss with the whole
    window) with its 95% interval over windows, and the verdict."""
    lines = [
        "| position | variant | seed | val gain [95% CI] | val: uses whole context "
        "| test gain [95% CI] | test: uses whole context |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for run in _ordered(runs):
        found = trained[run["run_id"]][str(run["config"]["data"]["context"])]
        lines.append(
            f"| {_position(run)} | {run.get('variant') or ''} | {run['seed']} | "
            f"{context_cells(found)} |"
        )
    return "\n".join(lines) + "\n"


def evaluate_run(
    run: dict[str, Any], budgets: list[int], out: Path, curves: dict[str, list]
) -> dict[str, Any]:
    """What the study measures on one training run beyond its own test perplexities: for a
    RoPE run, each scaling's perplexity at every length past L without fine-tuning, and after
    each fine-tuning budget (and the unscaled control) at every length, each with the factor it
    passed and the effective scale it applied; every per-position curve of a scaled model is
    added to `curves` (scaling -> list of that model's curves)."""
    context = run["config"]["data"]["context"]
    if _position(run) != "rope":
        return {}
    scaled: dict[str, dict[str, Any]] = {}
    for method in SCALINGS:
        scaled[method] = {}
        for length in lengths(run):
            if length == context:  # factor 1: every scaling is the identity
                continue
            factor = row_factor(method, length, context)
            scaled[method][str(length)] = {
                "factor": factor,
                "scale": effective_scale(method, factor, context, length),
                "ppl": scaled_ppl(run, method, factor, length, out),
            }
        curves[f"rope + {method}"].append(position_curves(run, method, out))
    tuned: dict[str, dict[str, Any]] = {}
    for steps in budgets:
        tuned[str(steps)] = {}
        for method in ("none", *SCALINGS):
            factor = finetune_factor(method) if method != "none" else None
            tuned[str(steps)][method] = {
                "factor": factor,
                "scale": {
                    str(n): effective_scale(method, factor or 1, context, n) for n in lengths(run)
                },
                "ppl": {str(n): v for n, v in finetuned(run, method, steps, out).items()},
            }
    return {"scaled": scaled, "finetuned": tuned}


def write_record(run: dict[str, Any], evaluation: dict[str, Any], folder: Path) -> Path:
    """The run's record (research.reports.run_records) with `evaluation` added: the file
    derive.py reads, with no machine paths."""
    from research.reports.run_records import run_record
    from research.utils.atomic import write_json_atomic

    identity = {key: run.get(key) for key in ("run_id", "config_hash", "status", "monitor", "mode")}
    identity |= {"variant": run.get("variant") or _position(run), "seed": run["seed"]}
    record = run_record(Path(run["run_dir"]), identity) | {"evaluation": evaluation}
    path = folder / f"{identity['variant']}_s{run['seed']}.json"
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, record)
    return path


def _ordered(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        runs, key=lambda r: (POSITIONS.index(_position(r)), r.get("variant") or "", r["seed"])
    )


def _position(run: dict[str, Any]) -> str:
    return run["config"]["model"]["net"]["position"]


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
    found.add_argument(
        "--records", type=Path, help="run records (default: runs/<root's name> beside this file)"
    )
    found.add_argument("--out", type=Path, default=HERE, help="loss_vs_position.png")
    found.add_argument(
        "--seeds",
        type=lambda text: {int(s) for s in text.split(",")},
        help="only these seeds, e.g. 0,1 (to share the work between processes; a last call "
        "without --seeds reads every finished evaluation back and draws loss_vs_position.png "
        "over all seeds)",
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
    records = args.records or HERE / "runs" / args.root.name
    trained = {run["run_id"]: position_curves(run, "none", out) for run in runs}
    context = context_table(runs, trained)
    print(context, end="")
    out.mkdir(parents=True, exist_ok=True)
    (out / "context_use.md").write_text(context)
    failed = context_gate(runs, trained)
    if failed and not (args.no_context_gate or args.check_context):
        raise SystemExit(
            f"RoPE runs {', '.join(failed)} do not use their whole context at L (see "
            f"{out / 'context_use.md'}): train longer (trainer.max_epochs) or pass "
            "--no-context-gate"
        )
    curves: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in _ordered(runs):
        at_l = trained[run["run_id"]][str(run["config"]["data"]["context"])]
        evaluation = {
            "context_length": run["config"]["data"]["context"],
            "context": {k: v for k, v in at_l.items() if k != "curve"},
        }
        curves[f"{_position(run)}, as trained"].append(trained[run["run_id"]])
        if not args.check_context:
            evaluation |= evaluate_run(run, args.finetune_steps, out, curves)
        print(f"wrote {write_record(run, evaluation, records)}")
    if not args.check_context:
        args.out.mkdir(parents=True, exist_ok=True)
        plot_panels(mean_curves(curves), args.out / "loss_vs_position.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
