"""The transformer encoder family: variants are config fields (`norm`, `position`, ...)."""

from research.models.transformer.encoder import (
    MaskedLanguageModel,
    SequenceClassifier,
    TransformerEncoder,
)

__all__ = ["MaskedLanguageModel", "SequenceClassifier", "TransformerEncoder"]
