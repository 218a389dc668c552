"""LightningDataModules and dataset builders; they know nothing of the models trained on them."""
