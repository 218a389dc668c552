"""The storages a search accepts (database URLs, journal files), their passwords kept out of what
is shown and saved, and the configurable heartbeat grace."""

from __future__ import annotations

import os
import time
from pathlib import Path

import optuna
import pytest
from omegaconf import OmegaConf

from hydra_plugins.research_sweeper._heartbeat import ALIVE_ATTR, interval_for
from hydra_plugins.research_sweeper._storage import (
    COMMAND_ENV,
    STORAGE_ENV,
    _url,
    check_storage,
    keep_secret,
    open_storage,
    real_url,
    shown,
)
from hydra_plugins.research_sweeper._study import fail_abandoned, search_done
from research.config.errors import ConfigError

URL = "postgresql://alice:s3cr:et@db-host:5432/research"


def test_a_password_is_shown_masked_and_the_rest_of_the_url_kept():
    assert shown(URL) == "postgresql://alice:***@db-host:5432/research"
    assert shown("postgresql://alice@db-host/research") == "postgresql://alice@db-host/research"
    assert shown("sqlite:///logs/optuna/s.db") == "sqlite:///logs/optuna/s.db"
    assert shown(None) == "null"


def test_a_postgresql_url_without_a_driver_gets_the_one_the_sweep_extra_installs():
    # SQLAlchemy 2.0 (the newest for Python 3.10) would pick psycopg2, which is not installed.
    assert _url(URL).drivername == "postgresql+psycopg"
    assert _url(URL).password == "s3cr:et" and _url(URL).database == "research"
    assert _url("postgresql+psycopg2://a@h/d").drivername == "postgresql+psycopg2"
    assert _url("sqlite:///logs/s.db").drivername == "sqlite"


def test_keep_secret_masks_the_config_and_command_and_jobs_find_the_real_url(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv(COMMAND_ENV, f"research-train -m hydra.sweeper.storage={URL}")
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    config = OmegaConf.create(
        {
            "hydra": {
                "sweeper": {"storage": URL},
                "overrides": {"hydra": [f"hydra.sweeper.storage={URL}", "hydra.verbose=false"]},
            }
        }
    )
    OmegaConf.set_readonly(config.hydra, True)
    keep_secret(config, URL)
    saved = OmegaConf.to_yaml(config) + os.environ[COMMAND_ENV]
    assert "s3cr" not in saved and saved.count("alice:***@db-host") == 3
    assert real_url(config.hydra.sweeper.storage) == URL
    # Another storage in a job's config is left as it is.
    assert real_url("sqlite:///x.db") == "sqlite:///x.db"


def test_a_journal_file_holds_a_study_that_a_second_opener_sees(tmp_path: Path):
    url = f"journal://{tmp_path}/deep/er/study.log"
    study = optuna.create_study(study_name="s", storage=open_storage(url))
    study.tell(study.ask(), 1.0)
    again = optuna.load_study(study_name="s", storage=open_storage(url))
    assert [t.value for t in again.trials] == [1.0]
    assert (tmp_path / "deep" / "er" / "study.log").is_file()


def test_a_storage_file_in_an_unwritable_place_is_refused(tmp_path: Path):
    (tmp_path / "file").write_text("")
    for url in (f"journal://{tmp_path}/file/s.log", f"sqlite:///{tmp_path}/file/s.db"):
        with pytest.raises(ConfigError, match="cannot write the"):
            open_storage(url)


def test_a_storage_file_that_cannot_be_made_is_one_line(tmp_path: Path):
    # Under root /proc passes os.access, and making the folder or the file fails instead.
    for url in ("journal:///proc/nosuch.log", "sqlite:////proc/nosuch/s.db"):
        with pytest.raises(ConfigError, match=r"^hydra\.sweeper\.storage=.*: cannot [^\n]*$"):
            open_storage(url)


def test_checking_a_storage_writes_nothing(tmp_path: Path):
    for url in (f"sqlite:///{tmp_path}/a/s.db", f"journal://{tmp_path}/b/s.log"):
        check_storage(url)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigError, match="unknown storage scheme 'nosuchdb'"):
        check_storage("nosuchdb://host/db")


def test_the_heartbeat_grace_is_a_setting(tmp_path: Path):
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path / 'db'}")
    trial = study.ask()
    trial.set_user_attr(ALIVE_ATTR, time.time() - 3)
    fail_abandoned(study, grace_s=10)
    assert study.trials[0].state == optuna.trial.TrialState.RUNNING
    assert not search_done(study, 0)  # a running trial may yet need redrawing
    fail_abandoned(study, grace_s=2)
    assert study.trials[0].state == optuna.trial.TrialState.FAIL
    assert search_done(study, 0)
    assert interval_for(2) == 0.5 and interval_for(600) == 10
