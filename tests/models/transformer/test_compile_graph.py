"""Under `model.compile=true` each transformer is one graph: a graph break inside the block loop
makes dynamo skip the whole encoder and run it eager (RoPE's table cache did, before its tables
were traced into the graph), and one outside it splits the network and syncs with the host."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch._dynamo
from torch import nn

from research.models.transformer import (
    CausalLanguageModel,
    MaskedLanguageModel,
    SequenceClassifier,
)

ORIGINAL = {"original_max_position_embeddings": 16}
SCHEMES = [
    ("rope", None),
    ("rope", {"rope_type": "dynamic", "factor": 2.0, **ORIGINAL}),
    ("rope", {"rope_type": "yarn", "factor": 2.0, **ORIGINAL}),
    ("learned", None),
    ("sinusoidal", None),
    ("none", None),
]
SIZE = {"vocab_size": 50, "d_model": 32, "n_heads": 2, "n_layers": 2, "max_len": 64, "dropout": 0.0}


def assert_one_graph(net: nn.Module, *inputs: torch.Tensor | None) -> None:
    """The network compiles with no graph break (fullgraph raises at one, naming its cause) and
    computes what it computes eager."""
    eager = net(*inputs)
    torch._dynamo.reset()
    traced = torch.compile(net, backend="eager", fullgraph=True)(*inputs)
    torch._dynamo.reset()
    assert torch.allclose(traced, eager, atol=1e-5)


@pytest.mark.parametrize(("position", "scaling"), SCHEMES)
@pytest.mark.slow
def test_the_causal_lm_traces_as_one_graph(position: str, scaling: dict | None):
    torch.manual_seed(0)
    scaled = {"rope_scaling": scaling} if scaling else {}
    net = CausalLanguageModel(**SIZE, position=position, **scaled)
    assert_one_graph(net, torch.randint(1, 50, (2, 24)))


ENCODERS: dict[str, Callable[[], nn.Module]] = {
    "masked LM": lambda: MaskedLanguageModel(**SIZE, position="rope"),
    "classifier": lambda: SequenceClassifier(**SIZE, num_classes=3, pooling="mean"),
}


@pytest.mark.parametrize("name", ENCODERS)
@pytest.mark.slow
def test_encoders_trace_as_one_graph_padded_or_not(name: str):
    torch.manual_seed(0)
    net = ENCODERS[name]()
    ids = torch.randint(1, 50, (2, 24))
    padded = torch.ones(2, 24, dtype=torch.long)
    padded[1, 15:] = 0
    assert_one_graph(net, ids, padded)
    assert_one_graph(net, ids, torch.ones(2, 24, dtype=torch.long))
