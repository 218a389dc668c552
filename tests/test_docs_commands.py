"""Every research-train and research-ablate command that README.md, the docs and the experiments'
READMEs show is checked as the command line would check it, before anything runs: each composes
and passes its declarations, or fails with the error its comment quotes (sweeps.md once showed
a way to add a search key that Hydra refuses without `++`).

Commands with a placeholder (`<run>`, `experiment=X`, `...`) and `--help` lines are left out; the
machine checks (dataset files, devices) are not made, since the docs' commands are for the
reader's machine.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from research import compat
from research.config.compose import compose_all, hydra_node
from research.config.errors import ConfigError
from research.config.validate import validate
from research.run.launch_checks import check_launch

CHECKOUT = Path(__file__).parents[1]
PAGES = [
    CHECKOUT / "README.md",
    *sorted((CHECKOUT / "docs" / "pages").rglob("*.md")),
    *sorted((CHECKOUT / "experiments").rglob("README.md")),
]
PLACEHOLDER = re.compile(r"<[^>]*>|\.\.\.|=X\b")


def _commands(prog: str) -> list[tuple[str, str, str | None]]:
    """(page, command, the error its comment quotes) for each `prog` line of a code block."""
    found = []
    for page in PAGES:
        for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", page.read_text(), re.S):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                commands, _, comment = line.strip().partition(" #")
                quoted = re.search(rf"{prog}: error: (.*)", comment)
                for command in re.split(r"\s*(?:&|;)\s+", commands):
                    if not command.startswith(f"{prog} ") and command != prog:
                        continue
                    if PLACEHOLDER.search(command) or "--help" in command:
                        continue
                    name = page.relative_to(CHECKOUT).as_posix()
                    found.append((name, command.strip(), quoted.group(1) if quoted else None))
    return found


def _check_train(args: list[str]) -> None:
    parsed = compat.hydra_args_parser().parse_args([a for a in args if a not in ("--cfg", "job")])
    composed = compose_all("train", parsed.overrides, single=not parsed.multirun)
    configs = [validate(cfg, entry="train") for cfg in composed]
    hydra = hydra_node(composed[0])
    check_launch("research-train", "train", hydra, configs, parsed.multirun, parsed.overrides)


TRAIN = _commands("research-train")
ABLATE = _commands("research-ablate")


def test_the_pages_show_commands_of_both_kinds():
    assert len(TRAIN) >= 40 and len(ABLATE) >= 8, (len(TRAIN), len(ABLATE))
    assert any(error for *_, error in TRAIN), "the README's refused example is found"


def _marked(found: list[tuple[str, str, str | None]]) -> list:
    """An Optuna search composes a config per case of its space: 1-3 s a command, slow."""
    slow = [pytest.mark.slow]
    return [
        pytest.param(*case, id=case[1], marks=slow if "hparams_search=" in case[1] else ())
        for case in found
    ]


@pytest.mark.parametrize(("page", "command", "error"), _marked(TRAIN))
def test_a_research_train_command_of_the_docs_is_accepted_or_refused_as_its_comment_says(
    page: str, command: str, error: str | None, tmp_path: Path, monkeypatch
):
    monkeypatch.setenv("RESEARCH_ROOT", str(tmp_path))
    args = shlex.split(command)[1:]
    if error is None:
        _check_train(args)
        return
    with pytest.raises(ConfigError) as refused:
        _check_train(args)
    assert str(refused.value) == error.strip(), page


@pytest.mark.slow  # each plans every job of its ablation: 3-5 s
@pytest.mark.parametrize(("page", "command", "error"), ABLATE, ids=[c for _, c, _ in ABLATE])
def test_a_research_ablate_command_of_the_docs_plans_its_jobs(
    page: str, command: str, error: str | None, tmp_path: Path, monkeypatch, capsys
):
    from research.cli.ablate import main

    monkeypatch.setenv("RESEARCH_ROOT", str(tmp_path))
    args = [a for a in shlex.split(command)[1:] if a != "--dry-run"]
    assert main([*args, "--dry-run"]) == 0, f"{page}: {capsys.readouterr().err}"
    assert " jobs to run" in capsys.readouterr().out
