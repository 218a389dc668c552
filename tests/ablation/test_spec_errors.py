"""Mistakes in an ablation file: each is one line naming the file, the key and what is valid, exit
status 2, and nothing written (`--dry-run` too: the file is checked before any job is planned)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.yaml_wording import parser_says

REPO_CONF = Path(__file__).parents[2] / "conf"
BASE = "base: [debug=limit, logger=none]\n"
UNCLOSED = parser_says("expected ',' or ']', but got ':'")

# (file text, what the one line must say: the key and what is valid)
BAD = {
    "yaml_syntax": (
        BASE + "variants:\n  a: [optimizer=sgd\nseeds: [0]\n",
        [f":4:6: YAML syntax error: {UNCLOSED}"],
    ),
    "duplicate_top_key": (
        BASE + "variants: {a: []}\nseeds: [0]\nseeds: [1]\n",
        [":4:1: YAML syntax error: found duplicate key seeds", "give each key once"],
    ),
    "duplicate_variant": (
        BASE + "variants:\n  a: []\n  a: [optimizer=sgd]\nseeds: [0]\n",
        [":4:3: YAML syntax error: found duplicate key a", "give each key once"],
    ),
    "unquoted_list": (
        BASE + "variants:\n  a: [optimizer.betas=[0.9,0.99]]\nseeds: [0]\n",
        [":3:23: YAML syntax error:", "quote an override", '"optimizer.betas=[0.9,0.99]"'],
    ),
    "nested_list": (
        BASE + "variants:\n  a:\n    - [optimizer=sgd, optimizer.lr=0.1]\nseeds: [0]\n",
        ["variants.a[0] is ['optimizer=sgd', 'optimizer.lr=0.1'], not a string", "quoted"],
    ),
    "mapping_item": (
        BASE + "variants:\n  a: [optimizer.lr: 0.1]\nseeds: [0]\n",
        ["variants.a[0] is {'optimizer.lr': 0.1}, not a string"],
    ),
    "string_variant": (
        BASE + "variants:\n  a: optimizer=sgd\nseeds: [0]\n",
        ["variants.a is 'optimizer=sgd'; give a list"],
    ),
    "unknown_key": (
        BASE + "variants: {a: []}\nseeds: [0]\nseedz: [1, 2]\n",
        ["unknown key 'seedz'; did you mean seeds?", "valid keys: base, variants, axes, seeds"],
    ),
    "duplicate_seeds": (
        BASE + "variants: {a: []}\nseeds: [0, 1, 0]\n",
        ["seeds: 0 given twice", "integers from 0 to 4294967295, each once"],
    ),
    "negative_seed": (BASE + "variants: {a: []}\nseeds: [-1]\n", ["seeds: -1 is not a valid"]),
    "huge_seed": (
        BASE + "variants: {a: []}\nseeds: [4294967296]\n",
        ["seeds: 4294967296 is not a valid seed", "from 0 to 4294967295"],
    ),
    "float_seed": (BASE + "variants: {a: []}\nseeds: [1.5]\n", ["seeds: 1.5 is not a valid"]),
    "bool_seed": (BASE + "variants: {a: []}\nseeds: [true]\n", ["seeds: True is not a valid"]),
    "escaping_variant": (
        BASE + "variants:\n  ../../x: []\nseeds: [0]\n",
        ["variant='../../x' contains '/'", "no '..'"],
    ),
    "dots_variant": (BASE + "variants:\n  '..': []\nseeds: [0]\n", ["variant='..' is only dots"]),
    "escaping_axis_option": (
        BASE + "axes:\n  opt:\n    sgd: []\n    ../x: []\n  norm: {n: []}\nseeds: [0]\n",
        ["axes.opt option='../x' contains '/'"],
    ),
    "sweeping_variant": (
        BASE + "variants:\n  a,b: []\nseeds: [0]\n",
        ["variant 'a,b' is not a plain name", "letters, digits"],
    ),
    "newline_override": (
        BASE + 'variants:\n  a: ["optimizer.lr=0.1\\ntouch pwned"]\nseeds: [0]\n',
        ["variants.a: 'optimizer.lr=0.1\\ntouch pwned' contains a newline"],
    ),
    "seed_in_base": (
        "base: [debug=limit, seed=7]\nvariants: {a: []}\nseeds: [0]\n",
        ["base: seed=7: research-ablate sets seed in every job", "one of the file's `seeds`"],
    ),
    "group_in_variant": (
        BASE + "variants:\n  a: [group=mine]\nseeds: [0]\n",
        ["variants.a: group=mine: research-ablate sets group in every job", "W&B group"],
    ),
    "variant_in_axis": (
        BASE + "axes:\n  opt:\n    sgd: [+variant=x]\nseeds: [0]\n",
        ["axes.opt.sgd: +variant=x: research-ablate sets variant in every job"],
    ),
    "escaping_task_name": (
        "base: [debug=limit, logger=none, task_name=../../x]\nvariants: {a: []}\nseeds: [0]\n",
        ["task_name='../../x' contains '/'"],
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A project root with its own copy of conf/, holding one ablation file per mistake."""
    root = tmp_path_factory.mktemp("ablation_errors")
    shutil.copytree(REPO_CONF, root / "conf")
    for name, (text, _) in BAD.items():
        (root / "conf" / "ablation" / f"{name}.yaml").write_text(text)
    return root, {"RESEARCH_CONFIG_DIR": str(root / "conf")}


def _refused(project: tuple[Path, dict[str, str]], *args: str) -> str:
    root, env = project
    done = run_cli("research-ablate", *args, cwd=root, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("research-ablate: error: ")
    assert not (root / "logs").exists()
    return done.stderr


@pytest.mark.parametrize("name", list(BAD))
def test_a_mistake_in_the_file_is_one_line_naming_file_and_key(project, name):
    message = _refused(project, name, "--dry-run")
    file = project[0] / "conf" / "ablation" / f"{name}.yaml"
    assert str(file) in message or name == "escaping_task_name"
    for part in BAD[name][1]:
        assert part in message


def test_an_ablation_name_is_one_folder(project):
    message = _refused(project, "../ablation/dots_variant", "--dry-run")
    assert "ablation='../ablation/dots_variant' contains '/'" in message


def test_a_control_character_in_an_extra_override_is_refused(project):
    message = _refused(project, "cnn_sgd_momentum", "optimizer.lr='0.1\rx'", "--dry-run")
    assert "override \"optimizer.lr='0.1\\rx'\" contains a carriage return" in message


def test_research_report_reads_the_file_with_the_same_checks(project):
    """The report takes its baseline and metrics from the file: a key given twice there is
    refused, not silently read as its last copy."""
    root, env = project
    (root / "logs" / "ablations" / "duplicate_top_key").mkdir(parents=True)
    done = run_cli("research-report", "duplicate_top_key", cwd=root, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("research-report: error: ")
    assert "found duplicate key seeds" in done.stderr
    shutil.rmtree(root / "logs")


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        # The job's own seed=<s> came later and won: the runs were the ablation's seeds, in a
        # folder named +seed=4.
        ("seed=4", "seed=4: research-ablate sets seed in every job: each job's seed is one of"),
        ("tags=[mine]", "tags=[mine]: research-ablate sets tags in every job: each job's tags"),
        ("variant=sgd", "variant=sgd: research-ablate sets variant in every job"),
        ("group=g", "group=g: research-ablate sets group in every job"),
    ],
)
def test_an_extra_override_of_what_each_job_sets_is_refused(project, override, expected):
    message = _refused(project, "cnn_sgd_momentum", override, "--dry-run")
    assert expected in message


@pytest.mark.slow
def test_a_variant_the_command_line_breaks_is_named(project):
    """optimizer=adam is fine for the base; the `sgd` variants' momentum is what it removes."""
    message = _refused(project, "cnn_sgd_momentum", "optimizer=adam", "--dry-run")
    assert "error: variant sgd+norm (optimizer.momentum=0.0): optimizer.momentum=0.0: no such" in (
        message
    )
    # A mistake of the command line itself is not pinned on a variant.
    message = _refused(project, "cnn_sgd_momentum", "optimizer.lr=-3", "--dry-run")
    assert message.strip() == (
        "research-ablate: error: optimizer.lr=-3.0 is out of range; it must be >= 0.0"
    )
