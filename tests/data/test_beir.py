"""BEIR data: folder and hub-layout loading, errors, train tuples, distillation, eval splits."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch

from research.config.errors import ConfigError
from research.data.beir import BEIRDataModule, load_beir_folder, load_beir_hub

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "rho"]


def _topic(i: int) -> str:
    return f"{WORDS[i % len(WORDS)]} {WORDS[(3 * i + 1) % len(WORDS)]} topic{i}"


def _write_beir(root: Path, n_docs: int = 40) -> Path:
    """Document i is about topic i; query i asks for it. Train: queries 0-19 (query 0 has two
    positives, query 19 only a score-0 judgement); dev: 20-29; test: 30-39."""
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w") as out:
        for i in range(n_docs):
            title = f"Title {i}" if i % 2 == 0 else ""
            out.write(json.dumps({"_id": f"d{i}", "title": title, "text": f" {_topic(i)} body "}))
            out.write("\n")
    with (root / "queries.jsonl").open("w") as out:
        for i in range(n_docs):
            out.write(json.dumps({"_id": f"q{i}", "text": f"find {_topic(i)}"}) + "\n")
    qrels = {
        "train": [(f"q{i}", f"d{i}", 1) for i in range(19)] + [("q0", "d5", 2), ("q19", "d19", 0)],
        "dev": [(f"q{i}", f"d{i}", 1) for i in range(20, 30)],
        "test": [(f"q{i}", f"d{i}", 1) for i in range(30, 40)],
    }
    for split, rows in qrels.items():
        lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, d, s in rows]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return _write_beir(tmp_path / "tiny")


def _module(folder: Path, **kwargs) -> BEIRDataModule:
    module = BEIRDataModule(path=str(folder), data_dir=str(folder.parent / "d"), **kwargs)
    module.setup()
    return module


def test_folder_loading_joins_title_and_text_and_keeps_judged_queries(folder: Path):
    train = load_beir_folder(folder, "train")
    assert train.corpus["d0"] == "Title 0 " + _topic(0) + " body"
    assert train.corpus["d1"] == _topic(1) + " body"  # no title: the text alone, stripped
    assert len(train.corpus) == 40 and sorted(train.queries) == sorted(f"q{i}" for i in range(20))
    assert train.qrels["q0"] == {"d0": 1, "d5": 2} and train.qrels["q19"] == {"d19": 0}
    assert train.queries["q3"] == "find " + _topic(3)


def test_the_module_is_light_until_setup_and_pickles_after(folder: Path):
    module = BEIRDataModule(path=str(folder), data_dir=str(folder.parent / "d"))
    assert len(pickle.dumps(module)) < 5_000
    module.setup()
    copy = pickle.loads(pickle.dumps(module))
    assert copy.retrieval_split("val") == module.retrieval_split("val")
    assert len(copy.splits["train"]) == len(module.splits["train"]) == 20


def test_score_zero_judgements_are_no_training_positives(folder: Path):
    module = _module(folder, n_negatives=1, batch_size=64)
    examples = module.splits["train"].examples
    assert "q19" not in {query for query, _, _ in examples}
    assert sorted(docs[0] for query, docs, _ in examples if query == "q0") == ["d0", "d5"]
    assert len(examples) == 20  # 19 queries with one positive, query 0 with a second


def test_missing_folder_file_or_split_fail_in_one_line_naming_what_exists(folder: Path, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist") as err:
        load_beir_folder(tmp_path / "nope", "test")
    assert str(tmp_path / "nope") in str(err.value)
    with pytest.raises(FileNotFoundError) as err:
        load_beir_folder(folder, "validation")
    assert ("the splits in " + str(folder) + " are: dev, test, train (") in str(err.value)
    (folder / "queries.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="queries.jsonl not found"):
        load_beir_folder(folder, "test")
    with pytest.raises(FileNotFoundError, match="splits .* are: dev, test, train"):
        BEIRDataModule(path=str(folder), val_split="val").setup("validate")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"path": "a", "name": "b"}, "give exactly one, a local BEIR folder"),
        ({}, "neither is set"),
        ({"path": "a", "eval_corpus": "all"}, "choose one of: full, split"),
        ({"path": "a", "n_negatives": -1}, "BEIRData.n_negatives=-1 is out of range"),
        ({"path": "a", "max_train_queries": 0}, "BEIRData.max_train_queries=0 is out of range"),
    ],
)
def test_bad_arguments_fail_in_one_line(kwargs, words):
    with pytest.raises(ConfigError) as err:
        BEIRDataModule(**kwargs)
    assert words in str(err.value) and "\n" not in str(err.value)


def _hub_copy(root: Path, folder: Path) -> Path:
    """The hub's layout: configs "corpus" and "queries" in one repo, qrels in `<repo>-qrels`."""
    repo, qrels = root / "tiny", root / "tiny-qrels"
    repo.mkdir(parents=True)
    (repo / "README.md").write_text(
        "---\nconfigs:\n"
        "- config_name: corpus\n  data_files:\n  - split: corpus\n    path: corpus.jsonl\n"
        "- config_name: queries\n  data_files:\n  - split: queries\n    path: queries.jsonl\n"
        "---\n"
    )
    for name in ("corpus.jsonl", "queries.jsonl"):
        (repo / name).write_text((folder / name).read_text())
    (folder / "qrels").rename(qrels)
    return repo


def test_hub_loader_reads_the_hub_layout_through_datasets(folder: Path, tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf"))
    expected = load_beir_folder(folder, "train")
    repo = _hub_copy(tmp_path / "hub", folder)
    loaded = load_beir_hub(str(repo), "train")
    assert loaded == expected
    # datasets calls the split of dev.tsv "validation"; BEIR's name for it still works
    assert load_beir_hub(str(repo), "dev").qrels == {f"q{i}": {f"d{i}": 1} for i in range(20, 30)}
    with pytest.raises(FileNotFoundError) as err:
        load_beir_hub(str(repo), "training_extra")
    assert "its splits are: test, train, validation" in str(err.value)
    assert "\n" not in str(err.value)
    module = BEIRDataModule(name=str(repo), data_dir=str(tmp_path / "d"))
    module.setup()
    assert len(module.retrieval_split("test").queries) == 10
    assert list((tmp_path / "d" / "cache" / "bm25_negatives").glob("bm25-*.jsonl"))


def test_hub_errors_are_one_line(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf"))
    with pytest.raises(FileNotFoundError) as err:
        load_beir_hub(str(tmp_path / "no_such_dataset"), "test")
    assert "\n" not in str(err.value) and "no_such_dataset" in str(err.value)


def test_train_batches_group_the_positive_first_then_bm25_negatives(folder: Path):
    module = _module(folder, n_negatives=2, batch_size=4)
    train = load_beir_folder(folder, "train")
    text_to_query = {text: query for query, text in train.queries.items()}
    for batch in module.train_dataloader():
        b = len(batch["queries"])
        assert len(batch["documents"]) == 3 * b and "teacher_scores" not in batch
        for i, query_text in enumerate(batch["queries"]):
            query = text_to_query[query_text]
            positive, *negatives = batch["documents"][3 * i : 3 * i + 3]
            owned = {train.corpus[d] for d, s in train.qrels[query].items() if s > 0}
            assert positive in owned and not owned & set(negatives)
            assert len(set(negatives)) == 2


def test_distillation_file_gives_teacher_scores_in_listed_order(folder: Path, tmp_path):
    path = tmp_path / "teacher.jsonl"
    rows = [
        {"query_id": f"q{i}", "document_ids": [f"d{i + 1}", f"d{i}", "d7"], "scores": [i, 2, 0.5]}
        for i in range(6)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    module = _module(folder, distillation_file=str(path), batch_size=4)
    corpus = load_beir_folder(folder, "train").corpus
    batch = next(iter(module.train_dataloader()))
    teacher = batch["teacher_scores"]
    assert teacher.shape == (4, 3) and teacher.dtype == torch.float32
    for i, query_text in enumerate(batch["queries"]):
        row = rows[int(query_text.split("topic")[1])]
        assert batch["documents"][3 * i : 3 * i + 3] == [corpus[d] for d in row["document_ids"]]
        assert teacher[i].tolist() == row["scores"]
    path.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[1], "scores": [1, 2]}) + "\n")
    with pytest.raises(ValueError, match=r"teacher.jsonl:2 has 3 document_ids but 2 scores$"):
        _module(folder, distillation_file=str(path))


def test_train_shuffle_differs_between_epochs_and_repeats_per_seed_and_epoch(folder: Path):
    def order(seed: int, epoch: int) -> list[str]:
        loader = _module(folder, seed=seed, n_negatives=0, batch_size=64).train_dataloader()
        loader.sampler.set_epoch(epoch)
        return next(iter(loader))["queries"]

    assert order(0, 0) != order(0, 1)
    assert order(0, 1) == order(0, 1) and sorted(order(0, 0)) == sorted(order(0, 1))
    assert order(0, 1) != order(1, 1)


def test_eval_corpus_full_searches_everything_and_split_only_the_judged(folder: Path):
    full = _module(folder, eval_corpus="full")
    split = _module(folder, eval_corpus="split")
    assert len(full.retrieval_split("test").corpus) == 40
    assert sorted(split.retrieval_split("test").corpus) == sorted(f"d{i}" for i in range(30, 40))
    assert sorted(split.retrieval_split("val").corpus) == sorted(f"d{i}" for i in range(20, 30))
    train_docs = {f"d{i}" for i in range(20)}
    for _, docs, _ in split.splits["train"].examples:
        assert set(docs) <= train_docs  # negatives mined from the train split's documents only
    batch = next(iter(split.test_dataloader()))
    assert batch["query_ids"] == [f"q{i}" for i in range(30, 40)]
    queries = split.retrieval_split("test").queries
    assert batch["queries"] == [queries[q] for q in batch["query_ids"]]
    with pytest.raises(ValueError, match="choose one of: val, test"):
        split.retrieval_split("train")


def test_max_eval_queries_is_a_seeded_deterministic_subset(folder: Path):
    def kept(seed: int) -> list[str]:
        return list(_module(folder, seed=seed, max_eval_queries=4).retrieval_split("test").qrels)

    assert len(kept(0)) == 4 and kept(0) == kept(0) and kept(0) != kept(1)
    assert set(kept(0)) <= {f"q{i}" for i in range(30, 40)}
    module = _module(folder, max_eval_queries=4)
    assert [q for b in module.test_dataloader() for q in b["query_ids"]] == kept(0)
    assert len(module.retrieval_split("test").corpus) == 40  # the corpus is not subset


def test_a_malformed_json_line_is_a_one_line_error_naming_file_and_line(folder: Path, tmp_path):
    teacher = tmp_path / "teacher.jsonl"
    teacher.write_text('{"query_id": "q0", "document_ids": ["d0"], "scores": ["high"]}\n')
    with pytest.raises(ValueError, match=r"teacher.jsonl:1 must be a JSON object with query_id"):
        _module(folder, distillation_file=str(teacher))
    corpus = folder / "corpus.jsonl"
    corpus.write_text(corpus.read_text() + '{"title": "no id"}\n')
    with pytest.raises(ValueError, match=r"corpus.jsonl:41 must be a JSON object with an _id"):
        load_beir_folder(folder, "train")


def test_eval_corpus_full_is_said_loudly_with_what_it_searches(folder: Path, caplog):
    with caplog.at_level("WARNING", logger="research.data.beir.datamodule"):
        full = _module(folder, eval_corpus="full")
    described = full.retrieval_split("test").described
    assert "10 test queries search the FULL corpus, 40 documents" in described
    assert "of which 10 are judged by them" in described and "eval_corpus=split" in described
    assert described in caplog.text  # a corpus mixing splits warns
    split = _module(folder, eval_corpus="split").retrieval_split("test").described
    assert split.endswith("test: 10 test queries search the 10 documents they judge")


def test_val_fraction_validates_on_held_out_train_queries_without_a_dev_split(folder: Path):
    (folder / "qrels" / "dev.tsv").unlink()
    with pytest.raises(FileNotFoundError, match=r"data\.val_fraction=0\.1 validates on a tenth"):
        _module(folder)
    module = _module(folder, val_fraction=0.25, eval_corpus="split")
    val = module.retrieval_split("val")
    train_queries = {f"q{i}" for i in range(20)}
    assert len(val.queries) == 5 and set(val.queries) <= train_queries
    assert set(val.corpus) == {doc for docs in val.qrels.values() for doc in docs}
    trained = {query for query, _, _ in module.splits["train"].examples}
    assert trained and not trained & set(val.queries)  # held out of training
    assert "5 queries held out of train (val_fraction=0.25)" in val.described
    again = _module(folder, val_fraction=0.25, eval_corpus="split").retrieval_split("val")
    assert again.queries == val.queries  # seeded
