"""What the retrievers on a Hugging Face encoder share (ColBERT, the dense retriever).

A retriever embeds a text as rows of one width: ColBERT one row per token, the dense retriever
one row per text. `forward` returns (embeddings [B, L, D], bool mask of the rows scored), and
every scorer, loss and searcher here compares two texts by MaxSim over those rows, which for one
row each is their dot product. So training (research.tasks.retrieval), the contrastive and
distillation losses and the indexes serve both without a branch.

This base holds the encoder and tokenizer, texts embedded in length-sorted batches (`encode`,
`scores`: PyLate's API) and the folder that rebuilds a model offline (`save_pretrained`,
`from_pretrained`: safetensors weights, the model's declaration as JSON, the backbone's config
and tokenizer). A subclass names its `config_class` (a Schema with `backbone`,
`max_length_query`, `max_length_document` and `dropout`) and `config_file`, and writes `_setup`,
`tokenize` and `forward`, and an `__init__(config: <its Schema> | None = None, **params)` that
passes both on (the signature the declaration checks read).
"""

from __future__ import annotations

import json
import os
import warnings
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from research.config.schema import Schema
from research.retrieval.maxsim import maxsim_pairs, pad_embeddings
from research.utils.backbones import default_backbone

WEIGHTS_FILE = "model.safetensors"
BACKBONE_CONFIG_FILE = "config.json"
# encode() shows a progress bar by default above this many texts.
PROGRESS_BAR_ABOVE = 1000
# The backbone's attention kernels on a GPU (names of torch's SDPBackend; None: torch's choice):
# all but cuDNN's. Texts pad to the longest of their batch, so most training batches bring new
# shapes, and cuDNN attention plans each new shape anew. On an H100 (torch 2.11, bf16 autocast,
# MiniLM, 30 batches of new shapes, one run of each setting in turn) a ColBERT step took 217 ms
# with it and 49 ms without; once the shapes had been seen, 49 and 47 ms
# (benchmarks/colbert_attention_kernels.py).
ATTENTION_KERNELS: tuple[str, ...] | None = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")


class HFRetriever(nn.Module):
    """An HF encoder whose texts are embedded as rows and compared with MaxSim over them."""

    config_class: ClassVar[type[Schema]]
    config_file: ClassVar[str]
    # Arguments that the saved weights (their shapes, their vocabulary) fix once and for all.
    fixed_by_weights: ClassVar[tuple[str, ...]] = ("backbone",)

    def __init__(self, config: Schema | None = None, **params: Any) -> None:
        super().__init__()
        config = self.config_class.build(config, params)
        if config.backbone is None:
            config = replace(config, backbone=default_backbone())
        transformers = import_transformers(config.backbone)
        self._setup(
            config,
            transformers.AutoModel.from_pretrained(config.backbone),
            transformers.AutoTokenizer.from_pretrained(config.backbone),
        )

    def _setup(self, config: Any, encoder: nn.Module, tokenizer: Any) -> None:
        """Attach backbone, tokenizer and the subclass's own layers; shared by both loaders."""
        raise NotImplementedError

    def tokenize(self, texts: list[str], is_query: bool) -> dict[str, Tensor]:
        """input_ids and attention_mask on CPU, ready for `forward`."""
        raise NotImplementedError

    def _attach_backbone(self, config: Any, encoder: nn.Module, tokenizer: Any) -> None:
        """Keep the config, lengths, tokenizer and encoder: lengths checked against the encoder's
        positions, its unused pooler dropped, float32, the configured dropout, training mode."""
        self.config = config
        self.max_length_query = config.max_length_query
        self.max_length_document = config.max_length_document
        positions = getattr(encoder.config, "max_position_embeddings", None)
        longest = max(self.max_length_query, self.max_length_document)
        if positions is not None and longest > positions:
            raise ValueError(
                f"{type(self).__name__} max lengths must be <= the backbone's "
                f"max_position_embeddings={positions}, got max_length_query="
                f"{self.max_length_query}, max_length_document={self.max_length_document}"
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

    def hidden_states(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """The backbone's last hidden states [B, L, hidden], on a GPU with `ATTENTION_KERNELS`."""
        with attention_kernels(input_ids.device):
            output = self.backbone(input_ids=input_ids, attention_mask=attention_mask)
        return output.last_hidden_state

    def embed(self, texts: list[str], is_query: bool) -> tuple[Tensor, Tensor]:
        """Tokenize and run forward on the module's device, keeping autograd (for training)."""
        device = self.backbone.get_input_embeddings().weight.device
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
        """One float32 CPU tensor [scored rows, D] per text, in input order.

        Texts are batched longest first by token count, so each batch pads little. `is_query`
        is PyLate's name for the flag; `query_mode`, the name it had here before, still works
        and warns.
        """
        from rich.progress import track

        name = type(self).__name__
        if query_mode is not None:
            warnings.warn(
                f"{name}.encode(query_mode=...) is deprecated; use is_query=... (PyLate's name)",
                DeprecationWarning,
                stacklevel=2,
            )
            is_query = query_mode

        if isinstance(texts, str) or batch_size < 1:
            raise ValueError(
                f"{name}.encode needs a list of texts and batch_size >= 1, got "
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
        """The score of queries[i] with documents[i] (MaxSim over their rows), [N] float32."""
        if len(queries) != len(documents):
            raise ValueError(
                f"{type(self).__name__}.scores pairs queries with documents one to one, got "
                f"{len(queries)} queries and {len(documents)} documents"
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
        """Weights as safetensors (no pickle), the model's config as JSON, backbone config
        and tokenizer: the folder alone rebuilds the model, offline."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(folder / WEIGHTS_FILE), metadata={"format": "pt"})
        (folder / self.config_file).write_text(json.dumps(self.config.as_dict(), indent=2) + "\n")
        self.backbone.config.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    @classmethod
    def from_pretrained(cls, path: str | Path, **overrides: Any) -> HFRetriever:
        """Rebuild a model saved with `save_pretrained`. Overrides replace saved arguments
        (lengths, flags), except those the weights fix (`fixed_by_weights`)."""
        folder = Path(path)
        needed = (cls.config_file, WEIGHTS_FILE, BACKBONE_CONFIG_FILE)
        missing = [name for name in needed if not (folder / name).is_file()]
        if missing:
            raise FileNotFoundError(
                f"{folder} is not a saved {cls.__name__} folder: missing {', '.join(missing)} "
                f"({cls.__name__}.save_pretrained writes {', '.join(needed)})"
            )
        saved = json.loads((folder / cls.config_file).read_text())
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
    ) -> HFRetriever:
        """A model with the saved settings and overrides on the encoder in `encoder`: its
        weights loaded (`pretrained`) or only its architecture (weights loaded after)."""
        for name in cls.fixed_by_weights:
            if name in overrides and overrides[name] != saved[name]:
                raise ValueError(
                    f"{name}={overrides[name]!r} contradicts the saved weights, which have "
                    f"{name}={saved[name]!r} ({folder}); drop the {name} override"
                )
        config = cls.config_class.build(params={**saved, **overrides})
        transformers = import_transformers(encoder)
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


def attention_kernels(device: torch.device) -> AbstractContextManager[object]:
    """Limits scaled-dot-product attention to `ATTENTION_KERNELS` on a CUDA device; elsewhere
    changes nothing."""
    if device.type != "cuda" or ATTENTION_KERNELS is None:
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([getattr(SDPBackend, name) for name in ATTENTION_KERNELS])


def import_transformers(source: str | Path) -> ModuleType:
    """transformers, imported after switching the hub offline when `source` is a local folder
    (huggingface_hub reads HF_HUB_OFFLINE once, when it is first imported)."""
    if Path(source).is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    return transformers
