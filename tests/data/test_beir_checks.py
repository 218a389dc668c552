"""Retrieval data that would silently give wrong scores, or could not be trained on, is caught."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from research.data.beir import BEIRDataModule, load_beir_folder
from tests.helpers.beir_files import write_beir
from tests.helpers.read_only import read_only


def test_a_read_only_dataset_trains_with_negatives_cached_under_data_dir(tmp_path: Path):
    dataset = write_beir(tmp_path / "beir")
    with read_only(dataset):
        module = BEIRDataModule(path=str(dataset), data_dir=str(tmp_path / "data"), n_negatives=2)
        module.setup("fit")
        assert len(next(iter(module.train_dataloader()))["documents"]) > 0
    assert not (dataset / "negatives").exists()
    (cached,) = (tmp_path / "data" / "cache" / "bm25_negatives").glob("bm25-*.jsonl")
    again = BEIRDataModule(path=str(dataset), data_dir=str(tmp_path / "data"), n_negatives=2)
    again.setup("fit")  # reads the cache: same file, nothing new
    assert list(cached.parent.iterdir()) == [cached]


def _append_qrels(dataset: Path, split: str, rows: list[str]) -> None:
    with (dataset / "qrels" / f"{split}.tsv").open("a") as out:
        out.write("".join(f"{row}\n" for row in rows))


def test_qrels_naming_unknown_ids_warn_with_counts_and_drop_them(tmp_path: Path):
    dataset = write_beir(tmp_path / "beir")
    _append_qrels(dataset, "test", ["q14\tnot_a_doc\t1", "ghost\td1\t1", "ghost2\td2\t1"])
    with pytest.warns(UserWarning) as caught:
        split = load_beir_folder(dataset, "test")
    (message,) = [str(w.message) for w in caught]
    assert "2 judged query ids are not in the queries file" in message
    assert "1 judged document ids are not in the corpus" in message
    assert "4 of 6 queries remain" in message
    assert split.qrels["q14"] == {"d14": 1}  # the unknown relevant document no longer counts


def test_a_split_left_empty_is_refused(tmp_path: Path):
    dataset = write_beir(tmp_path / "beir")
    (dataset / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nx\ty\t1\n")
    with warnings.catch_warnings(), pytest.raises(ValueError) as err:
        warnings.simplefilter("ignore")
        load_beir_folder(dataset, "test")
    assert "qrels 'test': no judged query is left" in str(err.value)


def test_an_empty_queries_file_is_the_queries_files_problem(tmp_path: Path):
    dataset = write_beir(tmp_path / "beir")
    (dataset / "queries.jsonl").write_text("")
    with pytest.raises(ValueError) as err:
        load_beir_folder(dataset, "test")
    assert str(err.value) == f"{dataset / 'queries.jsonl'} holds no queries"


def _append_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("a") as out:
        out.write("".join(json.dumps(row) + "\n" for row in rows))


def test_duplicate_ids_warn_once_per_file_with_the_count_and_keep_the_last_copy(tmp_path: Path):
    dataset = write_beir(tmp_path / "beir")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_beir_folder(dataset, "test")  # without duplicates: no warning
    _append_jsonl(
        dataset / "corpus.jsonl",
        [
            {"_id": "d14", "title": "", "text": "second d14"},
            {"_id": "d15", "title": "", "text": "second d15"},
            {"_id": "d14", "title": "", "text": "third d14"},
        ],
    )
    _append_jsonl(dataset / "queries.jsonl", [{"_id": "q15", "text": "second q15"}])
    _append_qrels(dataset, "test", ["q14\td14\t2", "q16\td16\t1"])
    with pytest.warns(UserWarning) as caught:
        split = load_beir_folder(dataset, "test")
    messages = sorted(str(w.message) for w in caught)
    assert messages == [
        f"{dataset / 'corpus.jsonl'}: _ids given more than once: 2 (e.g. d14); the last copy "
        "of each is kept",
        f"{dataset / 'qrels' / 'test.tsv'}: (query-id, corpus-id) pairs given more than once: "
        "2 (e.g. q14 d14); the last score of each is kept",
        f"{dataset / 'queries.jsonl'}: _ids given more than once: 1 (e.g. q15); the last copy "
        "of each is kept",
    ]
    assert (split.corpus["d14"], split.corpus["d15"]) == ("third d14", "second d15")
    assert split.queries["q15"] == "second q15" and split.qrels["q14"] == {"d14": 2}
    assert len(split.corpus) == 18
