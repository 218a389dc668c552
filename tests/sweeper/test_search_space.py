"""The search space keeps Hydra's Optuna plugin's contract (hydra-optuna-sweeper's
`create_optuna_distribution_from_override` and `create_params_from_overrides`): fixed values
leave the space, ranges keep their endpoints, shuffles are categoricals, and a distribution that
cannot be built is one line before any study exists."""

from __future__ import annotations

from typing import Any

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from hydra_plugins.research_sweeper._space import distribution, values_to_check
from hydra_plugins.research_sweeper._study import _grid, check_search, command_line_space
from hydra_plugins.research_sweeper.optuna_sweeper import OptunaStudySweeper
from research.config.errors import ConfigError

PARAMS = {
    "optimizer.lr": "tag(log, interval(1e-4, 1e-1))",
    "model.net.dropout": "interval(0.0, 0.5)",
}


def _sweeper(params: dict[str, str], arguments: list[str], **settings: Any) -> OptunaStudySweeper:
    """A sweeper that has checked `arguments` and built its space, as a search starts."""
    sweeper = OptunaStudySweeper("s", None, "maximize", 4, params=params, **settings)
    fixed, sweeper.params = sweeper.check(arguments, None)
    sweeper._prepare(fixed)  # noqa: SLF001
    return sweeper


def _drawn(sweeper: OptunaStudySweeper, n: int = 1) -> list[optuna.trial.FrozenTrial]:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(n):
        trial = study.ask()
        sweeper._draw(trial)  # noqa: SLF001
        study.tell(trial, 0.0)
    return study.trials


def test_a_fixed_value_on_the_command_line_takes_its_key_out_of_the_space():
    fixed, space = command_line_space(["model.net.dropout=0.1", "seed=3"], PARAMS)
    assert fixed == ["model.net.dropout=0.1", "seed=3"]
    assert space == {"optimizer.lr": "tag(log, interval(1e-4, 1e-1))"}
    # With Hydra's prefixes too: ++key and key name one config key.
    fixed, space = command_line_space(["++model.net.dropout=0.2"], PARAMS)
    assert fixed == ["++model.net.dropout=0.2"] and "model.net.dropout" not in space
    # A trial then draws only what is still searched.
    (trial,) = _drawn(_sweeper(PARAMS, ["model.net.dropout=0.1"]))
    assert list(trial.params) == ["optimizer.lr"]


def test_a_plain_value_in_params_is_a_fixed_override_as_in_the_plugin():
    fixed, space = command_line_space([], {**PARAMS, "trainer.max_epochs": "3"})
    assert fixed == ["trainer.max_epochs=3"] and "trainer.max_epochs" not in space
    # The command line's own value wins over the file's.
    fixed, _ = command_line_space(["trainer.max_epochs=1"], {"trainer.max_epochs": "3"})
    assert fixed == ["trainer.max_epochs=1"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # Floats: FloatDistribution(start, stop, step), as the plugin builds it; stop included.
        ("range(0.0, 0.5, step=0.25)", FloatDistribution(0.0, 0.5, step=0.25)),
        ("range(0.5, 5.5, step=1)", FloatDistribution(0.5, 5.5, step=1.0)),
        ("range(0, 1, step=0.5)", FloatDistribution(0.0, 1.0, step=0.5)),
        # Integers: IntDistribution(start, stop, step), stop included.
        ("range(1, 8)", IntDistribution(1, 8)),
        ("range(0, 10, 5)", IntDistribution(0, 10, step=5)),
        ("range(1, 8, 2)", IntDistribution(1, 7, step=2)),  # Optuna lowers an unreached stop
        # shuffle(...): the plugin's categorical (its values in their written order).
        ("shuffle(range(1, 4))", CategoricalDistribution([1, 2, 3])),
        ("shuffle(range(0.0, 1.0, step=0.5))", CategoricalDistribution([0.0, 0.5])),
        ("shuffle(choice(b, a, c))", CategoricalDistribution(["b", "a", "c"])),
        ("choice(1, 2)", CategoricalDistribution([1, 2])),
        ("interval(0.0, 0.5)", FloatDistribution(0.0, 0.5)),
        ("tag(log, interval(1e-4, 1e-1))", FloatDistribution(1e-4, 1e-1, log=True)),
        # A deliberate addition: the plugin ignores log on a range; here it is an integer log scale.
        ("tag(log, range(1, 64))", IntDistribution(1, 64, log=True)),
    ],
)
def test_a_space_is_the_distribution_hydras_plugin_builds(spec: str, expected: Any):
    assert distribution("x", spec) == expected


def test_float_ranges_and_shuffles_are_drawn_as_the_plugin_draws_them():
    space = {
        "model.net.dropout": "range(0.0, 0.5, step=0.25)",
        "trainer.max_epochs": "shuffle(range(1, 4))",
        "optimizer.lr": "range(0.5, 5.5, step=1)",
    }
    trials = _drawn(_sweeper(space, []), n=20)
    for trial in trials:
        assert trial.params["model.net.dropout"] in (0.0, 0.25, 0.5)
        assert trial.params["optimizer.lr"] in (0.5, 1.5, 2.5, 3.5, 4.5, 5.5)
        assert isinstance(trial.distributions["trainer.max_epochs"], CategoricalDistribution)
    # The ends are searched: over 20 draws both turn up.
    assert {t.params["model.net.dropout"] for t in trials} == {0.0, 0.25, 0.5}


def test_a_grid_walks_the_same_points_the_sampler_draws():
    grid = _grid({"a": "range(0.0, 0.5, step=0.25)", "b": "range(1, 3)", "c": "choice(x, y)"})
    assert grid == {"a": [0.0, 0.25, 0.5], "b": [1, 2, 3], "c": ["x", "y"]}
    assert _grid({"d": "tag(log, range(1, 4))", "e": "shuffle(range(2, 4))"}) == {
        "d": [1, 2, 3, 4],
        "e": [2, 3],
    }


def test_a_preflight_checks_every_choice_and_both_ends_a_trial_can_get():
    assert values_to_check("x", "range(1, 4)") == [1, 4]  # Hydra's own sweep stops at 3
    assert values_to_check("x", "range(0.0, 1.0, step=0.5)") == [0.0, 1.0]
    assert values_to_check("x", "choice(a, b)") == ["a", "b"]
    assert values_to_check("x", "tag(log, interval(1e-4, 1e-1))") == [1e-4, 1e-1]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("range(1, 4, 0)", "a search range needs a step > 0"),
        ("range(0.0, 0.5, step=0.0)", "a search range needs a step > 0"),
        ("range(5, 1, -1)", "a search range needs a step > 0"),
        ("range(5, 3)", "the range starts above its end"),
        ("shuffle(range(3, 3))", "shuffle(range(...)) holds no value"),
        ("tag(log, range(0, 8))", "a log-scale range needs a start > 0"),
        ("tag(log, range(1, 8, 2))", "a log-scale range takes integers with step 1"),
        ("tag(log, range(0.1, 1.0, step=0.1))", "a log-scale range takes integers with step 1"),
        ("tag(log, choice(1, 2))", "tag(log, ...) takes interval(...) or range(...)"),
        ("interval(0.5, 0.1)", "the interval starts above its end"),
        ("tag(log, interval(0, 0.1))", "a log-scale interval needs a start > 0"),
        ("choice(1, 2", "hparams_search param x=choice(1, 2:"),
        ("3", "is not a search space"),
    ],
)
def test_a_distribution_that_cannot_be_built_is_one_line(spec: str, expected: str):
    with pytest.raises(ConfigError) as refused:
        if spec == "3":
            from hydra_plugins.research_sweeper._space import sweep_of

            sweep_of("x", spec)
        else:
            check_search({"name": "tpe"}, {"name": "none"}, {"x": spec})
    (line,) = str(refused.value).splitlines()
    assert line.startswith(f"hparams_search param x={spec}") and expected in line
