"""TPE's flags whose defaults Optuna 5 changed (multivariate and constant_liar: off in 4.x, on in
5.x) are given explicitly from config and kept as part of a study's identity, so that one config
builds one sampler on every Optuna the project allows (`make test-oldest` runs this on 4.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
from omegaconf import OmegaConf

from hydra_plugins.research_sweeper._space import search_space, suggest
from hydra_plugins.research_sweeper._study import (
    TPE_FLAGS,
    build_sampler,
    check_search,
    check_settings,
    search_sampler,
    search_settings,
)
from research.config.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SPACE = {
    "optimizer.lr": "tag(log, interval(1e-4, 1e-1))",
    "model.net.dropout": "range(0.0, 0.5, step=0.25)",
    "optimizer.weight_decay": "choice(0.0, 1e-4, 1e-3)",
    "trainer.max_epochs": "range(1, 8)",
}


def _flags(sampler: Any) -> dict[str, Any]:
    return {
        "multivariate": sampler._multivariate,  # noqa: SLF001
        "group": sampler._group,  # noqa: SLF001
        "constant_liar": sampler._constant_liar,  # noqa: SLF001
    }


def test_the_tpe_sampler_gets_its_flags_from_config_not_from_optunas_defaults():
    conf = OmegaConf.load(ROOT / "conf" / "hydra" / "sweeper" / "optuna_study.yaml")
    assert {k: conf.sampler[k] for k in TPE_FLAGS} == TPE_FLAGS
    stated = OmegaConf.to_container(conf.sampler)
    assert _flags(build_sampler(stated, SPACE, 0)) == TPE_FLAGS  # Optuna 5 alone: None, True
    assert _flags(build_sampler({"name": "tpe"}, SPACE, 0)) == TPE_FLAGS
    chosen = {"name": "tpe", "multivariate": True, "group": True, "constant_liar": True}
    assert _flags(build_sampler(chosen, SPACE, 0)) == {k: True for k in TPE_FLAGS}
    # Each trial's own sampler (per-trial seeding) is built with them too.
    study = optuna.create_study()
    study.sampler = search_sampler(chosen, SPACE, 0)
    trial = study.ask()
    assert _flags(study.sampler._of(trial)) == {k: True for k in TPE_FLAGS}  # noqa: SLF001


@pytest.mark.parametrize(
    ("sampler", "expected"),
    [
        ({"name": "tpe", "multivariate": "yes"}, "sampler.multivariate=yes: give true or false"),
        ({"name": "tpe", "group": True}, "group=true needs sampler.multivariate=true"),
        ({"name": "random", "constant_liar": True}, "constant_liar=true is a flag of TPE"),
    ],
)
def test_a_flag_that_cannot_be_set_is_one_line(sampler: dict[str, Any], expected: str):
    with pytest.raises(ConfigError, match=expected):
        check_search(sampler, {"name": "none"}, SPACE)


def test_a_resumed_study_with_other_flags_or_directions_is_refused():
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize")
    # A study made before the settings were kept has only Optuna's own directions.
    check_settings(study, search_settings(["maximize"], None, {"name": "tpe"}), "db")
    study.tell(study.ask(), 0.5)
    check_settings(study, search_settings(["maximize"], None, {"name": "tpe"}), "db")
    with pytest.raises(ConfigError) as refused:
        check_settings(study, search_settings(["maximize"], None, {"multivariate": True}), "db")
    assert (
        "study 's' in db was run with other search settings: hydra.sweeper.sampler.multivariate "
        "(study: false, now: true); run with the study's settings" in str(refused.value)
    )
    # Optuna itself loads a study with its old directions, whatever is asked: compared here.
    again = optuna.create_study(
        study_name="s", storage=storage, directions=["maximize", "minimize"], load_if_exists=True
    )
    both = search_settings(["maximize", "minimize"], ["val/acc", "val/loss"], {})
    with pytest.raises(ConfigError, match=r"direction \(study: \[maximize\], now: \[maximize, min"):
        check_settings(again, both, "db")


def _draws(sampler: dict[str, Any], space: dict[str, str], n: int) -> list[tuple[Any, ...]]:
    """`n` trials of a search seeded 0 with `sampler`, each told a fixed function of its draw."""
    study = optuna.create_study(direction="maximize")
    study.sampler = search_sampler(sampler, space, 0)
    distributions = search_space(space)
    drawn = []
    for _ in range(n):
        trial = study.ask()
        point = {k: suggest(trial, k, d) for k, d in distributions.items()}
        score = -abs(point["model.net.dropout"] - 0.25) - abs(point["trainer.max_epochs"] - 3)
        study.tell(trial, score)
        drawn.append(tuple(round(v, 12) if isinstance(v, float) else v for v in point.values()))
    return drawn


# Drawn with Optuna 4.5.0 and 5.1.0 alike (seed 0).
RANDOM = [
    (0.00404387801, 0.25, 0.001, 5),
    (0.083113036921, 0.25, 0.0, 6),
    (0.004897135317, 0.0, 0.0, 1),
    (0.002738548776, 0.5, 0.0001, 6),
]
CMAES = [
    (0.00404387801, 0.25, 2),
    (0.083113036921, 0.25, 8),
    (0.002202855241, 0.25, 7),
    (0.000146739783, 0.25, 4),
    (0.004714521079, 0.0, 3),
]


def test_one_seed_draws_the_same_trials_on_optuna_4_5_and_5():
    """Random search and TPE's start-up trials. TPE's model-based draws after its start-up
    differ between Optuna < 4.9 and >= 4.9 (its Parzen estimator's kernel widths changed),
    which no flag restores: docs/pages/sweeps.md says so."""
    assert _draws({"name": "random"}, SPACE, 4) == RANDOM
    assert _draws({"name": "tpe", "n_startup_trials": 4}, SPACE, 4) == RANDOM


@pytest.mark.slow  # CMA-ES's first use: about 1.2 s
def test_one_seed_draws_the_same_cmaes_trials_on_optuna_4_5_and_5():
    numeric = {k: v for k, v in SPACE.items() if "choice" not in v}
    assert _draws({"name": "cmaes", "n_startup_trials": 2}, numeric, 5) == CMAES
