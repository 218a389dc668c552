"""Typed schemas of every `_target_` the shipped configs name; importing registers them."""

from research.config.schemas import data, lightning, losses, models, optim, run  # noqa: F401
