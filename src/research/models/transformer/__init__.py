"""The transformer encoder family: variants are config fields (`norm`, `position`, ...)."""

from research.models.transformer.encoder import SequenceClassifier, TransformerEncoder

__all__ = ["SequenceClassifier", "TransformerEncoder"]
