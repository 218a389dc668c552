"""README's "Add your own model and dataset", followed verbatim in a copy of the project: the
files it shows, written where it says, are all a new model and dataset need; the commands it
gives run; and the checks that find components by themselves pass with the new ones."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import BIN, cli_env

CHECKOUT = Path(__file__).parents[1]
SECTION = "## Add your own model and dataset"
FILE_LINE = re.compile(r"^# ((?:src|conf)/\S+)( \(add at the end\))?$")


def _blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced block in the section."""
    text = (CHECKOUT / "README.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def _copy_project(to: Path) -> None:
    for part in ("src", "conf", "tests"):
        shutil.copytree(
            CHECKOUT / part, to / part, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(CHECKOUT / "pyproject.toml", to)


def _in(project: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run `command` in the copy, its own code first on the path."""
    env = {**cli_env(project), "PYTHONPATH": str(project / "src")}
    return subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_the_readme_example_adds_a_model_and_a_dataset_in_six_files(tmp_path: Path):
    project = tmp_path / "project"
    _copy_project(project)
    touched = []
    for language, text in _blocks():
        match = FILE_LINE.match(text.splitlines()[0])
        if language in ("python", "yaml") and match:
            path, append = project / match.group(1), bool(match.group(2))
            assert path.exists() == append, (
                f"{path}: the README says {'add to' if append else 'create'} it"
            )
            with path.open("a" if append else "w") as out:
                out.write(("\n\n" if append else "") + text)
            touched.append(match.group(1))
    assert sorted(touched) == [
        "conf/data/wine.yaml",
        "conf/model/mlp.yaml",
        "src/research/data/configs.py",
        "src/research/data/wine.py",
        "src/research/models/configs.py",
        "src/research/models/mlp.py",
    ]
    (commands,) = [text for language, text in _blocks() if language == "bash"]
    for command in commands.strip().splitlines():
        prog, *args = command.split()
        done = _in(project, [str(BIN / prog), *args])
        assert done.returncode == 0, done.stderr[-2000:]
        if "--help" in args:
            assert "hidden_sizes" in done.stdout and "Width of each hidden layer" in done.stdout
        else:
            assert done.stdout.strip().splitlines()[-1].startswith("research-train: completed")
    checks = ["tests/config/test_declarations.py", "tests/config/test_yaml_values.py"]
    done = _in(project, [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *checks])
    assert done.returncode == 0, done.stdout[-3000:]
    for target in ("research.models.mlp.MLP", "research.data.wine.WineDataModule"):
        assert f"test_our_components_take_their_declaration[{target}] PASSED" in done.stdout
