"""The parameters of every network here, declared once and torch-free.

Each dataclass is both what the CLI checks before torch loads and what the network's
constructor takes (`CNN(config)` or `CNN(**fields)`), so a default, range or rule exists in one
place only. `targets` names the classes built from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, fail, spec

NORMS = ("post", "pre")
NORM_TYPES = ("layernorm", "rmsnorm")
ACTIVATIONS = ("relu", "gelu")
POSITIONS = ("none", "sinusoidal", "learned", "rope")
POOLINGS = ("cls", "mean", "last")
INITS = ("gpt2", "xavier")
ROPE_SCALINGS = ("none", "linear", "ntk", "yarn")


@dataclass
class CNNConfig(Schema):
    """Conv blocks (each halves the image) then an MLP head; see research.models.cnn."""

    targets = ("research.models.cnn.CNN",)
    in_channels: int = spec(1, ge=1)
    image_size: int = spec(8, ge=1)
    num_classes: int = spec(10, ge=2)
    channels: list[int] = spec([32, 64])
    kernel_sizes: list[int] = spec([3, 3])
    batch_norm: bool = True
    hidden_sizes: list[int] = spec([128])
    dropout: float = spec(0.0, ge=0.0, lt=1.0)

    def check(self, at: str) -> None:
        if len(self.channels) != len(self.kernel_sizes):
            fail(
                at,
                "kernel_sizes",
                f"has {len(self.kernel_sizes)} entries but channels has "
                f"{len(self.channels)}; give one kernel size per conv block",
            )
        if any(c < 1 for c in self.channels + self.hidden_sizes):
            fail(at, "channels", "and hidden_sizes must be positive integers")
        if any(k < 1 or k % 2 == 0 for k in self.kernel_sizes):
            fail(
                at,
                "kernel_sizes",
                f"={self.kernel_sizes} must be odd positive integers "
                "(padding k // 2 keeps the image size only for odd k)",
            )
        if self.image_size >> len(self.channels) < 1:
            fail(
                at,
                "channels",
                f"has {len(self.channels)} pooling blocks, too many for "
                f"image_size={self.image_size} (each block halves it)",
            )


@dataclass
class EncoderConfig(Schema):
    """The transformer encoder (research.models.transformer); its heads extend this."""

    targets = ("research.models.transformer.TransformerEncoder",)
    vocab_size: int = spec(2, ge=2)
    d_model: int = spec(128, ge=1)
    n_layers: int = spec(4, ge=1)
    n_heads: int = spec(4, ge=1)
    d_ff: int | None = spec(None, ge=1)
    dropout: float = spec(0.1, ge=0.0, lt=1.0)
    bias: bool = True
    n_kv_heads: int | None = spec(None, ge=1)
    qk_norm: bool = False
    norm: str = spec("pre", choices=NORMS)
    norm_type: str = spec("layernorm", choices=NORM_TYPES)
    activation: str = spec("gelu", choices=ACTIVATIONS)
    position: str = spec("rope", choices=POSITIONS)
    max_len: int = spec(512, ge=1)
    rope_base: float = spec(10000.0, gt=1.0)
    rope_scaling: dict | None = None
    pad_token_id: int = spec(0, ge=0)
    embedding_std: float = spec(0.02, gt=0.0)
    # gpt2: N(0, 0.02), residual-writing projections / sqrt(2 n_layers); xavier: Glorot normal,
    # no depth scaling (Xiong et al. 2020's setting).
    init: str = spec("gpt2", choices=INITS)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def check(self, at: str) -> None:
        if self.d_model % self.n_heads:
            fail(at, "d_model", f"={self.d_model} must be divisible by n_heads={self.n_heads}")
        if self.n_kv_heads and self.n_heads % self.n_kv_heads:
            fail(at, "n_kv_heads", f"={self.n_kv_heads} must divide n_heads={self.n_heads}")
        if self.position == "rope" and self.head_dim % 2:
            fail(
                at, "d_model", f"/ n_heads gives head dimension {self.head_dim}; RoPE needs it even"
            )
        scaling = dict(self.rope_scaling or {})
        kind = scaling.get("type", "none") or "none"
        if kind not in ROPE_SCALINGS:
            fail(
                at,
                "rope_scaling.type",
                f"={kind!r} is not valid; choose one of: " + ", ".join(ROPE_SCALINGS),
            )
        factor = scaling.get("factor", 1.0)
        if kind != "none" and (not isinstance(factor, (int, float)) or factor < 1.0):
            fail(at, "rope_scaling.factor", f"={factor!r} must be a number >= 1")


@dataclass
class SequenceClassifierConfig(EncoderConfig):
    targets = ("research.models.transformer.SequenceClassifier",)
    num_classes: int = spec(2, ge=2)
    pooling: str = spec("mean", choices=POOLINGS)


@dataclass
class MaskedLanguageModelConfig(EncoderConfig):
    targets = ("research.models.transformer.MaskedLanguageModel",)
    tie_weights: bool = True


@dataclass
class ColBERTConfig(Schema):
    """ColBERT on an HF backbone (research.models.colbert); null backbone = packaged MiniLM."""

    targets = ("research.models.colbert.ColBERT",)
    backbone: str | None = None
    embedding_size: int = spec(128, ge=1)
    # Room for [CLS], the marker and at least one token besides [SEP].
    max_length_query: int = spec(32, ge=4)
    max_length_document: int = spec(350, ge=4)
    attend_to_expansion_tokens: bool = False
    skiplist_punctuation: bool = True
    # The tokens skipped (with skiplist_punctuation); null: string.punctuation, one per symbol.
    skiplist_words: list[str] | None = None
    query_marker: str = "[Q]"
    document_marker: str = "[D]"

    def check(self, at: str) -> None:
        if self.query_marker == self.document_marker:
            fail(at, "document_marker", f"={self.document_marker!r} must differ from query_marker")
