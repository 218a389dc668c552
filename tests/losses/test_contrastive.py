"""Contrastive: hand-computed cross-entropy over in-batch MaxSim scores, gradients, and the
2-process gather that must reproduce a single process on the concatenated batch."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_file

from research.losses.contrastive import Contrastive

# Each document has a second token (9, 9) that is masked: it would win every max if it counted.
MASKED = [9.0, 9.0]


def _hand_batch() -> tuple[torch.Tensor, ...]:
    """Two queries of one token, two documents each (positive first)."""
    queries = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])
    tokens = [[1.0, 0.0], [0.5, 0.0], [0.0, 2.0], [1.0, 1.0]]
    documents = torch.tensor([[token, MASKED] for token in tokens])
    document_mask = torch.tensor([[True, False]] * 4)
    return queries, torch.ones(2, 1, dtype=torch.bool), documents, document_mask


def _hand_losses(temperature: float) -> list[float]:
    # Scores q.d: query 0 -> [1, 0.5, 0, 1] (target 0); query 1 -> [0, 0, 2, 1] (target 2).
    rows = [([1.0, 0.5, 0.0, 1.0], 0), ([0.0, 0.0, 2.0, 1.0], 2)]
    return [
        -row[target] / temperature + math.log(sum(math.exp(s / temperature) for s in row))
        for row, target in rows
    ]


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_hand_computed_mean_and_sum(temperature):
    batch = _hand_batch()
    losses = _hand_losses(temperature)
    mean = Contrastive(temperature=temperature)(*batch)
    total = Contrastive(temperature=temperature, size_average=False)(*batch)
    assert mean.item() == pytest.approx(sum(losses) / 2)
    assert total.item() == pytest.approx(sum(losses))


def test_target_is_the_first_document_of_each_group():
    """Swapping a query's positive with its negative changes the loss to the swapped target's."""
    queries, query_mask, documents, document_mask = _hand_batch()
    swapped = documents[[1, 0, 3, 2]]
    # Now query 0's target scores 0.5 (not 1) and query 1's scores 1 (not 2).
    rows = [([0.5, 1.0, 1.0, 0.0], 0), ([0.0, 0.0, 1.0, 2.0], 2)]
    expected = sum(-r[t] + math.log(sum(math.exp(s) for s in r)) for r, t in rows) / 2
    loss = Contrastive(temperature=1.0)(queries, query_mask, swapped, document_mask)
    assert loss.item() == pytest.approx(expected)


def _random_batch(n_queries: int, group: int, document_length: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    queries = torch.randn(n_queries, 3, 4, generator=generator, dtype=torch.float64)
    documents = torch.randn(n_queries * group, document_length, 4, generator=generator)
    document_mask = torch.rand(n_queries * group, document_length, generator=generator) < 0.6
    document_mask[:, 0] = True
    query_mask = torch.ones(n_queries, 3, dtype=torch.bool)
    query_mask[0, -1] = False
    return queries, query_mask, documents.double(), document_mask


@pytest.mark.parametrize("size_average", [True, False])
def test_gradcheck_in_float64(size_average):
    queries, query_mask, documents, document_mask = _random_batch(2, 3, 4, seed=0)
    loss = Contrastive(temperature=0.7, size_average=size_average)
    assert torch.autograd.gradcheck(
        lambda q, d: loss(q, query_mask, d, document_mask),
        (queries.requires_grad_(True), documents.requires_grad_(True)),
    )


@pytest.mark.parametrize(
    ("kwargs", "shapes", "message"),
    [
        ({"temperature": 0.0}, (2, 4), "temperature=0.0 is out of range; it must be > 0.0"),
        ({}, (2, 5), "2 queries and 5 documents"),
        ({}, (0, 0), "0 queries and 0 documents"),
    ],
)
def test_mistakes_raise_one_line(kwargs, shapes, message):
    with pytest.raises(ValueError, match=message) as error:
        n_queries, n_documents = shapes
        Contrastive(**kwargs)(
            torch.zeros(n_queries, 2, 3),
            torch.ones(n_queries, 2, dtype=torch.bool),
            torch.zeros(n_documents, 2, 3),
            torch.ones(n_documents, 2, dtype=torch.bool),
        )
    assert "\n" not in str(error.value)


# --- Two real processes (gloo): the gathered loss equals one process on the whole batch. ---

# (size_average, queries per rank, document length per rank); G = 2 throughout.
SCENARIOS = {"mean": (True, (2, 2), (3, 5)), "sum": (False, (2, 1), (4, 2))}


def _shard(scenario: str, rank: int) -> tuple[torch.Tensor, ...]:
    _, counts, lengths = SCENARIOS[scenario]
    seed = 10 * list(SCENARIOS).index(scenario) + rank
    return _random_batch(counts[rank], 2, lengths[rank], seed)


def _rank_worker(rank: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group(
        "gloo",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=2,
        timeout=timedelta(seconds=60),
    )
    try:
        results = {}
        for scenario, (size_average, _, _) in SCENARIOS.items():
            queries, query_mask, documents, document_mask = _shard(scenario, rank)
            queries.requires_grad_(True)
            documents.requires_grad_(True)
            loss = Contrastive(size_average=size_average)(
                queries, query_mask, documents, document_mask
            )
            loss.backward()
            results |= {
                f"{scenario}/loss": loss.detach().reshape(1),
                f"{scenario}/queries": queries.grad,
                f"{scenario}/documents": documents.grad,
            }
        save_file(results, str(Path(out_dir) / f"rank{rank}.safetensors"))
    finally:
        dist.destroy_process_group()


def _single_process(scenario: str) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """Loss on the concatenated batch (documents padded to one length) and its gradients,
    split back per rank."""
    size_average, _, _ = SCENARIOS[scenario]
    shards = [_shard(scenario, rank) for rank in range(2)]
    longest = max(shard[2].shape[1] for shard in shards)
    queries = torch.cat([shard[0] for shard in shards]).requires_grad_(True)
    query_mask = torch.cat([shard[1] for shard in shards])
    grow = [longest - shard[2].shape[1] for shard in shards]
    documents = torch.cat(
        [torch.nn.functional.pad(s[2], (0, 0, 0, g)) for s, g in zip(shards, grow, strict=True)]
    ).requires_grad_(True)
    document_mask = torch.cat(
        [torch.nn.functional.pad(s[3], (0, g)) for s, g in zip(shards, grow, strict=True)]
    )
    loss = Contrastive(size_average=size_average, gather_across_devices=False)(
        queries, query_mask, documents, document_mask
    )
    loss.backward()
    query_splits = queries.grad.split([len(shard[0]) for shard in shards])
    document_splits = documents.grad.split([len(shard[2]) for shard in shards])
    document_grads = [g[:, : s[2].shape[1]] for g, s in zip(document_splits, shards, strict=True)]
    return loss.detach(), list(query_splits), document_grads


@pytest.mark.slow  # two gloo processes: about 15 s
def test_two_process_gather_matches_one_process_on_the_whole_batch(tmp_path):
    """Ranks hold documents of different lengths ("mean") and different counts ("sum").

    Rank r's backward gives each local input the gradient of sum_r' loss_r' (the all-gather's
    backward sums every rank's contribution); DDP then divides by the world size W. So: with
    size_average the single-process mean loss is the mean of the rank losses and its gradient is
    the rank gradient / W; without, the single-process sum is the sum of rank losses and its
    gradient is the rank gradient itself.
    """
    mp.spawn(_rank_worker, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    ranks = [load_file(str(tmp_path / f"rank{rank}.safetensors")) for rank in range(2)]
    for scenario, (size_average, _, _) in SCENARIOS.items():
        scale = 2.0 if size_average else 1.0
        loss, query_grads, document_grads = _single_process(scenario)
        rank_losses = torch.cat([r[f"{scenario}/loss"] for r in ranks])
        torch.testing.assert_close(rank_losses.sum() / scale, loss)
        for rank, result in enumerate(ranks):
            torch.testing.assert_close(result[f"{scenario}/queries"] / scale, query_grads[rank])
            torch.testing.assert_close(
                result[f"{scenario}/documents"] / scale, document_grads[rank]
            )
