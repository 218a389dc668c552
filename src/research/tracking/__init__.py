"""W&B setup, provenance, offline-run reader and run-dir metrics."""
