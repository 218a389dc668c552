"""Tokenizers trained locally with the `tokenizers` library (WordPiece for prose, byte-level BPE
for code), cached as JSON."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from research.utils.atomic import replacing

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
    with replacing(path, durable=False) as partial:
        tokenizer.save(str(partial))
    return tokenizer


BYTE_LEVEL_SPECIAL = ["<pad>", "<|endoftext|>"]  # ids 0 and 1: padding, end of a document


def byte_level_bpe(path: Path, texts: Iterable[str], vocab_size: int) -> Any:
    """GPT-2's kind of tokenizer (byte-level BPE), the usual choice for code: every byte
    sequence is encodable, whitespace and case are kept, decoding gives back the exact text.
    The tokenizer at `path`, trained on `texts` first if it is not there yet."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if path.is_file():
        return Tokenizer.from_file(str(path))
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=BYTE_LEVEL_SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    with replacing(path, durable=False) as partial:
        tokenizer.save(str(partial))
    return tokenizer
