"""The parameters of every network here, declared once and torch-free.

Each dataclass is both what the CLI checks before torch loads and what the network's
constructor takes (`CNN(config)` or `CNN(**fields)`), so a default, range or rule exists in one
place only. `targets` names the classes built from it.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

from research.config.batches import LABELLED_IMAGES, LABELLED_SEQUENCES
from research.config.schema import Schema, fail, spec

NORMS = ("post", "pre")
NORM_TYPES = ("layernorm", "rmsnorm")
ACTIVATIONS = ("relu", "gelu")
POSITIONS = ("none", "sinusoidal", "learned", "rope")
POOLINGS = ("cls", "mean", "last")
INITS = ("gpt2", "xavier")
MEMORY_FORMATS = ("channels_last", "contiguous")
# RoPE scaling: the keys and names of HF transformers' `rope_scaling` / `rope_parameters` block,
# so a hub model's block can be pasted ("default" is HF's name for none).
ROPE_SCALINGS = ("none", "default", "linear", "ntk", "dynamic", "yarn")
ROPE_KEYS = (
    "rope_type",
    "factor",
    "original_max_position_embeddings",
    "beta_fast",
    "beta_slow",
    "attention_factor",
    "mscale",
    "mscale_all_dim",
    "truncate",
)
# Older names accepted for the same keys: HF's legacy "type", and this project's earlier
# original_max_len / alpha / beta (YaRN's alpha = beta_slow, beta = beta_fast, in rotations).
ROPE_ALIASES = {
    "type": "rope_type",
    "original_max_len": "original_max_position_embeddings",
    "alpha": "beta_slow",
    "beta": "beta_fast",
}
# The schemes that need the context length the model was trained at.
_NEEDS_ORIGINAL = ("dynamic", "yarn")


def rope_parameters(scaling: dict | None, at: str = "rope_scaling") -> dict:
    """A `rope_scaling` block in canonical form (HF's key names, rope_type "none" when off),
    checked: one-line errors name the key and what is valid. Torch-free, so the CLI checks it
    before torch loads and the network builds from the same result."""
    params: dict = {}
    written: dict = {}  # canonical name -> the key the user wrote, for the error message
    for key, value in dict(scaling or {}).items():
        name = ROPE_ALIASES.get(key, key)
        if name not in ROPE_KEYS:
            valid = ", ".join(ROPE_KEYS + tuple(ROPE_ALIASES))
            fail(at, str(key), f"is not a rope_scaling key; valid keys: {valid}")
        if name in params and params[name] != value:
            fail(at, str(key), f"={value!r} contradicts {name}={params[name]!r}; give one")
        params[name], written[name] = value, str(key)

    def bad(name: str, message: str) -> typing.NoReturn:
        fail(at, written.get(name, name), message)

    kind = params.get("rope_type") or "none"
    if kind not in ROPE_SCALINGS:
        valid = ", ".join(ROPE_SCALINGS)
        bad("rope_type", f"={kind!r} is not valid; choose one of: {valid}")
    params["rope_type"] = kind = "none" if kind == "default" else kind
    if kind == "none":
        return params
    factor = params.get("factor", 1.0)
    if not _number(factor) or factor < 1.0:
        bad("factor", f"={factor!r} must be a number >= 1")
    params["factor"] = float(factor)
    original = params.get("original_max_position_embeddings")
    if kind in _NEEDS_ORIGINAL and original is None:
        bad(
            "original_max_position_embeddings",
            f"is required for rope_type={kind}: the context length the model was trained at",
        )
    if original is not None and (not isinstance(original, int) or original < 1):
        bad("original_max_position_embeddings", f"={original!r} must be an integer >= 1")
    for key in ("beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim"):
        if params.get(key) is not None and (not _number(params[key]) or params[key] <= 0):
            bad(key, f"={params[key]!r} must be a number > 0")
    if not isinstance(params.get("truncate", True), bool):
        bad("truncate", f"={params['truncate']!r} must be true or false")
    if params.get("beta_fast", 32) <= params.get("beta_slow", 1):
        bad("beta_fast", "must be > beta_slow (rotations: fast 32, slow 1 by default)")
    return params


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class CNNConfig(Schema):
    """Conv blocks (each halves the image) then an MLP head; see research.models.cnn."""

    targets = ("research.models.cnn.CNN",)
    takes = (LABELLED_IMAGES,)
    in_channels: int = spec(1, ge=1)
    """Channels of the input images (1 for greyscale, 3 for RGB)."""
    image_size: int = spec(8, ge=1)
    """Side of the square input images in pixels; with the block count it fixes the head's input."""
    num_classes: int = spec(10, ge=2)
    """Outputs of the last linear layer: one logit per class."""
    channels: list[int] = spec([32, 64])
    """Output channels of each conv block; one entry per block, and each block halves the image."""
    kernel_sizes: list[int] = spec([3, 3])
    """Kernel size of each conv block, odd (padding k // 2 keeps the size); one per block."""
    batch_norm: bool = True
    """BatchNorm after each convolution (which then has no bias of its own)."""
    hidden_sizes: list[int] = spec([128])
    """Widths of the MLP head's hidden layers (ReLU, dropout); []: features straight to logits."""
    dropout: float = spec(0.0, ge=0.0, lt=1.0)
    """Dropout probability after each hidden layer of the head; 0 turns it off."""
    memory_format: str = spec("channels_last", choices=MEMORY_FORMATS, id_if_changed=True)
    """Layout of the conv weights and activations: channels_last (NHWC) takes oneDNN's faster
    CPU kernels (docs: benchmarks), contiguous is torch's NCHW. Both compute the same function
    to rounding, so runs from before this field keep their ids under the default."""

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
    """Rows of the token embedding: the tokenizer's vocabulary size (the configs use the data's)."""
    d_model: int = spec(128, ge=1)
    """Width of the residual stream; must be divisible by n_heads."""
    n_layers: int = spec(4, ge=1)
    """Number of encoder blocks (attention + feed-forward)."""
    n_heads: int = spec(4, ge=1)
    """Attention (query) heads per block; each head is d_model / n_heads wide."""
    d_ff: int | None = spec(None, ge=1)
    """Hidden width of each block's feed-forward layer; null: 4 x d_model."""
    dropout: float = spec(0.1, ge=0.0, lt=1.0)
    """Dropout on the embeddings, the attention weights and each sub-layer's output; 0 for none."""
    bias: bool = True
    """Biases in the attention and feed-forward linear layers; false drops them all."""
    n_kv_heads: int | None = spec(None, ge=1)
    """Key/value heads, shared by groups of query heads (GQA; 1 = multi-query); null: n_heads."""
    qk_norm: bool = False
    """RMS-normalise queries and keys per head before attention (QK-norm)."""
    norm: str = spec("pre", choices=NORMS)
    """Where each block normalises: pre (before each sub-layer, plus a final norm) or post."""
    norm_type: str = spec("layernorm", choices=NORM_TYPES)
    """The normalisation layer: LayerNorm or RMSNorm."""
    activation: str = spec("gelu", choices=ACTIVATIONS)
    """Activation of the feed-forward layer."""
    position: str = spec("rope", choices=POSITIONS)
    """How positions enter: rotary (rope), added sinusoidal or learned tables, or none."""
    max_len: int = spec(512, ge=1)
    """Positions of the learned table (the longest input it allows) and of the initial sinusoidal
    table (grown on demand); unused by rope and none."""
    rope_base: float = spec(10000.0, gt=1.0)
    """Base of RoPE's frequencies (theta): a larger base gives longer wavelengths."""
    rope_scaling: dict | None = None
    """RoPE scaling for longer contexts, as HF's rope_scaling block (rope_type linear, ntk, dynamic
    or yarn, factor, ...); null: none."""
    pad_token_id: int = spec(0, ge=0)
    """Token id of padding: its embedding row starts at zero and gets no gradient."""
    embedding_std: float = spec(0.02, gt=0.0, id_if_changed=True)
    """Std of the token and learned-position embeddings at init (GPT-2's 0.02; torch's
    nn.Embedding default 1.0 keeps a token's identity dominant in the residual stream)."""
    init: str = spec("gpt2", choices=INITS, id_if_changed=True)
    """gpt2: N(0, 0.02), residual-writing projections / sqrt(2 n_layers); xavier: Glorot normal,
    no depth scaling (Xiong et al. 2020's setting)."""
    causal: bool = spec(False, id_if_changed=True)
    """Causal attention: position t attends to positions <= t only (a left-to-right LM)."""

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
        rope_parameters(self.rope_scaling, f"{at}.rope_scaling" if at else "rope_scaling")


@dataclass
class SequenceClassifierConfig(EncoderConfig):
    """The encoder plus a linear head on one pooled vector per sequence."""

    targets = ("research.models.transformer.SequenceClassifier",)
    takes = (LABELLED_SEQUENCES,)
    num_classes: int = spec(2, ge=2)
    """Outputs of the head: one logit per class."""
    pooling: str = spec("mean", choices=POOLINGS)
    """What the head reads: the first token (cls), the mean of the real tokens, or the last real
    token (where a task puts its query, e.g. associative recall)."""


@dataclass
class MaskedLanguageModelConfig(EncoderConfig):
    """The encoder plus a vocabulary head (dense, GELU, LayerNorm, then logits per token)."""

    targets = ("research.models.transformer.MaskedLanguageModel",)
    tie_weights: bool = True
    """The vocabulary head's weight is the token embedding itself (Press & Wolf 2017)."""


@dataclass
class CausalLanguageModelConfig(EncoderConfig):
    """The encoder with causal attention and a next-token head (weight-tied with `tie_weights`)."""

    targets = ("research.models.transformer.CausalLanguageModel",)
    causal: bool = True
    """Must stay true: without the causal mask each position would see the token it predicts."""
    tie_weights: bool = True
    """The next-token head's weight is the token embedding itself: the head adds no parameters."""

    def check(self, at: str) -> None:
        super().check(at)
        if not self.causal:
            fail(at, "causal", "=False would let each position see the token it must predict")


@dataclass
class ColBERTConfig(Schema):
    """ColBERT on an HF backbone (research.models.colbert); null backbone = packaged MiniLM."""

    targets = ("research.models.colbert.ColBERT",)
    backbone: str | None = None
    """Hugging Face encoder, a hub id or a local folder; null: the packaged all-MiniLM-L6-v2 when
    installed, else its hub id."""
    embedding_size: int = spec(128, ge=1)
    """Width of each token's embedding after the bias-free projection (what the index stores)."""
    max_length_query: int = spec(32, ge=4)
    """Tokens per query, marker included: queries are padded to it with [MASK] (query augmentation).
    At least 4: room for [CLS], the marker and at least one token besides [SEP]."""
    max_length_document: int = spec(350, ge=4)
    """Tokens per document, marker included; longer documents are truncated."""
    attend_to_expansion_tokens: bool = False
    """Let the encoder attend to a query's [MASK] padding (those positions are always scored)."""
    skiplist_punctuation: bool = True
    """Drop the skiplist's tokens (punctuation) from document embeddings before scoring."""
    skiplist_words: list[str] | None = None
    """The tokens skipped (with skiplist_punctuation); null: string.punctuation, one per symbol."""
    query_marker: str = "[Q]"
    """Token put right after [CLS] in queries; added as a special token unless in the vocabulary."""
    document_marker: str = "[D]"
    """Token put right after [CLS] in documents; must differ from query_marker."""
    dropout: float | None = spec(None, ge=0.0, lt=1.0, id_if_changed=True)
    """Dropout probability of every backbone dropout layer while training (null: the backbone's
    own, 0.1 for MiniLM)."""

    def check(self, at: str) -> None:
        if self.query_marker == self.document_marker:
            fail(at, "document_marker", f"={self.document_marker!r} must differ from query_marker")


@dataclass
class DenseRetrieverConfig(Schema):
    """A single-vector retriever on an HF backbone (research.models.dense): mean-pooled, as
    sentence-transformers uses all-MiniLM-L6-v2; null backbone = packaged MiniLM."""

    targets = ("research.models.dense.DenseRetriever",)
    backbone: str | None = None
    """Hugging Face encoder, a hub id or a local folder; null: the packaged all-MiniLM-L6-v2 when
    installed, else its hub id."""
    max_length_query: int = spec(32, ge=3)
    """Tokens per query, [CLS] and [SEP] included; longer queries are truncated (no padding is
    pooled). At least 3: room for one token between [CLS] and [SEP]."""
    max_length_document: int = spec(350, ge=3)
    """Tokens per document, [CLS] and [SEP] included; longer documents are truncated."""
    normalize: bool = True
    """L2-normalise the pooled vector, so scores are cosines (false: dot products)."""
    dropout: float | None = spec(None, ge=0.0, lt=1.0, id_if_changed=True)
    """Dropout probability of every backbone dropout layer while training (null: the backbone's
    own, 0.1 for MiniLM)."""
