"""The command-line entry points: research-train, research-eval, research-ablate, research-report
and research-index. Each parses its arguments and reports a mistake in one line before torch
loads; the work itself happens in research.run, research.ablation and research.reports."""
