"""The committed studies name no machine's folders: their reports, tables and READMEs are read
on other machines than the one that made them (paths are relative to the folder they describe)."""

from __future__ import annotations

import re
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
# A path that starts at one of the usual roots of a machine's folders (not e.g. `network/`).
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|tmp|home|root|Users)/")
NAMES = ("report.md", "runs.csv", "README.md")


def _committed_files() -> list[Path]:
    files = [p for p in EXPERIMENTS.rglob("*") if p.name in NAMES or p.suffix == ".json"]
    return sorted(p for p in files if p.is_file())


def test_the_scan_sees_every_kind_of_file():
    names = {p.name for p in _committed_files()}
    assert set(NAMES) <= names and any(n.endswith(".json") for n in names)


def test_no_committed_experiment_file_names_a_machine_path():
    found = []
    for path in _committed_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = MACHINE_PATH.search(line)
            if match:
                where = path.relative_to(EXPERIMENTS)
                found.append(f"{where}:{number}: {line[max(0, match.start() - 20) :][:100]}")
    assert not found, "\n".join(found)
