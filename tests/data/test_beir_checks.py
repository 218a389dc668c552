"""Retrieval data that would silently give wrong scores, or could not be trained on, is caught."""

from __future__ import annotations

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
