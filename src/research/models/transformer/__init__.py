"""The transformer encoder family: variants are config fields (`norm`, `position`, ...)."""

from research.models.transformer.encoder import (
    CausalLanguageModel,
    MaskedLanguageModel,
    SequenceClassifier,
    TransformerEncoder,
)

__all__ = ["CausalLanguageModel", "MaskedLanguageModel", "SequenceClassifier", "TransformerEncoder"]
