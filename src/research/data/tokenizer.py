"""A WordPiece tokenizer trained locally with the `tokenizers` library, cached as JSON."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # ids 0..4, in this order


def wordpiece(path: Path, texts: Iterable[str], vocab_size: int) -> Any:
    """The tokenizer at `path`, trained on `texts` first if it is not there yet."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    if path.is_file():
        return Tokenizer.from_file(str(path))
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL)
    tokenizer.train_from_iterator(texts, trainer=trainer)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return tokenizer
