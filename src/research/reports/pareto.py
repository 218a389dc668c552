"""The report's "Pareto front" section: for a multi-objective search
(`hydra.sweeper.direction: [maximize, minimize]`), the trials no other trial beats in every
objective, read from the `optimization_results.yaml` the search wrote in its sweep dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

RESULTS_FILE = "optimization_results.yaml"


def _front(path: Path) -> dict[str, Any] | None:
    """A results file's content when it holds a Pareto front this version can read."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
        solutions = data["solutions"]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return None
    if not isinstance(solutions, list) or not all(isinstance(s, dict) for s in solutions):
        return None
    return data


def _where(run_dir: Any, source: Path) -> str:
    if not run_dir:
        return "–"
    path = Path(str(run_dir))
    return path.relative_to(source).as_posix() if path.is_relative_to(source) else path.name


def _cell(value: Any) -> str:
    shown = f"{value:.4g}" if isinstance(value, float) else str(value)
    return shown.replace("|", "\\|")


def pareto_markdown(source: Path) -> str:
    """One section per multi-objective search under `source` (its sweep dir, or any folder
    above); "" when there is none."""
    source = Path(source)
    lines: list[str] = []
    for path in sorted(source.rglob(RESULTS_FILE)):
        data = _front(path)
        if data is None:
            continue
        names = [str(n) for n in data.get("objectives") or []]
        directions = [str(d) for d in data.get("directions") or []]
        goals = ", ".join(f"`{n}` {d}" for n, d in zip(names, directions, strict=False))
        title = f"`{data.get('study')}`" + (f" ({goals})" if goals else "")
        params = sorted({k for s in data["solutions"] for k in (s.get("params") or {})})
        lines += [
            "",
            f"## Pareto front of study {title}",
            "",
            "| trial | "
            + " | ".join(f"`{n}`" for n in names)
            + " | "
            + " | ".join(f"`{p}`" for p in params)
            + " | run dir |",
            "|---" * (2 + len(names) + len(params)) + "|",
        ]
        for solution in data["solutions"]:
            values = list(solution.get("values") or [])
            cells = [
                str(solution.get("trial", "–")),
                *(_cell(v) for v in values),
                *(_cell((solution.get("params") or {}).get(p, "–")) for p in params),
                _where(solution.get("run_dir"), source),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        found = path.relative_to(source).as_posix()
        lines += [
            "",
            f"{len(data['solutions'])} trials on the front (from `{found}`): no other completed "
            "trial of the study is as good in every objective and better in one.",
        ]
    return "\n".join(lines) + ("\n" if lines else "")
