"""Hydra's plugin scan registers the configs of its core plugins (`hydra/launcher=basic`,
`hydra/sweeper=basic`, ...) in the ConfigStore as it imports their modules, once per process on
Hydra 1.4. Hydra's suites restore its singletons after each case (`hydra_restore_singletons`):
were the scan first run inside a case, the restore would drop those configs for the cases after
it. So the scan runs once before them."""

from __future__ import annotations

import copy

import pytest
from hydra.core.plugins import Plugins
from hydra.version import VersionBase

from research.utils.engine_versions import hydra_14


@pytest.fixture(scope="package", autouse=True)
def _hydra_plugins_scanned() -> None:
    Plugins.instance()


# As collection found it: before any test ran a job.
FRESH_VERSION_BASE = copy.copy(VersionBase.instance())


@pytest.fixture(autouse=True)
def _version_base_unset() -> None:
    """Each case starts with no version base, as in a fresh process: a job run in this process
    before it (research.api.train, compose) set Hydra's process-wide version base, and the
    suites' apps, which give none, would then run with 1.3's defaults (no chdir into the job's
    folder, where the suites look for its log)."""
    if not hydra_14():  # 1.4 has one version base, its own
        VersionBase.set_instance(copy.copy(FRESH_VERSION_BASE))
