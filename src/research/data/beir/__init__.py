"""Retrieval data in BEIR's format, from a local folder or the HF hub, as a LightningDataModule.

A BEIR dataset (Thakur et al. 2021, https://github.com/beir-cellar/beir) is `corpus.jsonl`
({"_id", "title", "text"}), `queries.jsonl` ({"_id", "text"}) and `qrels/<split>.tsv`
("query-id", "corpus-id", "score" under a header line). On the hub, `BeIR/<name>` holds the
configs "corpus" and "queries" (one split each, named like the config) and `BeIR/<name>-qrels`
one TSV per split. Training pairs every query with each positive (score > 0) and its BM25 hard
negatives, or reads teacher scores for distillation; evaluation hands out queries only, and the
retrieval module searches `retrieval_split(...)` itself.

One job per module: `sources` reads a folder or the hub, `distillation` parses teacher scores,
`sampling` draws seeded subsets, `datasets` holds the torch datasets and their collate, and
`datamodule` puts them together.
"""

from research.data.beir.datamodule import BEIRDataModule, RetrievalDataModule
from research.data.beir.sources import RetrievalSplit, load_beir_folder, load_beir_hub

__all__ = [
    "BEIRDataModule",
    "RetrievalDataModule",
    "RetrievalSplit",
    "load_beir_folder",
    "load_beir_hub",
]
