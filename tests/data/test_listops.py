"""ListOps: every label is the value of its expression, and lengths are where they were asked."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import torch

from research.config.errors import ConfigError
from research.config.schema import check_node
from research.data.configs import LISTOPS_VOCAB_SIZE, ListOpsConfig
from research.data.listops import TOKENS, ListOpsDataModule, ListOpsGenerator


def _value(tokens: list[str], at: int, max_args: int) -> tuple[int, int, int]:
    """(value, depth, index after the expression) of the expression starting at `at`."""
    if tokens[at] != "[":
        return int(tokens[at]), 0, at + 1
    operator, at, args, depth = tokens[at + 1], at + 2, [], 0
    while tokens[at] != "]":
        value, inner, at = _value(tokens, at, max_args)
        args.append(value)
        depth = max(depth, inner)
    assert 2 <= len(args) <= max_args
    ordered = sorted(args)
    results = {
        "MAX": ordered[-1],
        "MIN": ordered[0],
        "MED": ordered[(len(ordered) - 1) // 2],
        "SM": sum(args) % 10,
    }
    return results[operator], depth + 1, at + 1


def _examples(module: ListOpsDataModule, split: str) -> list:
    sets = module.splits[split]
    return sets if isinstance(sets, list) else [sets]


@pytest.fixture(scope="module")
def module() -> ListOpsDataModule:
    built = ListOpsDataModule(
        max_depth=3, max_args=4, min_len=10, max_len=40, eval_max_lens=[80, 120], train_size=600
    )
    built.setup()
    return built


def test_every_label_is_the_value_of_its_expression(module: ListOpsDataModule):
    checked = 0
    for split in ("train", "val", "test"):
        for data in _examples(module, split):
            for ids, label in zip(data.sequences, data.labels, strict=True):
                tokens = [TOKENS[i] for i in ids.tolist()]
                value, depth, end = _value(tokens, 0, max_args=4)
                assert (value, end) == (int(label), len(tokens)) and depth <= 3
                checked += 1
    assert checked == 600 + 2 * 3 * 500


def test_lengths_fill_the_configured_bands(module: ListOpsDataModule):
    bands = {"": (10, 40), "@80": (41, 80), "@120": (81, 120)}
    assert module.eval_suffixes == list(bands)
    for split in ("val", "test"):
        for suffix, data in zip(module.eval_suffixes, module.splits[split], strict=True):
            low, high = bands[suffix]
            lengths = [len(ids) for ids in data.sequences]
            assert low <= min(lengths) and max(lengths) <= high
            # Spread over the band, not bunched at one end.
            assert min(lengths) < low + (high - low) / 4 and max(lengths) > high - (high - low) / 4
    train = [len(ids) for ids in module.splits["train"].sequences]
    assert min(train) >= 10 and max(train) <= 40


def test_feasible_lengths_match_a_brute_force_enumeration():
    def sizes(height: int, max_args: int, limit: int) -> set[int]:
        if height == 0:
            return {1}
        below = sizes(height - 1, max_args, limit)
        grown = {
            3 + sum(parts)
            for k in range(2, max_args + 1)
            for parts in itertools.product(sorted(below), repeat=k)
        }
        return {1} | {n for n in grown if n <= limit}

    for max_depth, max_args in [(1, 2), (1, 4), (2, 2), (2, 3), (3, 2)]:
        generator = ListOpsGenerator(max_depth, max_args, 60)
        assert generator.lengths(1, 60) == sorted(sizes(max_depth, max_args, 60))


def test_data_is_a_function_of_the_seed_and_splits_differ():
    a, b, c = (ListOpsDataModule(seed=s, train_size=200, val_size=200) for s in (0, 0, 1))
    for built in (a, b, c):
        built.setup()
    first = a.splits["train"].sequences
    assert all(torch.equal(x, y) for x, y in zip(first, b.splits["train"].sequences, strict=True))
    assert torch.equal(a.splits["val"].labels, b.splits["val"].labels)
    assert not all(
        torch.equal(x, y) for x, y in zip(first, c.splits["train"].sequences, strict=True)
    )
    val, test = a.splits["val"].sequences, a.splits["test"].sequences
    seen = {tuple(ids.tolist()) for ids in first}
    assert sum(tuple(ids.tolist()) in seen for ids in val + test) < 5


def test_labels_are_not_degenerate():
    built = ListOpsDataModule(train_size=2000, eval_max_lens=None)
    built.setup()
    counts = Counter(built.splits["train"].labels.tolist())
    assert set(counts) == set(range(10))
    assert max(counts.values()) / 2000 < 0.25


def test_batches_are_padded_to_their_longest(module: ListOpsDataModule):
    loaders = module.val_dataloader()
    assert len(loaders) == 3
    batch = next(iter(loaders[2]))
    lengths = batch["attention_mask"].sum(1)
    assert batch["input_ids"].shape[1] == int(lengths.max()) and int(lengths.min()) > 80
    assert (batch["input_ids"][~batch["attention_mask"]] == 0).all()
    assert (batch["input_ids"][batch["attention_mask"]] != 0).all()
    assert batch["labels"].shape == (64,)


def test_the_declared_vocabulary_is_the_generators():
    assert len(TOKENS) == LISTOPS_VOCAB_SIZE == ListOpsDataModule().config.vocab_size


def test_impossible_settings_fail_in_one_line():
    with pytest.raises(ConfigError, match="no ListOps expression has 16..64 tokens"):
        ListOpsDataModule(max_depth=1)
    with pytest.raises(ConfigError, match=r"ListOps.eval_max_lens=\[32\] must increase"):
        ListOpsDataModule(eval_max_lens=[32])
    with pytest.raises(ConfigError, match="ListOps.vocab_size=18 is not valid; choose one of: 17"):
        ListOpsDataModule(vocab_size=18)
    with pytest.raises(ConfigError, match="eval_max_lens=\\[128, 100\\] must increase"):
        check_node("data", {"eval_max_lens": [128, 100]}, ListOpsConfig)
