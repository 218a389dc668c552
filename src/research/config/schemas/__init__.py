"""Declarations of what we configure but do not own: Lightning's Trainer, callbacks and loggers,
torch's optimizers, and the entry configs' top-level keys. Our own components declare their
parameters in the `configs.py` of their package (research.config.registry finds them)."""
