"""research: Hydra + Lightning + W&B experiments."""
