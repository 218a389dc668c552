"""Encoder training throughput: this repo's TransformerEncoder vs transformers.BertModel vs
torch.nn.TransformerEncoder, at the same d_model, layers, heads, d_ff and sequence length.

Each measurement runs in its own process so its peak resident memory (ru_maxrss; on a GPU,
torch.cuda.max_memory_allocated) belongs to that model alone. The contenders are interleaved
(research, bert, torch, research, bert, torch, ... for `--rounds` rounds) so a load that comes
and goes on a shared machine hits all of them alike; each round gives one ratio per peer, and
the median ratio is printed with its min-max over the rounds, next to median tokens/s of
forward + backward and peak memory (target: ratio >= 1.0 on CPU at 128 and 512).

    python benchmarks/encoder_throughput.py [--lengths 128 512] [--rounds 5] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import torch
from torch import nn

MODELS = ("research", "bert", "torch")


def build(name: str, args: argparse.Namespace) -> nn.Module:
    d, layers, heads, ff = args.d_model, args.layers, args.heads, 4 * args.d_model
    if name == "research":
        from research.models.transformer import TransformerEncoder

        return TransformerEncoder(
            vocab_size=args.vocab,
            d_model=d,
            n_layers=layers,
            n_heads=heads,
            d_ff=ff,
            dropout=0.1,
            norm="post",
            activation="gelu",
            position="learned",
            max_len=max(args.lengths),
        )
    if name == "bert":
        from transformers import BertConfig, BertModel

        config = BertConfig(
            vocab_size=args.vocab,
            hidden_size=d,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=ff,
            max_position_embeddings=max(args.lengths),
            attn_implementation="sdpa",
        )
        return BertModel(config, add_pooling_layer=False)

    class TorchEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(args.vocab, d)
            self.positions = nn.Embedding(max(args.lengths), d)
            layer = nn.TransformerEncoderLayer(d, heads, ff, 0.1, "gelu", batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            x = self.embed(input_ids) + self.positions.weight[: input_ids.shape[1]]
            return self.encoder(x, src_key_padding_mask=attention_mask == 0)

    return TorchEncoder()


def measure(name: str, length: int, args: argparse.Namespace) -> dict[str, float]:
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = build(name, args).to(device).train()
    ids = torch.randint(1, args.vocab, (args.batch, length), device=device)
    mask = torch.ones_like(ids)
    dtype = getattr(torch, args.dtype)

    def step() -> None:
        with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
            out = model(input_ids=ids, attention_mask=mask)
            hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out
        hidden.float().square().mean().backward()
        model.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(args.iters):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak = (
        torch.cuda.max_memory_allocated() / 2**20
        if device.type == "cuda"
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    return {"tokens_per_s": args.batch * length * args.iters / seconds, "peak_mib": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (>= 5)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]), args)))
        return
    print(
        f"d_model={args.d_model} layers={args.layers} heads={args.heads} d_ff={4 * args.d_model}"
        f" batch={args.batch} device={args.device} dtype={args.dtype}"
        f" threads={torch.get_num_threads()} rounds={args.rounds}"
    )
    for length in args.lengths:
        rounds = [{name: _one(name, length) for name in MODELS} for _ in range(args.rounds)]
        cells = ", ".join(
            f"{name} {_median(rounds, name, 'tokens_per_s'):8.0f} tok/s "
            f"{_median(rounds, name, 'peak_mib'):6.0f} MiB"
            for name in MODELS
        )
        print(f"len {length:4d} (medians): {cells}")
        for peer in MODELS[1:]:
            ratios = [r["research"]["tokens_per_s"] / r[peer]["tokens_per_s"] for r in rounds]
            print(
                f"          research/{peer}: median {statistics.median(ratios):.2f} "
                f"(min {min(ratios):.2f}, max {max(ratios):.2f}, {len(ratios)} rounds)"
            )


def _one(name: str, length: int) -> dict[str, float]:
    """One measurement in a fresh process, so peak memory is this model's alone."""
    cmd = [sys.executable, __file__, *sys.argv[1:], "--one", name, str(length)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _median(rounds: list[dict[str, dict[str, float]]], name: str, key: str) -> float:
    return statistics.median(r[name][key] for r in rounds)


if __name__ == "__main__":
    main()
