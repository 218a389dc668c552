"""The documentation site builds with `mkdocs build --strict`: a broken link, a page missing from
the navigation or an API page whose module moved fails here."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from research.config.describe import field_docs
from research.models.configs import CNNConfig

CHECKOUT = Path(__file__).parents[1]


@pytest.mark.slow  # a whole MkDocs build: about 5 s
def test_the_docs_build_strictly(tmp_path: Path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            "docs/mkdocs.yml",
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=CHECKOUT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "api" / "index.html").is_file()
    page = (tmp_path / "site" / "reference" / "models" / "index.html").read_text()
    doc = field_docs(CNNConfig)["kernel_sizes"]
    assert html.escape(doc, quote=False) in page  # each declared field's doc reaches its page


def test_ci_runs_the_test_command_the_readme_gives():
    """.ci/run must run exactly what README.md tells a user to run, and `make test`/`make
    test-all` the same two pytest commands."""
    readme = (CHECKOUT / "README.md").read_text()
    section = readme.split("## Tests and documentation", 1)[1]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    (command,) = [line for block in blocks for line in block.splitlines() if "pytest" in line]
    ci = [line for line in (CHECKOUT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci[-1] == command
    make = (CHECKOUT / "Makefile").read_text()
    for part in command.split(" && "):
        assert f"$(BIN)/{part}" in make
