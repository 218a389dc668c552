"""Under `model.compile=true` the causal LM is one graph for every position scheme: a graph
break inside the block loop makes dynamo skip the whole encoder and run it eager (RoPE's table
cache did, before its tables were traced into the graph)."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

from research.models.transformer import CausalLanguageModel

ORIGINAL = {"original_max_position_embeddings": 16}
SCHEMES = [
    ("rope", None),
    ("rope", {"rope_type": "dynamic", "factor": 2.0, **ORIGINAL}),
    ("rope", {"rope_type": "yarn", "factor": 2.0, **ORIGINAL}),
    ("learned", None),
    ("sinusoidal", None),
    ("none", None),
]


@pytest.mark.parametrize(("position", "scaling"), SCHEMES)
def test_the_causal_lm_traces_as_one_graph(position: str, scaling: dict | None):
    torch.manual_seed(0)
    net = CausalLanguageModel(
        vocab_size=50,
        d_model=32,
        n_heads=2,
        n_layers=2,
        max_len=64,
        dropout=0.0,
        position=position,
        **({"rope_scaling": scaling} if scaling else {}),
    )
    ids = torch.randint(1, 50, (2, 24))
    eager = net(ids)
    torch._dynamo.reset()
    # fullgraph: any graph break raises, naming its cause.
    traced = torch.compile(net, backend="eager", fullgraph=True)(ids)
    assert torch.allclose(traced, eager, atol=1e-6)
    torch._dynamo.reset()
