"""Where the configs are read from and where runs write: found from the project, never silently
from whatever directory a command happens to start in."""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path

# A folder that holds this file is a project (a checkout, or a user's own project).
PROJECT_MARKER = "pyproject.toml"


def config_dir() -> Path:
    """$RESEARCH_CONFIG_DIR, else the package's `conf/` (a link to the repo's `conf/` in a
    checkout, the copied files in a wheel), so an installed package has its configs too."""
    env = os.environ.get("RESEARCH_CONFIG_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "conf"


def group_options(group: str) -> list[str]:
    """The option names of a config group (its YAML files), sorted."""
    folder = config_dir() / group
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


@cache
def _say_once(message: str) -> None:
    print(message, file=sys.stderr)


def project_root() -> Path:
    """$RESEARCH_ROOT, else the project that holds the configs in use (the checkout for an
    editable install, the project of $RESEARCH_CONFIG_DIR), else the current directory, which is
    then said once on stderr: logs/ and data/ go under this folder unless `paths.*` say
    otherwise."""
    env = os.environ.get("RESEARCH_ROOT")
    if env:
        return Path(env).expanduser().absolute()
    project = config_dir().resolve().parent
    if (project / PROJECT_MARKER).is_file():
        return project
    cwd = Path.cwd()
    _say_once(
        f"research: runs and data go under the current directory {cwd} (no $RESEARCH_ROOT, and "
        f"the configs in {config_dir()} are not in a project); set RESEARCH_ROOT or paths.root "
        "to choose"
    )
    return cwd
