"""GradCache-style training batches: embedding a batch in checkpointed mini-batches must give the
loss and the gradients of embedding it whole, with every document still an in-batch negative."""

from __future__ import annotations

import pytest
import torch

from research.config.errors import ConfigError
from research.losses.contrastive import Contrastive
from research.models.colbert import ColBERT
from research.tasks.retrieval import RetrievalModule

QUERIES = [
    "sort a list in place",
    "open a socket to a remote host",
    "parse a date from a string",
    "read a file line by line",
]
# Two documents per query (positive, negative), of very different lengths, so the mini-batches
# tokenize to different lengths and the padding between them is exercised.
DOCUMENTS = [
    "def sort(items): items.sort()",
    "def connect(host): return socket.create_connection((host, 80))",
    "def connect(host, port, timeout=None, retries=3):\n    for attempt in range(retries):\n"
    "        try:\n            return socket.create_connection((host, port), timeout)\n"
    "        except OSError:\n            continue",
    "def sort(items): return sorted(items)",
    "def parse(text): return datetime.strptime(text, '%Y-%m-%d')",
    "def lines(path): return open(path).read()",
    "def lines(path):\n    with open(path) as f:\n        for line in f:\n            yield line",
    "def parse(text): return int(text)",
]


def _loss_and_gradients(module: RetrievalModule) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    module.zero_grad(set_to_none=True)
    queries, query_mask = module._embed(QUERIES, query_mode=True)
    documents, document_mask = module._embed(DOCUMENTS, query_mode=False)
    loss = module.loss(queries, query_mask, documents, document_mask)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in module.named_parameters()}


@pytest.fixture(scope="module")
def module() -> RetrievalModule:
    torch.manual_seed(0)
    net = ColBERT(max_length_query=12, max_length_document=48).eval()  # eval: no dropout
    return RetrievalModule(net, Contrastive(temperature=0.05), optimizer=None)


def test_mini_batches_give_the_whole_batch_loss_and_gradients(module: RetrievalModule):
    module.train_mini_batch_size = None
    whole_loss, whole = _loss_and_gradients(module)
    module.train_mini_batch_size = 3  # 4 queries -> 3 + 1, 8 documents -> 3 + 3 + 2
    cached_loss, cached = _loss_and_gradients(module)
    assert torch.allclose(whole_loss, cached_loss, atol=1e-5)
    assert whole.keys() == cached.keys()
    for name, gradient in whole.items():
        assert torch.allclose(gradient, cached[name], atol=1e-5, rtol=1e-4), name
    assert any(g.abs().sum() > 0 for g in cached.values())


def test_mini_batches_keep_only_the_embeddings_for_backward(module: RetrievalModule):
    """The whole batch leaves its activations saved for backward (~100 MB here); checkpointed
    mini-batches leave (next to) none outside the checkpoints, which recompute them."""

    def saved_bytes(mini_batch: int | None) -> int:
        module.train_mini_batch_size = mini_batch
        total = 0

        def pack(tensor: torch.Tensor) -> torch.Tensor:
            nonlocal total
            total += tensor.numel() * tensor.element_size()
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            module._embed(DOCUMENTS, query_mode=False)
        return total

    cached, whole = saved_bytes(2), saved_bytes(None)
    assert whole > 10_000_000 and cached * 5 < whole, (cached, whole)


def test_a_zero_mini_batch_is_a_config_error():
    with pytest.raises(ConfigError, match="train_mini_batch_size"):
        RetrievalModule(ColBERT(), Contrastive(), optimizer=None, train_mini_batch_size=0)
