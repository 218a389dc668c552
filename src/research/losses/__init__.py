"""Loss functions built from config."""
