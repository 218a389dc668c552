"""The dense retriever on the real MiniLM weights: its scores are the cosines (or dot products) of
mean-pooled real-token embeddings computed by hand; encode, save/load and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModel, AutoTokenizer

from research.models.dense import DenseRetriever
from research.utils.backbones import default_backbone

QUERY_LENGTH, DOCUMENT_LENGTH = 12, 20
QUERIES = ["how do I sort a list in python", "open a socket"]
# The first document is cut at DOCUMENT_LENGTH, the second is much shorter (padding in a batch).
DOCUMENTS = [
    "sorted() returns a new sorted list from the items of an iterable, in ascending order, "
    "unless reverse is true, and key names a function of one argument",
    "socket.create_connection((host, port))",
]


@pytest.fixture(scope="module")
def model() -> DenseRetriever:
    return DenseRetriever(max_length_query=QUERY_LENGTH, max_length_document=DOCUMENT_LENGTH)


@pytest.fixture(scope="module")
def by_hand() -> tuple[torch.Tensor, torch.Tensor]:
    """(queries, documents): each text alone through the plain HF encoder, the mean of its
    last hidden states, no padding anywhere."""
    tokenizer = AutoTokenizer.from_pretrained(default_backbone())
    encoder = AutoModel.from_pretrained(default_backbone()).eval()

    def pooled(texts: list[str], length: int) -> torch.Tensor:
        rows = []
        for text in texts:
            ids = tokenizer(text, truncation=True, max_length=length, return_tensors="pt")
            with torch.no_grad():
                rows.append(encoder(**ids).last_hidden_state[0].mean(0))
        return torch.stack(rows)

    return pooled(QUERIES, QUERY_LENGTH), pooled(DOCUMENTS, DOCUMENT_LENGTH)


def test_encode_gives_one_vector_per_text_the_normalised_mean_of_its_tokens(model, by_hand):
    queries, documents = by_hand
    encoded = model.encode(DOCUMENTS, is_query=False)
    assert [tuple(e.shape) for e in encoded] == [(1, 384), (1, 384)]
    # Batched with a longer text, the short one's padding must not enter its mean.
    expected = torch.nn.functional.normalize(documents, dim=-1)
    assert torch.allclose(torch.cat(encoded), expected, atol=1e-5)
    assert torch.allclose(torch.cat(model.encode(QUERIES)).norm(dim=-1), torch.ones(2))


def test_scores_are_the_cosines_of_the_pooled_vectors(model, by_hand):
    queries, documents = by_hand
    cosines = torch.nn.functional.cosine_similarity(queries, documents, dim=-1)
    assert torch.allclose(model.scores(QUERIES, DOCUMENTS), cosines, atol=1e-5)
    # The relevant pairs score above the crossed ones.
    crossed = model.scores(QUERIES, DOCUMENTS[::-1])
    assert (model.scores(QUERIES, DOCUMENTS) > crossed).all()


def test_without_normalize_scores_are_dot_products(by_hand):
    queries, documents = by_hand
    raw = DenseRetriever(
        max_length_query=QUERY_LENGTH, max_length_document=DOCUMENT_LENGTH, normalize=False
    )
    dots = (queries * documents).sum(-1)
    assert torch.allclose(raw.scores(QUERIES, DOCUMENTS), dots, rtol=1e-5, atol=1e-4)
    assert not torch.allclose(dots, torch.nn.functional.cosine_similarity(queries, documents))


def test_forward_keeps_autograd_and_every_parameter_gets_a_gradient(model):
    model.train()
    embeddings, mask = model.embed(DOCUMENTS, is_query=False)
    assert embeddings.shape == (2, 1, 384) and mask.shape == (2, 1) and bool(mask.all())
    embeddings.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=True)


@pytest.mark.slow
def test_save_load_round_trip_gives_identical_encodings(model, tmp_path):
    with torch.no_grad():  # a trained model differs from the packaged MiniLM
        model.backbone.encoder.layer[0].output.dense.bias.add_(0.01)
    model.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "dense_config.json").read_text())["max_length_document"] == 20
    assert set(load_file(tmp_path / "model.safetensors")) == set(model.state_dict())
    loaded = DenseRetriever.from_pretrained(tmp_path)
    assert torch.equal(
        torch.cat(loaded.encode(DOCUMENTS, is_query=False)),
        torch.cat(model.encode(DOCUMENTS, is_query=False)),
    )
    shorter = DenseRetriever.from_pretrained(tmp_path, max_length_document=8)
    assert shorter.max_length_document == 8
    with pytest.raises(ValueError, match="backbone='x' contradicts the saved weights"):
        DenseRetriever.from_pretrained(tmp_path, backbone="x")


def test_loading_a_folder_that_is_not_a_saved_dense_retriever_fails(tmp_path: Path):
    with pytest.raises(FileNotFoundError) as error:
        DenseRetriever.from_pretrained(default_backbone())
    assert str(error.value).endswith(
        "is not a saved DenseRetriever folder: missing dense_config.json "
        "(DenseRetriever.save_pretrained writes dense_config.json, model.safetensors, config.json)"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_length_query": 2}, "max_length_query=2 is out of range; it must be >= 3"),
        ({"max_length_document": 1000}, "max_position_embeddings=512"),
        ({"embedding_size": 64}, "embedding_size is not an option of research.models.dense"),
    ],
)
def test_bad_arguments_raise_one_line(arguments, message):
    with pytest.raises(ValueError, match=message) as error:
        DenseRetriever(**arguments)
    assert "\n" not in str(error.value)


def test_extra_repr_names_the_shape_arguments(model):
    assert "max_length_query=12, max_length_document=20, normalize=True" in repr(model)
