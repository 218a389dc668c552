"""Names that become a folder (`task_name`, `hydra.job.name`, an Optuna study, a variant) and
values that reach a job script: refused in one line, exit 2, before anything is written."""

from __future__ import annotations

import pytest

from research.config.compose import check_command_line
from research.config.errors import ConfigError
from research.config.names import check_segment, control_character
from tests.helpers.cli import FAST, run_cli


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("a\nb", "a newline"),
        ("a\rb", "a carriage return"),
        ("a\x00b", "a NUL byte"),
        ("a\tb", "a tab"),
        ("a\x1bb", "the control character U+001B"),
        ("a\x7fb", "the control character U+007F"),
        ("a\x85b", "the control character U+0085"),
        ("a\u2028b", "the control character U+2028"),
        ("optimizer.lr=0.1 é ${x}", None),
    ],
)
def test_control_characters_are_named(text, found):
    assert control_character(text) == found


@pytest.mark.parametrize("name", ["train", "sgd+norm", "dropout0.1", "lr1e-4", "a b", ".hidden"])
def test_a_folder_name_may_be(name):
    check_segment(name, "task_name")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../../../x", "contains '/'"),
        ("a/b", "contains '/'"),
        ("a..b", "contains '..'"),
        ("..", "is only dots"),
        (".", "is only dots"),
        ("", "is empty"),
        ("a\nb", "contains a newline"),
    ],
)
def test_a_folder_name_may_not_be(name, problem):
    with pytest.raises(ConfigError) as err:
        check_segment(name, "task_name")
    assert str(err.value).startswith(f"task_name={name!r} {problem}; it names a folder")


@pytest.mark.parametrize(
    "args",
    [
        ["task_name=../../../x"],
        ["hydra.job.name=../../../x"],
        ["task_name='a\x1bb'"],
        ["-m", "task_name=ok,../../../x"],
    ],
)
def test_research_train_refuses_a_name_before_anything_is_written(tmp_path, args):
    root = tmp_path / "p" / "q" / "root"  # ../../../x from root/logs stays inside tmp_path
    root.mkdir(parents=True)
    done = run_cli("research-train", *args, *FAST, "logger=none", cwd=root)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("research-train: error: ")
    assert len(done.stderr.splitlines()) == 1
    assert "../../../x' contains '/'" in done.stderr or "U+001B" in done.stderr
    assert sorted(tmp_path.rglob("*")) == [root.parent.parent, root.parent, root]


def test_research_eval_refuses_an_escaping_task_name(tmp_path):
    done = run_cli("research-eval", "run_dir=logs/x", "task_name=../../x", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "research-eval: error: task_name='../../x' contains '/'; it names a folder, so use "
        "letters, digits and '_', '-', '+', '.' (no '/', no '..')\n"
    )


def test_research_eval_refuses_a_control_character(tmp_path):
    done = run_cli("research-eval", "run_dir='logs/x\x00y'", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "research-eval: error: override \"run_dir='logs/x\\x00y'\" contains a NUL byte; "
    )


def test_an_optuna_study_name_is_one_folder():
    with pytest.raises(ConfigError, match=r"^hydra.sweeper.study_name='\.\./x' contains '/'"):
        check_command_line("train", ["hparams_search=optuna", "hydra.sweeper.study_name=../x"])


def test_a_launcher_value_reaches_the_job_script_on_one_line(monkeypatch):
    """Whatever it comes from (here the environment), not only an override."""
    monkeypatch.setenv("COMMENT", "x\ntouch pwned")
    with pytest.raises(ConfigError) as err:
        check_command_line(
            "train", ["launcher=submitit_slurm", "+hydra.launcher.comment=${oc.env:COMMENT}"]
        )
    assert str(err.value).startswith(
        "hydra.launcher.comment='x\\ntouch pwned' contains a newline; values are written into "
        "job scripts (SLURM)"
    )
