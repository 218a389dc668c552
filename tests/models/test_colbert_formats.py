"""ColBERT.from_pretrained on the folders users already have: PyLate's and Stanford colbert-ai's.

Both folders are written here in the libraries' on-disk formats from the packaged MiniLM (no
download), with a random projection; the scores are checked against a reference written from
those libraries' documented pipeline: tokenize to length - 1, insert the marker after [CLS],
pad queries with [MASK] (not attended), project, L2-normalise, drop skiplist tokens from
documents, MaxSim.
"""

from __future__ import annotations

import json
import shutil
import string
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from torch.nn import functional as F

from research.models.colbert import ColBERT, default_backbone

transformers = pytest.importorskip("transformers")
QUERY = "sort a list of numbers"
DOCUMENTS = ["def sort_numbers(values): return sorted(values)", "open a socket, then close it."]


def _encoder(folder: Path, markers: list[str]) -> int:
    """The MiniLM encoder and tokenizer saved in `folder`, `markers` added as PyLate does
    (plain added tokens, embeddings resized); returns the hidden size."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(default_backbone())
    encoder = transformers.AutoModel.from_pretrained(default_backbone())
    if markers:
        tokenizer.add_tokens(markers)
        encoder.resize_token_embeddings(len(tokenizer))
    encoder.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return encoder.config.hidden_size


def _reference(folder, projection, markers, lengths, skipped, attend, query, document) -> float:
    """MaxSim of `query` and `document` by the libraries' documented pipeline."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    encoder = transformers.AutoModel.from_pretrained(folder).eval()

    def embed(text: str, marker: str, length: int, is_query: bool) -> torch.Tensor:
        ids = tokenizer(text, truncation=True, max_length=length - 1)["input_ids"]
        ids = ids[:1] + [tokenizer.convert_tokens_to_ids(marker)] + ids[1:]
        attention = [1] * len(ids)
        if is_query:
            padding = length - len(ids)
            ids += [tokenizer.mask_token_id] * padding
            attention += [int(attend)] * padding
        with torch.no_grad():
            hidden = encoder(
                input_ids=torch.tensor([ids]), attention_mask=torch.tensor([attention])
            ).last_hidden_state[0]
        vectors = F.normalize(hidden @ projection.T, dim=-1)
        if is_query:
            return vectors
        skip = set(tokenizer.convert_tokens_to_ids(skipped))
        return vectors[torch.tensor([i not in skip for i in ids])]

    q = embed(query, markers[0], lengths[0], True)
    d = embed(document, markers[1], lengths[1], False)
    return float((q @ d.T).max(dim=1).values.sum())


def _assert_reference_scores(model, folder, projection, markers, lengths, skipped) -> None:
    """The model's scores of QUERY against DOCUMENTS equal the reference pipeline's."""
    scores = model.scores([QUERY] * len(DOCUMENTS), DOCUMENTS)
    expected = [
        _reference(folder, projection, markers, lengths, skipped, False, QUERY, document)
        for document in DOCUMENTS
    ]
    assert scores.tolist() == pytest.approx(expected, abs=1e-4)


@pytest.fixture(scope="module")
def pylate_folder(tmp_path_factory) -> tuple[Path, torch.Tensor]:
    folder = tmp_path_factory.mktemp("pylate")
    hidden = _encoder(folder, ["[Q] ", "[D] "])
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    settings = {
        "model_type": "ColBERT",
        "query_prefix": "[Q] ",
        "document_prefix": "[D] ",
        "query_length": 24,
        "document_length": 40,
        "do_query_expansion": True,
        "attend_to_expansion_tokens": False,
        "skiplist_words": [",", ".", "(", ")"],
        "similarity_fn_name": "MaxSim",
    }
    (folder / "config_sentence_transformers.json").write_text(json.dumps(settings))
    (folder / "1_Dense").mkdir()
    dense = {
        "in_features": hidden,
        "out_features": 96,
        "bias": False,
        "activation_function": "torch.nn.modules.linear.Identity",
    }
    (folder / "1_Dense" / "config.json").write_text(json.dumps(dense))
    projection = torch.randn(96, hidden, generator=torch.Generator().manual_seed(0))
    save_file({"linear.weight": projection}, folder / "1_Dense" / "model.safetensors")
    return folder, projection


@pytest.fixture(scope="module")
def stanford_folder(tmp_path_factory) -> tuple[Path, torch.Tensor]:
    folder = tmp_path_factory.mktemp("stanford")
    hidden = _encoder(folder, [])
    weights = transformers.AutoModel.from_pretrained(folder).state_dict()
    projection = torch.randn(64, hidden, generator=torch.Generator().manual_seed(1))
    state = {f"bert.{name}": tensor.contiguous() for name, tensor in weights.items()}
    (folder / "model.safetensors").unlink()
    save_file({**state, "linear.weight": projection}, folder / "model.safetensors")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["HF_ColBERT"]}))
    metadata = {
        "query_token_id": "[unused0]",
        "doc_token_id": "[unused1]",
        "query_maxlen": 20,
        "doc_maxlen": 48,
        "dim": 64,
        "mask_punctuation": True,
        "attend_to_mask_tokens": False,
        "similarity": "cosine",
    }
    (folder / "artifact.metadata").write_text(json.dumps(metadata))
    return folder, projection


def test_a_pylate_folder_loads_with_its_markers_lengths_and_skiplist(pylate_folder):
    folder, projection = pylate_folder
    model = ColBERT.from_pretrained(folder)
    config = model.config
    assert (config.query_marker, config.document_marker) == ("[Q] ", "[D] ")
    assert (config.max_length_query, config.max_length_document) == (24, 40)
    assert config.embedding_size == 96 and config.skiplist_words == [",", ".", "(", ")"]
    saved_tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    assert len(model.tokenizer) == len(saved_tokenizer)  # PyLate's marker tokens, none added
    assert model.query_marker_id == saved_tokenizer.convert_tokens_to_ids("[Q] ")
    assert sorted(model.skiplist_ids.tolist()) == sorted(
        saved_tokenizer.convert_tokens_to_ids([",", ".", "(", ")"])
    )
    _assert_reference_scores(
        model, folder, projection, ["[Q] ", "[D] "], (24, 40), [",", ".", "(", ")"]
    )


def test_a_stanford_colbert_folder_loads_with_its_metadata_and_linear_layer(stanford_folder):
    folder, projection = stanford_folder
    model = ColBERT.from_pretrained(folder)
    config = model.config
    assert (config.query_marker, config.document_marker) == ("[unused0]", "[unused1]")
    assert (config.max_length_query, config.max_length_document) == (20, 48)
    assert config.embedding_size == 64 and config.skiplist_punctuation
    assert torch.equal(model.projection.weight, projection)
    vocabulary = transformers.AutoTokenizer.from_pretrained(folder).convert_tokens_to_ids
    assert model.query_marker_id == vocabulary("[unused0]")  # in BERT's vocabulary already
    punctuation = list(string.punctuation)
    _assert_reference_scores(
        model, folder, projection, ["[unused0]", "[unused1]"], (20, 48), punctuation
    )


def test_a_folder_in_no_known_format_fails_in_one_line(tmp_path):
    plain = tmp_path / "minilm"
    shutil.copytree(default_backbone(), plain)  # sentence-transformers, but no Dense module
    with pytest.raises(
        FileNotFoundError, match="is not a ColBERT checkpoint folder: expected"
    ) as err:
        ColBERT.from_pretrained(plain)
    message = str(err.value)
    assert "\n" not in message
    assert all(
        name in message for name in ("colbert_config.json", "modules.json", "artifact.metadata")
    )
