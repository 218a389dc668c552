"""Gradient norms at initialisation, per layer, for post-norm and pre-norm encoders of several
depths (Xiong et al. 2020, Figure 3 and Theorem 1).

    python experiments/xiong2020/init_gradients.py --out experiments/xiong2020

Every model is built from `experiment=xiong2020` by the framework's own config composition and
`hydra.utils.instantiate`, as `research-train` builds it (dropout set to 0, as in the paper's
analysis). The gradients are those of the experiment's loss on a fixed set of batches (the first
of the validation split); for each seed, depth, norm position and init the norm of
each layer's FFN output weight (`linear2.weight`) and attention output weight
(`attention.out.weight`) is averaged over the batches. Writes init_gradients.json (every
number), init_gradients.md (tables, fitted slopes) and init_gradients.png.

The slope is the least-squares slope of ln(last layer's norm) against ln(n_layers), fitted per
seed; Theorem 1 predicts about 0 for post-norm (O(d sqrt(ln d))) and -1/2 for pre-norm
(O(d sqrt(ln d / L))) under Xavier init.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from matplotlib.figure import Figure

from research.callbacks.grad_norms import layer_grad_norms
from research.config.compose import check_command_line
from research.config.resolvers import register_resolvers
from research.run.build import build_task

PARAMS = ("linear2.weight", "attention.out.weight")
NORMS = ("post", "pre")


def build(overrides: list[str]) -> tuple[Any, Any]:
    """(datamodule, task) as `research-train experiment=xiong2020 <overrides>` builds them."""
    (config,) = check_command_line("train", ["experiment=xiong2020", *overrides])
    return build_task(config)


def fixed_batches(datamodule: Any, count: int) -> list[dict[str, torch.Tensor]]:
    """The first `count` batches of the validation split (not shuffled): the same for every
    model and seed."""
    datamodule.setup("fit")
    batches = list(itertools.islice(datamodule.val_dataloader(), count))
    if len(batches) < count:
        raise SystemExit(f"--batches {count}: the validation split has only {len(batches)}")
    return batches


def layer_norms(module: Any, batches: list[dict[str, torch.Tensor]]) -> dict[str, list[float]]:
    """Per parameter kind: the gradient norm of each layer, averaged over the batches."""
    n_layers = module.net.encoder.n_layers
    sums = {p: np.zeros(n_layers) for p in PARAMS}
    for batch in batches:
        inputs = dict(batch)
        targets = inputs.pop("labels")
        module.zero_grad(set_to_none=True)
        module.loss(module(inputs), targets).backward()
        norms = layer_grad_norms(module.net, params=[f"*{p}" for p in PARAMS])
        for param in PARAMS:
            for layer in range(n_layers):
                sums[param][layer] += norms[f"grad_norm/layer_{layer}/{param}"]
    return {p: (s / len(batches)).tolist() for p, s in sums.items()}


def slope(depths: list[int], values: list[float]) -> float:
    return float(np.polyfit(np.log(depths), np.log(values), 1)[0])


def measure(args: argparse.Namespace) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    batches = None
    for init in args.inits:
        for norm in NORMS:
            for depth in args.depths:
                for seed in args.seeds:
                    overrides = [
                        f"model.net.norm={norm}",
                        f"model.net.n_layers={depth}",
                        f"model.net.init={init}",
                        "model.net.dropout=0.0",
                        f"seed={seed}",
                        *args.overrides,
                    ]
                    torch.manual_seed(seed)
                    datamodule, module = build(overrides)
                    if batches is None:
                        batches = fixed_batches(datamodule, args.batches)
                    norms = layer_norms(module, batches)
                    results.append(
                        {"init": init, "norm": norm, "n_layers": depth, "seed": seed, **norms}
                    )
                    print(
                        f"{init} {norm} L={depth} seed={seed}: last linear2 "
                        f"{norms['linear2.weight'][-1]:.4g}",
                        flush=True,
                    )
    return {"overrides": args.overrides, "batches": args.batches, "runs": results}


def slopes(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per init, norm and parameter: the fitted slope of each seed, their mean and std."""
    rows = []
    runs = data["runs"]
    for init in dict.fromkeys(r["init"] for r in runs):
        for norm in NORMS:
            for param in PARAMS:
                per_seed = []
                for seed in dict.fromkeys(r["seed"] for r in runs):
                    mine = sorted(
                        (
                            r
                            for r in runs
                            if (r["init"], r["norm"], r["seed"]) == (init, norm, seed)
                        ),
                        key=lambda r: r["n_layers"],
                    )
                    depths = [r["n_layers"] for r in mine]
                    per_seed.append(slope(depths, [r[param][-1] for r in mine]))
                rows.append(
                    {
                        "init": init,
                        "norm": norm,
                        "param": param,
                        "slopes": per_seed,
                        "mean": statistics.mean(per_seed),
                        "std": statistics.stdev(per_seed) if len(per_seed) > 1 else 0.0,
                    }
                )
    return rows


def mean_std(values: list[float]) -> str:
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3g} ± {std:.2g}"


def tables(data: dict[str, Any], fitted: list[dict[str, Any]]) -> str:
    runs = data["runs"]
    seeds = sorted({r["seed"] for r in runs})
    lines = [
        f"Gradient norms at initialisation, mean ± std over seeds {seeds}, each the average "
        f"over {data['batches']} fixed batches. Overrides: `{' '.join(data['overrides']) or '-'}`.",
        "",
        "**Fitted slope of ln(last layer's norm) against ln(n_layers)** (per seed, then mean ± "
        "std; Theorem 1: post-norm ~0, pre-norm ~-0.5):",
        "",
        "| init | norm | parameter | slope | per seed |",
        "|---|---|---|---:|---|",
    ]
    for row in fitted:
        per_seed = ", ".join(f"{s:.3f}" for s in row["slopes"])
        lines.append(
            f"| {row['init']} | {row['norm']} | {row['param']} | "
            f"{row['mean']:.3f} ± {row['std']:.3f} | {per_seed} |"
        )
    for param in PARAMS:
        lines += [
            "",
            f"**`{param}` gradient norm: first, middle and last layer; last / first**",
            "",
            "| init | norm | n_layers | first | middle | last | last / first |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        keys = dict.fromkeys((r["init"], r["norm"], r["n_layers"]) for r in runs)
        for init, norm, depth in keys:
            mine = [
                r[param]
                for r in runs
                if (r["init"], r["norm"], r["n_layers"]) == (init, norm, depth)
            ]
            first, middle, last = ([n[i] for n in mine] for i in (0, depth // 2, -1))
            ratio = [n[-1] / n[0] for n in mine]
            lines.append(
                f"| {init} | {norm} | {depth} | {mean_std(first)} | {mean_std(middle)} | "
                f"{mean_std(last)} | {mean_std(ratio)} |"
            )
    return "\n".join(lines) + "\n"


def plot(data: dict[str, Any], fitted: list[dict[str, Any]]) -> Figure:
    """Per init: the FFN output weight's norm per layer (mean over seeds), and the last layer's
    norm against depth on log-log axes with the fitted slopes."""
    runs = data["runs"]
    inits = list(dict.fromkeys(r["init"] for r in runs))
    fig = Figure(figsize=(11, 4.0 * len(inits)), layout="constrained")
    axes = fig.subplots(len(inits), 2, squeeze=False)
    colors = {"post": "tab:red", "pre": "tab:blue"}
    param = PARAMS[0]
    for row, init in enumerate(inits):
        by_layer, by_depth = axes[row]
        for norm in NORMS:
            depths = sorted(
                {r["n_layers"] for r in runs if r["init"] == init and r["norm"] == norm}
            )
            lasts = []
            for depth in depths:
                mine = np.array(
                    [
                        r[param]
                        for r in runs
                        if (r["init"], r["norm"], r["n_layers"]) == (init, norm, depth)
                    ]
                )
                style = {"color": colors[norm], "alpha": 0.35 + 0.65 * depth / max(depths)}
                by_layer.plot(
                    range(1, depth + 1),
                    mine.mean(0),
                    marker=".",
                    **style,
                    label=f"{norm} L={depth}",
                )
                lasts.append(mine[:, -1])
            means = [x.mean() for x in lasts]
            fit = next(
                f for f in fitted if (f["init"], f["norm"], f["param"]) == (init, norm, param)
            )
            by_depth.errorbar(
                depths,
                means,
                yerr=[x.std(ddof=1) for x in lasts],
                marker="o",
                color=colors[norm],
                capsize=3,
                label=f"{norm}: slope {fit['mean']:.2f} ± {fit['std']:.2f}",
            )
        by_layer.set(
            yscale="log",
            xlabel="layer",
            ylabel=f"|grad {param}| at init",
            title=f"init={init}: per layer (mean over seeds)",
        )
        by_layer.legend(fontsize=7, ncol=2)
        by_depth.set(
            xscale="log",
            yscale="log",
            xlabel="n_layers",
            ylabel=f"last layer |grad {param}|",
            title=f"init={init}: last layer vs depth (mean ± std over seeds)",
        )
        by_depth.set_xticks(depths, [str(d) for d in depths])
        by_depth.legend()
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[6, 12, 24])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--inits", nargs="+", default=["xavier", "gpt2"])
    parser.add_argument("--batches", type=int, default=4, help="fixed batches averaged over")
    parser.add_argument("--out", type=Path, default=Path("experiments/xiong2020"))
    parser.add_argument("overrides", nargs="*", help="more research-train overrides")
    args = parser.parse_args()
    if len(args.depths) < 2:
        parser.error("--depths needs at least two depths to fit a slope")
    register_resolvers()
    torch.set_num_threads(1)
    start = time.process_time()
    data = measure(args)
    data["cpu_seconds"] = round(time.process_time() - start, 1)
    fitted = slopes(data)
    data["slopes"] = fitted
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "init_gradients.json").write_text(json.dumps(data, indent=1) + "\n")
    (args.out / "init_gradients.md").write_text(tables(data, fitted))
    plot(data, fitted).savefig(args.out / "init_gradients.png", dpi=110)
    print(tables(data, fitted))
    print(f"{data['cpu_seconds']} CPU seconds; wrote init_gradients.json/.md/.png to {args.out}")


if __name__ == "__main__":
    main()
