"""Causal LM training throughput: this repo's CausalLanguageModel vs transformers' GPT-2
(`GPT2LMHeadModel`, SDPA attention), built alike at each size: width, depth, heads, context,
vocabulary, 4x feed-forward, learned absolute positions, pre-norm LayerNorm, exact GELU (GPT-2's
own is the tanh approximation: `activation_function="gelu"` makes them one function), dropout
0.1 everywhere, biases, and the head tied to the token embedding.

Before timing, GPT-2 is given this model's weights and both must return the same logits, so the
two compute one function with one parameter count. A step is forward, next-token cross-entropy,
backward and an AdamW step. All contenders live in one process (compiling once) and are timed
in turn, round after round (A B A B ...), so a load that comes and goes on a shared machine hits
them alike; each round gives one ratio, and the median is printed with its min-max (target:
research/gpt2 >= 1.0). Each size also prints its FLOPs per step (counted, and the 6 x parameters
x tokens estimate) and each model's FLOP/s, with MFU on a GPU. `--compile` adds this model under
torch.compile (the `model.compile=true` path, compiled in place) and prints compiled/eager the
same way.

    python benchmarks/causal_lm_throughput.py [--size D LAYERS HEADS CONTEXT BATCH ...]
        [--rounds 5] [--iters 2] [--compile] [--profile] [--device cpu] [--dtype float32]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

# (d_model, layers, heads, context, batch): two sizes of about two minutes each on two cores.
SIZES = [(256, 4, 4, 256, 8), (512, 8, 8, 512, 2)]
DROPOUT = 0.1


def build_research(d: int, layers: int, heads: int, context: int, vocab: int) -> nn.Module:
    from research.models.transformer import CausalLanguageModel

    return CausalLanguageModel(
        vocab_size=vocab,
        d_model=d,
        n_layers=layers,
        n_heads=heads,
        d_ff=4 * d,
        dropout=DROPOUT,
        norm="pre",
        norm_type="layernorm",
        activation="gelu",
        position="learned",
        max_len=context,
        tie_weights=True,
    )


def build_gpt2(d: int, layers: int, heads: int, context: int, vocab: int) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=vocab,
        n_positions=context,
        n_embd=d,
        n_layer=layers,
        n_head=heads,
        activation_function="gelu",
        resid_pdrop=DROPOUT,
        embd_pdrop=DROPOUT,
        attn_pdrop=DROPOUT,
        tie_word_embeddings=True,
        bos_token_id=None,  # GPT-2's 50256 lies outside a smaller vocabulary
        eos_token_id=None,
        attn_implementation="sdpa",
    )
    return GPT2LMHeadModel(config)


def copy_into_gpt2(ours: nn.Module, gpt2: nn.Module) -> None:
    """GPT-2 takes our weights; its Conv1D layers store (in, out), the transpose of Linear."""
    encoder, target = ours.encoder, gpt2.transformer
    pairs = [(target.wte, encoder.embed), (target.wpe, encoder.learned)]
    pairs.append((target.ln_f, encoder.final_norm))
    for theirs, block in zip(target.h, encoder.blocks, strict=True):
        pairs += [(theirs.ln_1, block.norm1), (theirs.ln_2, block.norm2)]
        for conv, linear in [
            (theirs.attn.c_attn, block.attention.qkv),
            (theirs.attn.c_proj, block.attention.out),
            (theirs.mlp.c_fc, block.linear1),
            (theirs.mlp.c_proj, block.linear2),
        ]:
            conv.weight.data.copy_(linear.weight.data.t())
            conv.bias.data.copy_(linear.bias.data)
    for theirs, mine in pairs:
        theirs.load_state_dict(mine.state_dict())


def check_same_function(ours: nn.Module, gpt2: nn.Module, ids: torch.Tensor) -> int:
    """Our parameter count, after asserting GPT-2's equals it and GPT-2 with our weights gives
    our logits (eval mode: no dropout)."""
    count = sum(p.numel() for p in ours.parameters())
    theirs = sum(p.numel() for p in gpt2.parameters())
    assert count == theirs, f"parameters: research {count} vs gpt2 {theirs}"
    copy_into_gpt2(ours, gpt2)
    ours.eval(), gpt2.eval()
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), gpt2(ids).logits, atol=1e-4, rtol=1e-4)
    ours.train(), gpt2.train()
    return count


def train_step(model: nn.Module, ids: torch.Tensor, dtype: torch.dtype) -> Callable[[], None]:
    """One optimisation step on `ids` (next-token loss over the whole window)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    inputs, targets = ids[:, :-1], ids[:, 1:]

    def step() -> None:
        with torch.autocast(ids.device.type, dtype=dtype, enabled=dtype != torch.float32):
            out = model(inputs)
            logits = out.logits if hasattr(out, "logits") else out
        loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def timed(step: Callable[[], None], iters: int, device: torch.device) -> float:
    """Seconds for `iters` steps."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def measure(size: tuple[int, ...], args: argparse.Namespace) -> None:
    d, layers, heads, context, batch = size
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    torch.manual_seed(0)
    research = build_research(d, layers, heads, context, args.vocab)
    gpt2 = build_gpt2(d, layers, heads, context, args.vocab)
    ids = torch.randint(1, args.vocab, (batch, context + 1))
    count = check_same_function(research, gpt2, ids[:, :context])
    ids = ids.to(device)
    models = {"research": research.to(device), "gpt2": gpt2.to(device)}
    if args.compile:
        compiled = build_research(d, layers, heads, context, args.vocab)
        compiled.load_state_dict(research.state_dict())
        compiled.compile(mode=args.compile_mode)
        models["compiled"] = compiled.to(device)
    steps = {name: train_step(model, ids, dtype) for name, model in models.items()}
    for step in steps.values():
        timed(step, args.warmup, device)  # compiles the compiled one
    tokens = batch * context * args.iters
    rounds = [
        {name: tokens / timed(step, args.iters, device) for name, step in steps.items()}
        for _ in range(args.rounds)
    ]
    medians = {name: statistics.median(r[name] for r in rounds) for name in steps}
    print(
        f"d={d} L={layers} h={heads} ctx={context} batch={batch} params={count / 1e6:.2f}M "
        f"(same in both) (medians): "
        + ", ".join(f"{name} {rate:8.0f} tok/s" for name, rate in medians.items())
    )
    print_flops(step_flops(steps["research"]), count, batch * context, medians, device, dtype)
    if args.profile:
        op_table({"research": steps["research"], "gpt2": steps["gpt2"]}, args.iters)
    pairs = [("research", "gpt2")] + ([("compiled", "research")] if args.compile else [])
    for a, b in pairs:
        ratios = [r[a] / r[b] for r in rounds]
        print(
            f"    {a}/{b}: median {statistics.median(ratios):.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} rounds)"
        )


def step_flops(step: Callable[[], None]) -> int:
    """FLOPs of one step as torch's FlopCounterMode counts them (the matrix products and
    attention of forward and backward; AdamW's elementwise work is not counted), as the
    throughput callback (`callbacks=throughput`) counts a training batch."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops()


def print_flops(
    flops: int,
    params: int,
    tokens: int,
    rates: dict[str, float],
    device: torch.device,
    dtype: torch.dtype,
) -> None:
    """FLOPs per step, counted and as the 6 x parameters x tokens estimate, and each model's
    FLOP/s and MFU (against Lightning's table of GPU peaks at `dtype`; none on a CPU). Both
    models compute one function, so one count serves all."""
    from lightning.fabric.utilities.throughput import get_available_flops

    peak = get_available_flops(device, dtype)
    print(
        f"    FLOPs/step: {flops / 1e9:,.0f} G counted, {6 * params * tokens / 1e9:,.0f} G by "
        f"6 x params x tokens" + (f"; peak {peak / 1e12:,.0f} TFLOP/s ({dtype})" if peak else "")
    )
    for name, rate in rates.items():
        flops_per_s = flops / tokens * rate
        mfu = f", MFU {flops_per_s / peak:.1%}" if peak else ""
        print(f"    {name}: {flops_per_s / 1e12:,.2f} TFLOP/s{mfu}")


def op_table(steps: dict[str, Callable[[], None]], iters: int, top: int = 12) -> None:
    """Each model's `iters` steps under torch.profiler: the ops with the most self CPU time, per
    step, side by side, so a difference in throughput can be traced to the ops behind it."""
    from torch.profiler import ProfilerActivity, profile

    per_op: dict[str, dict[str, tuple[float, float]]] = {}
    totals = {}
    for name, step in steps.items():
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(iters):
                step()
        events = prof.key_averages()
        totals[name] = sum(e.self_cpu_time_total for e in events) / 1e3 / iters
        for e in events:
            per_op.setdefault(e.key, {})[name] = (
                e.count / iters,
                e.self_cpu_time_total / 1e3 / iters,
            )
    names = list(steps)
    print("    op (self CPU per step)" + "".join(f" | {n}: calls, ms" for n in names))
    print("    total" + "".join(f" | {totals[n]:.1f} ms" for n in names))
    ranked = sorted(per_op.items(), key=lambda kv: -max(ms for _, ms in kv[1].values()))
    for op, by_model in ranked[:top]:
        cells = [by_model.get(n, (0.0, 0.0)) for n in names]
        print(f"    {op}" + "".join(f" | {calls:.0f}, {ms:.2f}" for calls, ms in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size",
        type=int,
        nargs=5,
        action="append",
        metavar=("D", "LAYERS", "HEADS", "CONTEXT", "BATCH"),
        help=f"a size to measure (repeatable); default: {SIZES}",
    )
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--iters", type=int, default=2, help="steps timed per round and model")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (>= 5)")
    parser.add_argument("--compile", action="store_true", help="also time ours compiled")
    parser.add_argument(
        "--compile-mode",
        default="default",
        choices=["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"],
    )
    parser.add_argument(
        "--profile", action="store_true", help="also print the top ops of each model's step"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    args = parser.parse_args()
    print(
        f"step = forward + cross-entropy + backward + AdamW; vocab={args.vocab} "
        f"device={args.device} dtype={args.dtype} threads={torch.get_num_threads()} "
        f"rounds={args.rounds} x {args.iters} steps; torch {torch.__version__}"
    )
    for size in args.size or SIZES:
        measure(tuple(size), args)


if __name__ == "__main__":
    main()
