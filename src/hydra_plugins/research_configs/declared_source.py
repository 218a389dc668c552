"""research's conf/ as Hydra reads it: a file config source that completes each group option from
the declarations.

YAML files hold what differs from a declaration (a group's choice, an experiment's settings).
This source reads them like Hydra's file source and then gives every node with a `_target_` each
declared field that neither the file nor the files its defaults list extends holds, at the
declared default. So the composed config is complete: `--cfg job` prints every value, the run dir
saves every value, and `optimizer.weight_decay=0.1` overrides a value no YAML spells out.
Overlays in the global package (experiments, debug, launchers, searches) are read as written.

Hydra picks the source by the scheme of a search-path entry; `ResearchSearchPath` switches the
entry of research's own conf/ folder (and only that one) to this source.
"""

import functools
from pathlib import Path
from typing import Any

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import DictConfig, OmegaConf

from research import compat

SCHEME = "research"


def _written(file: Path) -> DictConfig:
    cfg = OmegaConf.load(file)  # a YAML syntax error then names the file
    return cfg if isinstance(cfg, DictConfig) else OmegaConf.create({})


def _extended(folder: Path, config_path: str, body: DictConfig) -> dict[str, Any]:
    """What the group files in `body`'s defaults list spell out for each node of `body`, as
    written (a value they only get from their own declaration is not theirs to give: the
    target here may declare another default)."""
    below: dict[str, Any] = {}
    group = config_path.rpartition("/")[0]
    for entry in body.get("defaults") or []:
        if not isinstance(entry, str) or entry == "_self_" or entry.startswith("/"):
            continue
        name, _, package = entry.partition("@")
        path = f"{group}/{name}" if group else name
        file = folder / f"{path}.yaml"
        if not file.is_file():
            continue
        written = _written(file)
        layer = OmegaConf.merge(_extended(folder, path, written), written)
        layer.pop("defaults", None)
        merged = OmegaConf.merge(below, {package: layer} if package else layer)
        below = OmegaConf.to_container(merged, resolve=False)  # type: ignore[assignment]
    return below


@functools.lru_cache(maxsize=1024)
def _completed(folder: str, config_path: str, version: tuple[int, int]) -> tuple[Any, dict]:
    """A file's contents completed from the declarations, and its header. Hydra loads each file
    several times per composition, so this is cached per file version (mtime, size)."""
    from research.config.validate import fill_declared

    file = Path(folder) / f"{config_path}.yaml"
    header = compat.hydra_config_header(file.read_text(encoding="utf-8")[:512])
    cfg = OmegaConf.load(file)  # a YAML syntax error then names the file
    if isinstance(cfg, DictConfig) and header.get("package") != "_global_":
        fill_declared(cfg, _extended(Path(folder), config_path, cfg))
    return OmegaConf.to_container(cfg, resolve=False), header


class DeclaredConfigSource(ConfigSource):
    """A folder of YAML configs, each group option completed from its declarations."""

    def __init__(self, provider: str, path: str) -> None:
        if "://" not in path:
            path = f"{SCHEME}://{path}"
        super().__init__(provider=provider, path=path)

    @staticmethod
    def scheme() -> str:
        return SCHEME

    def _file(self, config_path: str) -> Path:
        return Path(self.path) / compat.hydra_config_file_name(config_path)

    def load_config(self, config_path: str) -> ConfigResult:
        file = self._file(config_path)
        if not file.is_file():
            raise ConfigLoadError(f"Config not found : {file}")
        stat = file.stat()
        name = str(file.relative_to(self.path).with_suffix(""))
        body, header = _completed(self.path, name, (stat.st_mtime_ns, stat.st_size))
        return ConfigResult(
            config=OmegaConf.create(body),
            path=f"{SCHEME}://{self.path}",
            provider=self.provider,
            header=dict(header),
        )

    def available(self) -> bool:
        return self.is_group("")

    def is_group(self, config_path: str) -> bool:
        return (Path(self.path) / config_path).is_dir()

    def is_config(self, config_path: str) -> bool:
        return self._file(config_path).is_file()

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        files: list[str] = []
        for entry in (Path(self.path) / config_path).iterdir():
            path = f"{config_path}/{entry.name}" if config_path else entry.name
            compat.hydra_list_config_entry(self, files, path, entry.name, results_filter)
        return sorted(set(files))


class ResearchSearchPath(SearchPathPlugin):
    """Reads research's own conf/ folder through `DeclaredConfigSource`; other apps' folders
    are left to Hydra's file source."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from research.config.paths import config_dir

        ours = str(config_dir())
        for element in search_path.get_path():
            if element.path in (ours, f"file://{ours}"):
                element.path = f"{SCHEME}://{ours}"
