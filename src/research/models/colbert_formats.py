"""Reading the ColBERT checkpoints users already have: PyLate and Stanford colbert-ai folders.

Each reader turns a folder into what `ColBERT.from_pretrained` needs: the settings (markers,
lengths, skiplist, whether the encoder attends to [MASK] padding), the folder of the HF encoder
and the projection's weight. What each format holds (read from the libraries' repositories):

- PyLate (lightonai/pylate, a sentence-transformers layout): `modules.json` lists a Transformer
  module (its folder, usually the root: config.json, weights, tokenizer with the prefix tokens
  PyLate added) and one bias-free `Dense` module (`<path>/config.json` with in/out_features,
  `<path>/model.safetensors` holding `linear.weight`); `config_sentence_transformers.json` holds
  query_prefix / document_prefix (the marker tokens, "[Q] " and "[D] " by default),
  query_length, document_length, attend_to_expansion_tokens, do_query_expansion and
  skiplist_words.
- Stanford colbert-ai (stanford-futuredata/ColBERT, e.g. colbert-ir/colbertv2.0): an HF folder
  whose config names the `HF_ColBERT` architecture and whose weights hold the BERT encoder under
  `bert.` and the projection as `linear.weight`, beside `artifact.metadata` (JSON) with
  query_token_id / doc_token_id (markers, "[unused0]" / "[unused1]"), query_maxlen, doc_maxlen,
  dim, mask_punctuation and attend_to_mask_tokens.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import Tensor

OURS = "colbert_config.json"
PYLATE_MODULES = "modules.json"
PYLATE_SETTINGS = "config_sentence_transformers.json"
STANFORD_METADATA = "artifact.metadata"
EXPECTED = (
    f"expected {OURS} (ColBERT.save_pretrained), {PYLATE_MODULES} with a Dense module + "
    f"{PYLATE_SETTINGS} (PyLate) or {STANFORD_METADATA} + config.json (Stanford colbert-ai)"
)


@dataclass
class ForeignCheckpoint:
    """A PyLate or Stanford folder read into ColBERT's terms."""

    settings: dict[str, Any]  # ColBERTConfig fields
    encoder: Path  # the HF encoder's folder
    projection: Tensor  # [embedding_size, hidden]


def checkpoint_format(folder: Path) -> str:
    """ "ours", "pylate" or "stanford"; a one-line FileNotFoundError naming what was expected."""
    if (folder / OURS).is_file():
        return "ours"
    if (folder / PYLATE_MODULES).is_file() and _pylate_dense(folder) is not None:
        return "pylate"
    if (folder / STANFORD_METADATA).is_file():
        return "stanford"
    raise FileNotFoundError(f"{folder} is not a ColBERT checkpoint folder: {EXPECTED}")


def read_pylate(folder: Path) -> ForeignCheckpoint:
    """A PyLate model folder: the Transformer module, the Dense projection and the settings."""
    modules = json.loads((folder / PYLATE_MODULES).read_text())
    transformer = next(
        (m for m in modules if m.get("type", "").endswith("Transformer")), {"path": ""}
    )
    dense = folder / _pylate_dense(folder)
    dense_config = json.loads(_required(dense, "config.json").read_text())
    if dense_config.get("bias", False) or len([m for m in modules if _is_dense(m)]) != 1:
        raise ValueError(
            f"{folder}: ColBERT loads PyLate models with one bias-free Dense projection, got "
            f"{len([m for m in modules if _is_dense(m)])} Dense modules, bias="
            f"{dense_config.get('bias', False)}"
        )
    saved = json.loads(_required(folder, PYLATE_SETTINGS).read_text())
    if saved.get("do_query_expansion", True) is False:
        raise ValueError(
            f"{folder}: do_query_expansion=false in {PYLATE_SETTINGS} is not supported; ColBERT "
            "always pads queries with [MASK] to the query length"
        )
    weight = _weights(dense, "model.safetensors", "pytorch_model.bin")["linear.weight"]
    words = saved.get("skiplist_words", list(string.punctuation))
    settings = {
        "embedding_size": int(dense_config["out_features"]),
        "max_length_query": int(saved.get("query_length", 32)),
        "max_length_document": int(saved.get("document_length", 180)),
        "attend_to_expansion_tokens": bool(saved.get("attend_to_expansion_tokens", False)),
        "skiplist_punctuation": bool(words),
        "skiplist_words": list(words) or None,
        "query_marker": saved.get("query_prefix", "[Q] "),
        "document_marker": saved.get("document_prefix", "[D] "),
    }
    return ForeignCheckpoint(settings, folder / transformer.get("path", ""), weight)


def read_stanford(folder: Path) -> ForeignCheckpoint:
    """A colbert-ai checkpoint: artifact.metadata, the HF_ColBERT encoder and `linear.weight`."""
    metadata = json.loads((folder / STANFORD_METADATA).read_text())
    _required(folder, "config.json")
    weights = _weights(folder, "model.safetensors", "pytorch_model.bin")
    if "linear.weight" not in weights:
        raise ValueError(
            f"{folder}: a colbert-ai checkpoint holds its projection as linear.weight; the "
            "weights have none"
        )
    projection = weights["linear.weight"]
    settings = {
        "embedding_size": int(metadata.get("dim", projection.shape[0])),
        "max_length_query": int(metadata.get("query_maxlen", 32)),
        "max_length_document": int(metadata.get("doc_maxlen", 180)),
        "attend_to_expansion_tokens": bool(metadata.get("attend_to_mask_tokens", False)),
        "skiplist_punctuation": bool(metadata.get("mask_punctuation", True)),
        "query_marker": metadata.get("query_token_id", "[unused0]"),
        "document_marker": metadata.get("doc_token_id", "[unused1]"),
    }
    return ForeignCheckpoint(settings, folder, projection)


def _is_dense(module: dict[str, Any]) -> bool:
    return module.get("type", "").split(".")[-1] == "Dense"


def _pylate_dense(folder: Path) -> str | None:
    """The path of the Dense module listed in modules.json, if there is one."""
    try:
        modules = json.loads((folder / PYLATE_MODULES).read_text())
    except ValueError:
        return None
    return next((m.get("path", "") for m in modules if _is_dense(m)), None)


def _required(folder: Path, name: str) -> Path:
    file = folder / name
    if not file.is_file():
        raise FileNotFoundError(f"{folder} lacks {name}; {EXPECTED}")
    return file


def _weights(folder: Path, safetensors: str, pickled: str) -> dict[str, Tensor]:
    """Tensors from safetensors, else from a torch pickle read with weights_only=True (no code
    runs; older colbert-ai checkpoints ship only pytorch_model.bin)."""
    if (folder / safetensors).is_file():
        return load_file(str(folder / safetensors))
    if (folder / pickled).is_file():
        return torch.load(folder / pickled, map_location="cpu", weights_only=True)
    raise FileNotFoundError(f"{folder} has neither {safetensors} nor {pickled}")
