"""The unigram baseline of the context-extension corpus: the test perplexity of predicting every
held-out token from the train split's token frequencies alone (add-one smoothed), over the same
tokens the models are scored on. A model that has learned anything beyond token frequencies
beats it by a wide margin. Writes `unigram.json` beside this file, which derive.py reads.

    python experiments/context_extension/unigram.py [hydra overrides of the data config]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from research.config.paths import config_dir
from research.config.resolvers import register_resolvers
from research.utils.atomic import write_json_atomic


def unigram(data) -> dict[str, float]:  # noqa: ANN001 - a LanguageModelDataModule
    data.setup()
    train = data.streams()["train"][:]  # memory-mapped
    counts = torch.from_numpy(np.bincount(train, minlength=data.config.vocab_size))
    log_probs = torch.log((counts + 1.0) / (counts.sum() + len(counts)))
    targets = torch.stack(list(data.splits["test"][0]))[:, 1:].flatten()
    loss = -log_probs[targets].mean().item()
    bits = loss / math.log(2) / data.bytes_per_token["test"]
    return {"tokens": len(targets), "loss": loss, "ppl": math.exp(loss), "bpb": bits}


def main(argv: list[str]) -> int:
    register_resolvers()
    with initialize_config_dir(str(config_dir()), version_base=None):
        config = compose("train", ["experiment=context_extension", *argv])
    data = instantiate(OmegaConf.to_container(config.data, resolve=True))
    result = unigram(data)
    write_json_atomic(Path(__file__).parent / "unigram.json", result)
    print(
        f"unigram baseline over {result['tokens']} test tokens: loss {result['loss']:.4f} nats, "
        f"ppl {result['ppl']:.1f}, {result['bpb']:.3f} bits per byte"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
