"""Record what the colbert_stdlib runs measured, for `derive.py` to re-derive the README from.

    python experiments/colbert_stdlib/collect.py [--logs logs/ablations]

Writes `runs/<ablation>/<variant>_s<seed>.json` inside experiments/colbert_stdlib/, one record per
run (research.reports.run_records) with its per-query test scores, for the paired tests over
queries. The baselines' per-query scores are in `baselines*.json` (`baselines.py`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from research.reports.errors import ReportError
from research.reports.run_records import write_records

HERE = Path(__file__).parent
ABLATIONS = ("colbert_dense_temperature", "colbert_dense")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=Path, default=Path("logs/ablations"))
    args = parser.parse_args()
    for ablation in ABLATIONS:
        try:
            written = write_records(
                args.logs / ablation, HERE / "runs" / ablation, per_query_splits=["test"]
            )
        except ReportError as error:
            raise SystemExit(
                f"{ablation}: {error} (run `research-ablate {ablation}` first)"
            ) from None
        print(f"{ablation}: {len(written)} run records")


if __name__ == "__main__":
    main()
