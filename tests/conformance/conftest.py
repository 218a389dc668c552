"""Hydra's plugin scan registers the configs of its core plugins (`hydra/launcher=basic`,
`hydra/sweeper=basic`, ...) in the ConfigStore as it imports their modules, once per process on
Hydra 1.4. Hydra's suites restore its singletons after each case (`hydra_restore_singletons`):
were the scan first run inside a case, the restore would drop those configs for the cases after
it. So the scan runs once before them."""

from __future__ import annotations

import pytest
from hydra.core.plugins import Plugins


@pytest.fixture(scope="package", autouse=True)
def _hydra_plugins_scanned() -> None:
    Plugins.instance()
