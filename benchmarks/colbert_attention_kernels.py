"""ColBERT training steps on a GPU under each set of attention kernels: cuDNN's costs at new shapes.

Texts pad to the longest of their batch, so training batches keep bringing new shapes; cuDNN's
attention kernel plans each new shape. Each setting runs the same 30 batches (16 queries of 5-20
words, 32 documents of 20-150 words, MiniLM, AdamW) twice: the first pass meets the shapes for
the first time, the second has seen them. A setting is a trainer precision's autocast and
`research.models.hf_retriever.ATTENTION_KERNELS` (None: torch's own choice, cuDNN included).
Prints milliseconds per step (forward, contrastive loss, backward, AdamW). Settings run one after
another in the order below, so a later one finds the matrix-product libraries already set up for
those shapes; cuDNN's attention plans are its own, and the second pass has everything warm.

    python benchmarks/colbert_attention_kernels.py [--backbone DIR] [--batches 30]
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from research.losses.contrastive import Contrastive
from research.models import hf_retriever
from research.models.colbert import ColBERT

# Words of the generated texts (code-like; WordPiece keeps each one a token).
VOCABULARY = (
    "def return self value list dict import class for in if else while try except with as open "
    "read write sort key item"
)
# (label, autocast dtype or None for float32, ATTENTION_KERNELS)
SETTINGS = [
    ("float32", None, hf_retriever.ATTENTION_KERNELS),
    ("bf16, torch's kernels", torch.bfloat16, None),
    ("bf16, without cuDNN (the default)", torch.bfloat16, hf_retriever.ATTENTION_KERNELS),
    ("bf16, math only", torch.bfloat16, ("MATH",)),
    ("fp16, torch's kernels", torch.float16, None),
]


def texts(n: int, shortest: int, longest: int) -> list[str]:
    words = VOCABULARY.split()
    return [
        " ".join(random.choice(words) for _ in range(random.randint(shortest, longest)))
        for _ in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", help="MiniLM folder (default: the packaged one)")
    parser.add_argument("--batches", type=int, default=30)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("colbert_attention_kernels.py: needs a CUDA GPU (cuDNN attention)")
    torch.manual_seed(0)
    random.seed(0)
    net = ColBERT(backbone=args.backbone, max_length_document=128).cuda()
    loss_fn = Contrastive(temperature=0.05)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-5)
    batches = [(texts(16, 5, 20), texts(32, 20, 150)) for _ in range(args.batches)]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; ms per step")
    for first_or_second in ("first pass", "second pass"):
        for label, dtype, kernels in SETTINGS:
            hf_retriever.ATTENTION_KERNELS = kernels
            torch.cuda.synchronize()
            start = time.perf_counter()
            for queries, documents in batches:
                with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=bool(dtype)):
                    q, q_mask = net.embed(queries, is_query=True)
                    d, d_mask = net.embed(documents, is_query=False)
                    loss = loss_fn(q, q_mask, d, d_mask)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            torch.cuda.synchronize()
            ms = (time.perf_counter() - start) / len(batches) * 1e3
            print(f"{first_or_second}, {label}: {ms:.1f}", flush=True)


if __name__ == "__main__":
    main()
