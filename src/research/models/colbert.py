"""ColBERT (Khattab & Zaharia 2020): a late-interaction retriever on any Hugging Face encoder.

Encoder -> bias-free linear projection to `embedding_size` -> L2 normalisation per token; texts
are compared token by token with MaxSim. Following the paper (section 3.2) and ColBERTv2's
tokenizers: a marker token goes right after [CLS] ("[Q]" for queries, "[D]" for documents),
queries are padded with [MASK] to `max_length_query` (query augmentation; the [MASK] positions
are always scored, and attended to by the encoder only with `attend_to_expansion_tokens`),
documents are truncated at `max_length_document` and padded to the batch's longest, and
punctuation tokens are dropped from document embeddings (the skiplist). The API is PyLate's
(`encode`, `scores`, `save_pretrained`, `from_pretrained`).

Markers: the marker strings are added to the tokenizer as special tokens and the backbone's
input embeddings grow by one row each (transformers' mean resizing: new rows drawn around the
mean of the existing ones). A marker already in the vocabulary, e.g. "[unused0]" as in the
original ColBERT code, is used as it is. The saved tokenizer and backbone config keep the added
tokens, so `save_pretrained` / `from_pretrained` round-trips them.
"""

from __future__ import annotations

import json
import os
import string
import warnings
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from torch.nn import functional as F

from research.models.configs import ColBERTConfig
from research.retrieval.maxsim import maxsim_pairs, pad_embeddings
from research.utils.backbones import MINILM_HUB_ID, default_backbone

__all__ = ["MINILM_HUB_ID", "ColBERT", "default_backbone"]

CONFIG_FILE = "colbert_config.json"
WEIGHTS_FILE = "model.safetensors"
BACKBONE_CONFIG_FILE = "config.json"
# Arguments that the saved weights (their shapes, their vocabulary) fix once and for all.
FIXED_BY_WEIGHTS = ("backbone", "embedding_size", "query_marker", "document_marker")
# encode() shows a progress bar by default above this many texts.
PROGRESS_BAR_ABOVE = 1000


class ColBERT(nn.Module):
    """Per-token embeddings of queries and documents, scored with MaxSim."""

    def __init__(self, config: ColBERTConfig | None = None, **params: Any) -> None:
        super().__init__()
        config = ColBERTConfig.build(config, params)
        if config.backbone is None:
            config = replace(config, backbone=default_backbone())
        transformers = _import_transformers(config.backbone)
        self._setup(
            config,
            transformers.AutoModel.from_pretrained(config.backbone),
            transformers.AutoTokenizer.from_pretrained(config.backbone),
        )

    def _setup(self, config: ColBERTConfig, encoder: nn.Module, tokenizer: Any) -> None:
        """Attach backbone, tokenizer (with markers) and projection; shared by both loaders."""
        self.config = config
        self.embedding_size = config.embedding_size
        self.max_length_query = config.max_length_query
        self.max_length_document = config.max_length_document
        self.attend_to_expansion_tokens = config.attend_to_expansion_tokens
        self.skiplist_punctuation = config.skiplist_punctuation
        positions = getattr(encoder.config, "max_position_embeddings", None)
        longest = max(self.max_length_query, self.max_length_document)
        if positions is not None and longest > positions:
            raise ValueError(
                f"ColBERT max lengths must be <= the backbone's max_position_embeddings="
                f"{positions}, got max_length_query={self.max_length_query}, "
                f"max_length_document={self.max_length_document}"
            )
        if tokenizer.mask_token_id is None or tokenizer.pad_token_id is None:
            raise ValueError(
                f"ColBERT needs a backbone tokenizer with mask and pad tokens (query "
                f"augmentation pads with [MASK]); {config.backbone} lacks one"
            )
        markers = [config.query_marker, config.document_marker]
        tokenizer.add_tokens(markers, special_tokens=True)
        tokenizer.padding_side = "right"  # the marker goes at a fixed position after [CLS]
        if len(tokenizer) > encoder.get_input_embeddings().num_embeddings:
            encoder.resize_token_embeddings(len(tokenizer))
        self.query_marker_id, self.document_marker_id = tokenizer.convert_tokens_to_ids(markers)
        first = tokenizer("")["input_ids"][:1]
        self.marker_position = 1 if first and first[0] in tokenizer.all_special_ids else 0
        words = config.skiplist_words
        skipped = tokenizer.convert_tokens_to_ids(
            list(string.punctuation if words is None else words)
        )
        skiplist = sorted({i for i in skipped if i not in (None, tokenizer.unk_token_id)})
        self.register_buffer(
            "skiplist_ids", torch.tensor(skiplist, dtype=torch.long), persistent=False
        )
        if isinstance(getattr(encoder, "pooler", None), nn.Module):
            # BERT-like pooled output is never used: dropping it keeps every parameter in the
            # loss, which DDP without find_unused_parameters requires.
            encoder.pooler = None
        self.tokenizer = tokenizer
        self.backbone = encoder.float()  # checkpoints may load in bf16; precision is Lightning's
        if config.dropout is not None:
            for layer in encoder.modules():
                if isinstance(layer, nn.Dropout):
                    layer.p = config.dropout
        # from_pretrained returns the encoder in eval mode; a new nn.Module trains, with dropout.
        self.backbone.train(self.training)
        self.projection = nn.Linear(encoder.config.hidden_size, self.embedding_size, bias=False)

    def tokenize(self, texts: list[str], is_query: bool) -> dict[str, Tensor]:
        """input_ids and attention_mask on CPU, with the marker and (queries) [MASK] padding."""
        length = self.max_length_query if is_query else self.max_length_document
        encoded = self.tokenizer(
            list(texts),
            padding="max_length" if is_query else "longest",
            truncation=True,
            max_length=length - 1,  # one place is kept for the marker
            return_tensors="pt",
        )
        ids, attention = encoded["input_ids"], encoded["attention_mask"]
        marker = self.query_marker_id if is_query else self.document_marker_id
        at = self.marker_position
        ids = torch.cat([ids[:, :at], torch.full_like(ids[:, :1], marker), ids[:, at:]], dim=1)
        attention = torch.cat(
            [attention[:, :at], torch.ones_like(attention[:, :1]), attention[:, at:]], dim=1
        )
        if is_query:
            expansion = attention == 0
            ids = ids.masked_fill(expansion, self.tokenizer.mask_token_id)
            if self.attend_to_expansion_tokens:
                attention = attention.masked_fill(expansion, 1)
        return {"input_ids": ids, "attention_mask": attention}

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, is_query: bool
    ) -> tuple[Tensor, Tensor]:
        """(unit-norm token embeddings [B, L, embedding_size], bool mask of the scored tokens)."""
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask)
        embeddings = F.normalize(self.projection(hidden.last_hidden_state), p=2, dim=-1)
        if is_query:
            return embeddings, torch.ones_like(input_ids, dtype=torch.bool)
        mask = attention_mask.bool()
        if self.skiplist_punctuation:
            mask &= ~torch.isin(input_ids, self.skiplist_ids)
        return embeddings, mask

    def embed(self, texts: list[str], is_query: bool) -> tuple[Tensor, Tensor]:
        """Tokenize and run forward on the module's device, keeping autograd (for training)."""
        device = self.projection.weight.device
        batch = {k: v.to(device) for k, v in self.tokenize(texts, is_query).items()}
        return self(**batch, is_query=is_query)

    def length_order(self, texts: list[str], is_query: bool) -> list[int]:
        """Indices of `texts`, longest first by (truncated) token count: batches cut from this
        order pad little."""
        if not texts:
            return []
        limit = self.max_length_query if is_query else self.max_length_document
        tokens = self.tokenizer(list(texts), truncation=True, max_length=limit)["input_ids"]
        return sorted(range(len(texts)), key=lambda i: len(tokens[i]), reverse=True)

    def encode(
        self,
        texts: list[str],
        is_query: bool = True,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        query_mode: bool | None = None,
    ) -> list[Tensor]:
        """One float32 CPU tensor [counted tokens, embedding_size] per text, in input order.

        Texts are batched longest first by token count, so each batch pads little. `is_query`
        is PyLate's name for the flag; `query_mode`, the name it had here before, still works
        and warns.
        """
        from rich.progress import track

        if query_mode is not None:
            warnings.warn(
                "ColBERT.encode(query_mode=...) is deprecated; use is_query=... (PyLate's name)",
                DeprecationWarning,
                stacklevel=2,
            )
            is_query = query_mode

        if isinstance(texts, str) or batch_size < 1:
            raise ValueError(
                f"ColBERT.encode needs a list of texts and batch_size >= 1, got "
                f"{type(texts).__name__} and batch_size={batch_size}"
            )
        order = self.length_order(texts, is_query)
        show = len(texts) > PROGRESS_BAR_ABOVE if show_progress_bar is None else show_progress_bar
        kind = "queries" if is_query else "documents"
        encoded: list[Tensor] = [torch.empty(0)] * len(texts)
        was_training = self.training
        self.eval()
        try:
            with torch.inference_mode():
                starts = range(0, len(order), batch_size)
                for start in track(starts, description=f"Encoding {kind}", disable=not show):
                    indices = order[start : start + batch_size]
                    embeddings, mask = self.embed([texts[i] for i in indices], is_query)
                    embeddings, mask = embeddings.float().cpu(), mask.cpu()
                    for row, index in enumerate(indices):
                        encoded[index] = embeddings[row][mask[row]]
        finally:
            self.train(was_training)
        return encoded

    def scores(
        self,
        queries: list[str],
        documents: list[str],
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
    ) -> Tensor:
        """MaxSim of queries[i] with documents[i], [N] float32."""
        if len(queries) != len(documents):
            raise ValueError(
                f"ColBERT.scores pairs queries with documents one to one, got {len(queries)} "
                f"queries and {len(documents)} documents"
            )
        query_embeddings = self.encode(queries, True, batch_size, show_progress_bar)
        document_embeddings = self.encode(documents, False, batch_size, show_progress_bar)
        scores = [torch.zeros(0)]
        for start in range(0, len(queries), batch_size):
            stop = start + batch_size
            scores.append(
                maxsim_pairs(
                    *pad_embeddings(query_embeddings[start:stop]),
                    *pad_embeddings(document_embeddings[start:stop]),
                )
            )
        return torch.cat(scores)

    def save_pretrained(self, path: str | Path) -> None:
        """Weights as safetensors (no pickle), the ColBERTConfig as JSON, backbone config
        and tokenizer: the folder alone rebuilds the model, offline."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(folder / WEIGHTS_FILE), metadata={"format": "pt"})
        (folder / CONFIG_FILE).write_text(json.dumps(self.config.as_dict(), indent=2) + "\n")
        self.backbone.config.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    @classmethod
    def from_pretrained(cls, path: str | Path, **overrides: Any) -> ColBERT:
        """Rebuild a model saved with `save_pretrained`, or load a PyLate model folder or a
        Stanford colbert-ai checkpoint folder with its markers, lengths and skiplist
        (research.models.colbert_formats). Overrides replace saved arguments (lengths, flags),
        except those the weights fix (FIXED_BY_WEIGHTS)."""
        from research.models import colbert_formats as formats

        folder = Path(path)
        kind = formats.checkpoint_format(folder)
        if kind != "ours":
            read = formats.read_pylate if kind == "pylate" else formats.read_stanford
            foreign = read(folder)
            saved = {**foreign.settings, "backbone": str(foreign.encoder)}
            model = cls._assemble(folder, saved, overrides, foreign.encoder, pretrained=True)
            with torch.no_grad():
                model.projection.weight.copy_(foreign.projection)
            return model
        needed = (CONFIG_FILE, WEIGHTS_FILE, BACKBONE_CONFIG_FILE)
        missing = [name for name in needed if not (folder / name).is_file()]
        if missing:
            raise FileNotFoundError(
                f"{folder} is not a saved ColBERT folder: missing {', '.join(missing)} "
                f"(ColBERT.save_pretrained writes {', '.join(needed)})"
            )
        saved = json.loads((folder / CONFIG_FILE).read_text())
        model = cls._assemble(folder, saved, overrides, folder, pretrained=False)
        model.load_state_dict(load_file(str(folder / WEIGHTS_FILE)))
        return model

    @classmethod
    def _assemble(
        cls,
        folder: Path,
        saved: dict[str, Any],
        overrides: dict[str, Any],
        encoder: Path,
        pretrained: bool,
    ) -> ColBERT:
        """A model with the saved settings and overrides on the encoder in `encoder`: its
        weights loaded (`pretrained`) or only its architecture (weights loaded after)."""
        for name in FIXED_BY_WEIGHTS:
            if name in overrides and overrides[name] != saved[name]:
                raise ValueError(
                    f"{name}={overrides[name]!r} contradicts the saved weights, which have "
                    f"{name}={saved[name]!r} ({folder}); drop the {name} override"
                )
        config = ColBERTConfig.build(params={**saved, **overrides})
        transformers = _import_transformers(encoder)
        backbone = (
            transformers.AutoModel.from_pretrained(encoder)
            if pretrained
            else transformers.AutoModel.from_config(
                transformers.AutoConfig.from_pretrained(encoder)
            )
        )
        model = cls.__new__(cls)
        nn.Module.__init__(model)
        model._setup(config, backbone, transformers.AutoTokenizer.from_pretrained(encoder))
        return model

    def extra_repr(self) -> str:
        return (
            f"embedding_size={self.embedding_size}, max_length_query={self.max_length_query}, "
            f"max_length_document={self.max_length_document}, "
            f"attend_to_expansion_tokens={self.attend_to_expansion_tokens}, "
            f"skiplist_punctuation={self.skiplist_punctuation}"
        )


def _import_transformers(source: str | Path) -> ModuleType:
    """transformers, imported after switching the hub offline when `source` is a local folder
    (huggingface_hub reads HF_HUB_OFFLINE once, when it is first imported)."""
    if Path(source).is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    return transformers
