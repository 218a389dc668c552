"""The kinds of batch a datamodule's loaders yield, named once: a data declaration says which
one it gives (`Schema.gives`), a task, network or loss declaration which ones it can take
(`Schema.takes`), and `research.config.pairing` refuses a model or loss paired with data it
cannot use.
Each name is what the error message says."""

from __future__ import annotations

LABELLED_IMAGES = "labelled images"
LABELLED_SEQUENCES = "labelled token sequences"
TOKEN_BLOCKS = "unlabelled token blocks"
TOKEN_WINDOWS = "windows of a token stream"
QUERIES_AND_DOCUMENTS = "queries with their documents"
