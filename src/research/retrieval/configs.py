"""Placeholder until the retrieval declarations land (replaced by the data/retrieval refactor)."""

from __future__ import annotations

from research.config.schema import fail

SEARCH_PARAMS = {
    "exact": ("chunk_size",),
    "voyager": ("M", "ef_construction", "ef_search", "candidates_per_token", "chunk_size"),
}


def check_search(at: str, search: dict) -> None:
    kind = search.get("kind", "exact")
    if kind not in SEARCH_PARAMS:
        fail(at, "kind", f"={kind!r} is not valid; choose one of: exact, voyager")
    unknown = sorted(set(search) - {"kind", "k", *SEARCH_PARAMS[kind]})
    if unknown:
        valid = ", ".join(["kind", "k", *SEARCH_PARAMS[kind]])
        fail(at, unknown[0], f"is not a parameter of {kind}; valid: {valid}")
    for key, value in search.items():
        if key != "kind" and (not isinstance(value, int) or value < 1):
            fail(at, key, f"={value!r} must be a positive integer")
