"""Ablations: the spec file (its variants, seeds, baseline) and the plan of its jobs; read by
`research-ablate` and `research-report` alike."""
