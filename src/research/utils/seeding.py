"""Derived seeds: one well-mixed 32-bit seed per (run seed, epoch, ...) tuple."""

from __future__ import annotations

import numpy as np


def derive_seed(seed: int, *keys: int) -> int:
    """A seed for `keys` (epoch, rank...) under the run's `seed`.

    Plain `seed + epoch` would give seed 1 / epoch 3 the same stream as seed 0 / epoch 4, so
    neighbouring seeds would share shuffles; NumPy's SeedSequence hashes the tuple instead.
    """
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1)[0])
