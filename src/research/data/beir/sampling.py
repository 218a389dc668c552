"""Which queries and documents a run uses: seeded query subsets and a split's judged corpus."""

from __future__ import annotations

import random
import zlib

from research.data.beir.sources import RetrievalSplit
from research.utils.seeding import derive_seed


def subset(ids: list[str], limit: int | None, seed: int, salt: str) -> list[str]:
    """At most `limit` of `ids`, drawn from (seed, salt) alone, kept in sorted order."""
    ids = sorted(ids)
    if limit is None or limit >= len(ids):
        return ids
    picker = random.Random(derive_seed(seed, zlib.crc32(salt.encode())))
    return sorted(picker.sample(ids, limit))


def judged(split: RetrievalSplit) -> dict[str, str]:
    """The documents judged in a split's qrels: its own corpus, as CodeSearchNet's splits have."""
    kept = {doc for docs in split.qrels.values() for doc in docs}
    return {doc: text for doc, text in split.corpus.items() if doc in kept}
