"""A config mistake exits with status 2 and one line, before torch is imported or a run starts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from research.config.paths import config_dir
from research.utils.engine_versions import hydra_14, hydra_version
from tests.helpers.cli import cli_env, run_cli
from tests.helpers.yaml_wording import parser_says

CASES = [
    (["model=cnnn"], "model=cnnn: no such config in conf/model/; choose one of: cnn"),
    (["optimizer.lr=-1"], "optimizer.lr=-1.0 is out of range; it must be >= 0.0"),
    (["trainer.max_epochs=abc"], "trainer.max_epochs='abc' must be int or null"),
    (["-m", "optimizer.lr=0.1,0.01,-5"], "optimizer.lr=-5.0 is out of range"),
    (["optimizer.lrr=0.1"], "optimizer.lrr"),
    # Without -m a swept value would fail only when the job starts, in Hydra's many lines.
    (["optimizer.lr=1e-3,1e-2"], "optimizer.lr=1e-3,1e-2 sweeps several values: add -m"),
    (["--cfg", "job", "seed=range(3)"], "seed=range(3) sweeps several values"),
    (["-m", "--cfg", "job"], "-m and --cfg cannot be combined"),
    # One process per CPU device: 99 of them on a small machine would swap it to a halt.
    (["trainer=cpu", "trainer.devices=99"], "trainer.devices=99 on CPU starts 99 processes"),
    # Rank zero in a child process: the job would record no history and no objective.
    (["trainer=ddp_sim", "trainer.strategy=ddp_spawn"], "trainer.strategy=ddp_spawn trains in"),
    (
        ["experiment=context_extension", "model.net.rope_scaling={rope_type: yarn, factor: 4}"],
        "rope_scaling.original_max_position_embeddings is required for rope_type=yarn",
    ),
    (
        ["experiment=context_extension", "data.eval_lengths=[256,384]"],
        "must each divide the longest (384)",
    ),
    # What Hydra accepts but a run cannot use: it failed only after its run dir was made.
    (["~model"], "model is missing (removed with ~model?): every research-train run needs it"),
    (["trainer.max_time=garbage"], "trainer.max_time='garbage' is not a duration"),
    (
        ["float32_matmul_precision=tf32"],
        "float32_matmul_precision='tf32' is not valid; choose one of: highest, high, medium, null",
    ),
    (
        ["trainer.float32_matmul_precision=high"],
        "trainer.float32_matmul_precision=high: trainer.float32_matmul_precision moved to "
        "float32_matmul_precision (",
    ),
    (["seed=4294967296"], "seed=4294967296 is out of range; it must be <= 4294967295"),
    (["-m", "ckpt_path=last", "seed=0,1"], "ckpt_path=last cannot run under -m"),
    # Without -m Hydra runs the job here: these were a quiet local run of the defaults.
    (["hparams_search=optuna"], "hparams_search=optuna takes effect in a multirun only; add -m"),
    (["launcher=submitit_local"], "launcher=submitit_local takes effect in a multirun only"),
    # Hydra's own refusals, in one line naming the override, with what to write instead.
    (["modle=mlp"], "modle=mlp: no such key or config group; did you mean model?"),
    # research-eval's spelling (ckpt=best|last|path) of research-train's ckpt_path.
    (["ckpt=last"], "ckpt=last: no such key or config group; did you mean ckpt_path?"),
    (["model=null"], "model=null: model cannot be null; choose one of: cnn"),
    (["+model=cnn"], "+model=cnn: model is in the defaults list already; choose its config"),
    (
        ["+model.net.dropout=0.1"],
        "+model.net.dropout=0.1: model.net.dropout is in the config already; set it with "
        "model.net.dropout=0.1 (no +)",
    ),
    (["-m", "seed=interval(0,1)"], "seed=interval(0,1): interval() samples a range"),
    (["-m", "optimizer=glob(nothing*)"], "optimizer=glob(nothing*) sweeps no value"),
    # The entry config is fixed: Hydra would fail after ours was checked, in eight lines.
    (["--config-name", "nope"], "--config-name and --config-path are fixed (train.yaml in"),
    (["-m", "hydra.sweeper._target_=nosuch.Sweeper"], "_target_=nosuch.Sweeper: No module named"),
    (["~paths"], "paths.log_dir is missing (removed with ~paths.log_dir?)"),
    # A model on data it cannot use: ColBERT on digits made a run dir, then an AttributeError.
    (
        ["model=colbert"],
        "model=colbert takes queries with their documents, but data=digits gives labelled "
        "images; model options that fit data=digits: cnn; data options that fit it: beir, "
        "stdlib_codesearch",
    ),
    (
        ["model=transformer_mlm", "data=synthetic_recall"],
        "model.net.max_len reads data.max_len, which data=synthetic_recall does not have; data "
        "options that have it: hf_text, stdlib_modules, stdlib_text, synthetic_listops",
    ),
]


@pytest.mark.parametrize(("args", "expected"), CASES)
def test_config_error_is_one_line_and_exit_2(workdir: Path, args: list[str], expected: str):
    done = run_cli("research-train", *args, cwd=workdir, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("research-train: error: ")
    assert expected in lines[0]
    assert "+modle" not in lines[0], "a typo gets the closest name, not Hydra's `+key` advice"
    assert not (workdir / "logs").exists(), "a rejected command must not create a run dir"


def test_extend_list_is_hydras_where_hydra_has_it(workdir: Path):
    """Hydra 1.4 added `extend_list(...)` to its override grammar; 1.3's parser names the
    functions it has."""
    done = run_cli("research-train", "tags=extend_list(a)", "--cfg", "job", cwd=workdir)
    if hydra_14():
        assert done.returncode == 0, done.stderr
        assert "\ntags:\n- a\n" in done.stdout
    else:
        assert done.returncode == 2
        assert "tags=extend_list(a): Unknown function 'extend_list'" in done.stderr


def _user_configs(root: Path, text: str) -> Path:
    """A folder of the user's own configs (outside conf/) holding experiment/mine.yaml."""
    (root / "mine" / "experiment").mkdir(parents=True)
    (root / "mine" / "experiment" / "mine.yaml").write_text(text)
    return root / "mine"


def test_hydra_searchpath_finds_a_users_own_experiment(workdir: Path):
    folder = _user_configs(workdir, "# @package _global_\nseed: 7\n")
    done = run_cli(
        "research-train",
        f"hydra.searchpath=[file://{folder}]",
        "experiment=mine",
        "--cfg",
        "job",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr
    assert "\nseed: 7\n" in done.stdout


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("seed: 7\n  trainer: [a\n", "mine.yaml:3:10", "mapping values are not allowed here"),
        ("seed: [1\n", "mine.yaml:3:1", "expected ',' or ']', but got '<stream end>'"),
        ("seed: 1\nseed: 2\n", "mine.yaml:3:1", "found duplicate key seed"),
    ],
)
def test_a_yaml_syntax_error_is_one_line_naming_file_line_and_column(
    workdir: Path, text: str, where: str, problem: str
):
    folder = _user_configs(workdir, "# @package _global_\n" + text)
    done = run_cli(
        "research-train", f"hydra.searchpath=[file://{folder}]", "experiment=mine", cwd=workdir
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert f"{folder}/experiment/{where}: YAML syntax error: {parser_says(problem)}" in line, line
    assert not (workdir / "logs").exists()


def test_a_yaml_syntax_error_in_conf_names_the_file(workdir: Path):
    conf = workdir / "conf"
    shutil.copytree(config_dir(), conf)
    (conf / "optimizer" / "adam.yaml").write_text("lr: 0.1\n  betas: [0.9\n")
    done = run_cli("research-train", cwd=workdir, env={"RESEARCH_CONFIG_DIR": str(conf)})
    assert done.returncode == 2
    problem = parser_says("mapping values are not allowed here")
    assert done.stderr.strip() == (
        f"research-train: error: {conf}/optimizer/adam.yaml:2:8: YAML syntax error: {problem}; "
        "fix the file at that line"
    )


PROBE = """
import sys
from research.cli.app import run, train_task
try:
    code = run("research-train", "train", train_task, {args!r})
except SystemExit as exit:  # Hydra's --help exits by itself
    code = exit.code
heavy = sorted(m for m in ("torch", "lightning") if m in sys.modules)
print("HEAVY=" + ",".join(heavy), "CODE=" + str(code))
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--help", "model.net"],
        ["--cfg", "job"],
        ["model=cnnn"],
        ["trainer=cpu", "trainer.devices=99"],
    ],
)
def test_cli_answers_without_importing_torch(workdir: Path, args: list[str]):
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)],
        cwd=workdir,
        env=cli_env(workdir),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "HEAVY= " in done.stdout, done.stdout + done.stderr
    assert ("CODE=0" if args[0].startswith("--") else "CODE=2") in done.stdout


def test_cfg_job_prints_every_value_the_yaml_leaves_to_the_declarations(workdir: Path):
    done = run_cli("research-train", "optimizer=sgd", "--cfg", "job", cwd=workdir, timeout=60)
    assert done.returncode == 0
    assert "_target_: torch.optim.SGD" in done.stdout
    assert "_target_: research.models.cnn.CNN" in done.stdout
    # conf/optimizer/sgd.yaml does not spell these out; the declaration does.
    assert "  nesterov: false\n" in done.stdout and "  dampening: 0.0\n" in done.stdout


def test_a_value_no_yaml_spells_out_is_a_plain_override(workdir: Path):
    done = run_cli(
        "research-train",
        "optimizer.weight_decay=0.1",
        "--cfg",
        "job",
        "--package",
        "optimizer",
        cwd=workdir,
    )
    assert done.returncode == 0 and "weight_decay: 0.1" in done.stdout


def test_help_on_a_node_lists_its_declared_fields(workdir: Path):
    done = run_cli(
        "research-train",
        "model=transformer_cls",
        "data=synthetic_recall",
        "--help",
        "model.net",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("model.net: research.models.transformer.SequenceClassifier")
    (norm,) = [ln.split() for ln in lines if ln.split()[:1] == ["norm"]]
    assert norm[:7] == ["norm", "str", "pre", "one", "of", "post,", "pre"]
    assert len(" ".join(norm[8:])) > 10  # its one-line doc
    (d_model,) = [ln.split() for ln in lines if ln.split()[:1] == ["d_model"]]
    assert d_model[:4] == ["d_model", "int", "128", ">="] and d_model[5] == "64"  # value here

    leaf = run_cli("research-train", "--help", "optimizer.lr", cwd=workdir)
    assert leaf.returncode == 0 and leaf.stdout.splitlines()[-1].split()[:3] == [
        "lr",
        "float",
        "0.001",
    ]
    usage = run_cli("research-train", "--help", cwd=workdir)
    assert "--help NODE" in usage.stdout and "model  " not in usage.stdout[:40]


def test_help_on_an_unknown_node_names_what_exists(workdir: Path):
    done = run_cli("research-train", "--help", "optimizer.lrr", cwd=workdir)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "research-train: error: --help optimizer.lrr: no such node; optimizer has: "
        "_partial_, _target_, amsgrad, betas, eps, foreach, fused, lr, maximize, weight_decay"
    )


def test_a_target_without_a_declaration_is_one_line(workdir: Path):
    """A warning on Hydra 1.3; on 1.4, whose execution allow-list holds the declared targets,
    a refusal before the run."""
    done = run_cli(
        "research-train",
        "+callbacks.extra._target_=collections.OrderedDict",
        "--cfg",
        "job",
        cwd=workdir,
    )
    if hydra_14():
        assert done.returncode == 2
        assert done.stderr.strip() == (
            "research-train: error: callbacks.extra._target_=collections.OrderedDict has no "
            f"declaration, and Hydra {hydra_version()} calls only declared targets (its "
            "execution allow-list); declare its parameters in the configs.py of its package"
        )
        return
    assert done.returncode == 0
    assert done.stderr.strip() == (
        "research-train: warning: callbacks.extra._target_=collections.OrderedDict has no "
        "declaration, so its values are not checked before the run; declare its parameters in "
        "the configs.py of its package"
    )
