"""Training batches embedded in parts: GradCache-style checkpointed mini-batches and length-sorted
document chunks must give the loss and the gradients of embedding the batch whole, with every
document still an in-batch negative and in its place."""

from __future__ import annotations

import pytest
import torch
from lightning.pytorch.utilities.data import extract_batch_size

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
    queries, query_mask = module._embed(QUERIES, is_query=True)
    documents, document_mask = module._embed(DOCUMENTS, is_query=False)
    loss = module.loss(queries, query_mask, documents, document_mask)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in module.named_parameters()}


@pytest.fixture(scope="module")
def module() -> RetrievalModule:
    torch.manual_seed(0)
    net = ColBERT(max_length_query=12, max_length_document=48).eval()  # eval: no dropout
    return RetrievalModule(net, Contrastive(temperature=0.05), optimizer=None)


def _split(module: RetrievalModule, mini_batch: int | None, bucket: int | None) -> None:
    module.train_mini_batch_size, module.train_length_bucket = mini_batch, bucket


@pytest.mark.slow  # a ColBERT forward and backward per part: about 2.5 s a case
@pytest.mark.parametrize(
    ("mini_batch", "bucket"),
    [(3, None), (None, 3), (3, 2)],  # 8 documents -> 3 + 3 + 2, or 2 + 2 + 2 + 2
    ids=["checkpointed", "length_buckets", "both"],
)
def test_parts_give_the_whole_batch_loss_and_gradients(
    module: RetrievalModule, mini_batch: int | None, bucket: int | None
):
    _split(module, None, None)
    whole_loss, whole = _loss_and_gradients(module)
    _split(module, mini_batch, bucket)
    cached_loss, cached = _loss_and_gradients(module)
    assert torch.allclose(whole_loss, cached_loss, atol=1e-5)
    assert whole.keys() == cached.keys()
    # Chunks pad to other lengths, so sums run in another order; some gradients are zero up to
    # rounding (an attention key bias shifts a softmax row), so compare all of them as one.
    whole_flat = torch.cat([g.flatten() for g in whole.values()])
    cached_flat = torch.cat([cached[name].flatten() for name in whole])
    assert (whole_flat - cached_flat).norm() < 1e-4 * whole_flat.norm()
    assert any(g.abs().sum() > 0 for g in cached.values())


def test_length_buckets_keep_each_document_in_its_place_and_pad_less(
    module: RetrievalModule, monkeypatch: pytest.MonkeyPatch
):
    _split(module, None, None)
    with torch.no_grad():
        whole, whole_mask = module._embed(DOCUMENTS, is_query=False)
        widths: list[int] = []
        embed = module.net.embed

        def spy(texts: list[str], is_query: bool) -> tuple[torch.Tensor, torch.Tensor]:
            embeddings, mask = embed(texts, is_query)
            widths.extend([embeddings.shape[1]] * len(texts))
            return embeddings, mask

        monkeypatch.setattr(module.net, "embed", spy)
        _split(module, None, 2)
        bucketed, bucketed_mask = module._embed(DOCUMENTS, is_query=False)
    assert torch.equal(whole_mask, bucketed_mask[:, : whole_mask.shape[1]])
    assert torch.allclose(whole[whole_mask], bucketed[bucketed_mask], atol=1e-5)
    # Four chunks, longest first, each padded to its own longest: fewer padded positions.
    assert len(widths) == len(DOCUMENTS) and widths == sorted(widths, reverse=True)
    assert sum(widths) < len(DOCUMENTS) * whole.shape[1]


def test_length_order_is_longest_first(module: RetrievalModule):
    order = module.net.length_order(DOCUMENTS, is_query=False)
    lengths = [len(module.net.tokenizer(DOCUMENTS[i])["input_ids"]) for i in order]
    assert sorted(order) == list(range(len(DOCUMENTS)))
    assert lengths == sorted(lengths, reverse=True) and lengths[0] > lengths[-1]


def test_mini_batches_keep_only_the_embeddings_for_backward(module: RetrievalModule):
    """The whole batch leaves its activations saved for backward (~100 MB here); checkpointed
    mini-batches leave (next to) none outside the checkpoints, which recompute them."""

    def saved_bytes(mini_batch: int | None) -> int:
        _split(module, mini_batch, None)
        total = 0

        def pack(tensor: torch.Tensor) -> torch.Tensor:
            nonlocal total
            total += tensor.numel() * tensor.element_size()
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            module._embed(DOCUMENTS, is_query=False)
        return total

    cached, whole = saved_bytes(2), saved_bytes(None)
    assert whole > 10_000_000 and cached * 5 < whole, (cached, whole)


@pytest.mark.parametrize("key", ["train_mini_batch_size", "train_length_bucket"])
def test_a_zero_part_size_is_a_config_error(key: str):
    with pytest.raises(ConfigError, match=key):
        RetrievalModule(ColBERT(), Contrastive(), optimizer=None, **{key: 0})


def test_a_batch_of_texts_counts_its_queries_for_throughput(module: RetrievalModule):
    # Lightning finds no tensor in a batch of texts (its extract_batch_size raises on one).
    batch = {"queries": QUERIES, "documents": DOCUMENTS}
    with pytest.raises(Exception, match="batch_size"):
        extract_batch_size(batch)
    assert module.batch_samples(batch) == len(QUERIES)
