"""A plain `pip install .` (not editable) carries the configs: conf/ ships inside the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # installs a copy of the package: about 3 s
def test_an_installed_copy_finds_its_configs_without_the_checkout(tmp_path: Path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    assert (target / "research" / "conf" / "train.yaml").is_file()
    assert not (target / "research" / "conf").is_symlink()
    code = (
        "import research; from research.config.paths import config_dir;"
        "from research.config.compose import check_command_line;"
        "print(research.__file__); print(config_dir());"
        "check_command_line('train', ['model=transformer_cls', 'data=synthetic_recall'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RESEARCH_CONFIG_DIR")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    package, conf = done.stdout.split()
    assert package == str(target / "research" / "__init__.py")
    assert conf == str(target / "research" / "conf")
