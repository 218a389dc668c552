"""Associative recall: the answer is determined by the sequence, and the data by the seed."""

from __future__ import annotations

import torch

from research.data.recall import AssociativeRecallDataModule


def test_answer_is_the_value_stored_under_the_query_key():
    module = AssociativeRecallDataModule(num_pairs=5, num_keys=10, num_values=7, train_size=50)
    module.setup()
    for item in (module.splits["train"][i] for i in range(50)):
        ids, label = item["input_ids"], int(item["labels"])
        keys, values, query = ids[0:10:2], ids[1:10:2], ids[-1]
        assert len(set(keys.tolist())) == 5 and query in keys
        assert int(values[keys.tolist().index(int(query))]) - 11 == label
        assert 0 <= label < 7 and bool(item["attention_mask"].all())


def test_splits_are_seeded_and_distinct():
    a, b, c = (AssociativeRecallDataModule(seed=s, train_size=100) for s in (0, 0, 1))
    for module in (a, b, c):
        module.setup()
    assert torch.equal(a.splits["train"].input_ids, b.splits["train"].input_ids)
    assert not torch.equal(a.splits["train"].input_ids, c.splits["train"].input_ids)
    assert not torch.equal(a.splits["train"].input_ids[:100], a.splits["val"].input_ids[:100])
    assert (a.vocab_size, a.num_classes) == (1 + 32 + 16, 16)
