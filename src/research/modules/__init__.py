"""LightningModules: training logic around a network, a loss and an optimizer from config."""
