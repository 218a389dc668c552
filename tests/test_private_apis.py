"""No private name of Hydra, OmegaConf, Lightning, W&B, Optuna, submitit or torch is used outside
src/research/compat.py, where each private use has a test naming the library and version when it
moves (tests/test_compat.py).

The scan reads src/ with `ast` and finds: imports from a private module or of a private name of
those libraries; dotted paths into their private modules written as strings (`_target_`s);
private attributes reached through a name imported from them (`ConfigSource._get_header_dict`);
the private attributes compat.py reaches, and the internals of OmegaConf nodes and Lightning's
Trainer, on any object (`node._is_none()`, `getattr(trainer, "_results")`); in a class built on
one of their classes, a private attribute of `self` the class never sets (one it inherits), and
a private method it defines over one of the base's.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src"
COMPAT = SRC / "research" / "compat.py"
THIRD_PARTY = (
    "hydra",
    "hydra_plugins.hydra_submitit_launcher",
    "omegaconf",
    "lightning",
    "lightning_fabric",
    "pytorch_lightning",
    "torchmetrics",
    "wandb",
    "optuna",
    "submitit",
    "torch",
)
# Internals that code walking an OmegaConf node or a Lightning Trainer tends to reach, with or
# without knowing the object's type; compat.py's own uses are added to them.
KNOWN_PRIVATE = frozenset(
    {
        "_is_none",
        "_is_missing",
        "_is_interpolation",
        "_get_node",
        "_get_child",
        "_get_full_key",
        "_get_flag",
        "_set_flag",
        "_value",
        "_content",
        "_metadata",
        "_parent",
        "_resolve_with_default",
        "_accelerator_connector",
        "_callback_connector",
        "_checkpoint_connector",
        "_data_connector",
        "_logger_connector",
        "_results",
    }
)
# The names of calls that read an attribute named by a string.
BY_NAME = ("getattr", "setattr", "hasattr", "delattr")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _third_party(module: str) -> bool:
    return any(module == top or module.startswith(f"{top}.") for top in THIRD_PARTY)


def _private_path(text: str) -> bool:
    """`text` is a dotted path into a library above with a private part."""
    parts = text.split(".")
    return (
        len(parts) > 1
        and all(part.isidentifier() for part in parts)
        and _third_party(text)
        and any(map(_private, parts))
    )


def _imported(nodes: list[ast.AST]) -> dict[str, str]:
    """Each name a module (its `nodes`) binds to one of the libraries, with the dotted path it
    stands for."""
    names = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _third_party(alias.name):
                    local = alias.asname or alias.name.split(".")[0]
                    names[local] = alias.name if alias.asname else local
        elif (
            isinstance(node, ast.ImportFrom) and not node.level and _third_party(node.module or "")
        ):
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _is_self(node: ast.expr) -> bool:
    """`self`, `cls` or `super()`."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _set_in(cls: ast.ClassDef) -> set[str]:
    """The attributes a class body defines or assigns (on `self` or at class level)."""
    found = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute):
                    found.add(part.attr)
                elif isinstance(part, ast.Name):
                    found.add(part.id)
    return found


def third_party_bases(cls: ast.ClassDef, imported: dict[str, str]) -> list[str]:
    """The dotted paths of `cls`'s bases that are classes of the libraries above."""
    paths = []
    for base in cls.bases:
        text = ast.unparse(base)
        head, _, rest = text.partition(".")
        if head in imported:
            paths.append(".".join(filter(None, (imported[head], rest))))
    return paths


def private_uses(source: str, known: frozenset[str] = KNOWN_PRIVATE) -> list[tuple[int, str]]:
    """(line, what) of each private use of the libraries above that `source` makes."""
    nodes = list(ast.walk(ast.parse(source)))
    imported = _imported(nodes)
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _private_path(alias.name):
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if not _third_party(node.module):
                continue
            for alias in node.names:
                if _private_path(f"{node.module}.{alias.name}"):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _private_path(node.value):
                found.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            root = _root(node)
            through_import = isinstance(root, ast.Name) and root.id in imported
            if through_import or (node.attr in known and not _is_self(node.value)):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in BY_NAME and len(node.args) > 1:
                name = node.args[1]
                if isinstance(name, ast.Constant) and name.value in known:
                    found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ClassDef) and third_party_bases(node, imported):
            for method in node.body:
                if isinstance(method, ast.FunctionDef) and method.name in known:
                    found.append((method.lineno, f"{node.name}.{method.name} (an override)"))
            own = _set_in(node)
            for use in ast.walk(node):
                if (
                    isinstance(use, ast.Attribute)
                    and _private(use.attr)
                    and _is_self(use.value)
                    and use.attr not in own
                ):
                    found.append((use.lineno, f"{ast.unparse(use)} (inherited by {node.name})"))
    return sorted(set(found))


def _resolve(path: str) -> object:
    """The object a dotted path names, importing its longest module prefix."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise ImportError(path)


def private_overrides(source: str) -> list[tuple[int, str]]:
    """(line, what) of each private method that a class built on a library's class defines over
    one of that class's own (the libraries are imported to find out)."""
    nodes = list(ast.walk(ast.parse(source)))
    imported = _imported(nodes)
    found = []
    for cls in nodes:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = [
            node
            for node in cls.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _private(node.name)
        ]
        for base in third_party_bases(cls, imported) if methods else []:
            resolved = _resolve(base)
            for method in methods:
                if hasattr(resolved, method.name):
                    found.append((method.lineno, f"{cls.name}.{method.name} overrides {base}"))
    return found


def _sources() -> Iterator[tuple[Path, str]]:
    for path in sorted(SRC.rglob("*.py")):
        if path != COMPAT:
            yield path, path.read_text(encoding="utf-8")


def compats_private_attributes() -> frozenset[str]:
    """The private attribute names compat.py reaches: a use of one elsewhere is one it should
    wrap."""
    tree = ast.parse(COMPAT.read_text(encoding="utf-8"))
    attributes = (node for node in ast.walk(tree) if isinstance(node, ast.Attribute))
    return frozenset(node.attr for node in attributes if _private(node.attr))


def test_no_private_name_of_the_engines_is_used_outside_compat():
    known = KNOWN_PRIVATE | compats_private_attributes()
    found = [
        f"{path.relative_to(SRC)}:{line}: {what}"
        for path, source in _sources()
        for line, what in private_uses(source, known)
    ]
    assert not found, "private APIs outside research/compat.py:\n" + "\n".join(found)


@pytest.mark.slow  # imports the libraries to look in their classes: ~10 s alone
def test_no_class_overrides_a_private_method_of_the_engines_outside_compat():
    found = [
        f"{path.relative_to(SRC)}:{line}: {what}"
        for path, source in _sources()
        for line, what in private_overrides(source)
    ]
    assert not found, "private overrides outside research/compat.py:\n" + "\n".join(found)


def test_the_scan_finds_each_kind_of_private_use():
    def uses(source: str) -> list[str]:
        return [what for _, what in private_uses(source)]

    assert uses("from hydra._internal.utils import get_args_parser") == [
        "from hydra._internal.utils import get_args_parser"
    ]
    assert uses("import torch._dynamo") == ["import torch._dynamo"]
    assert uses("from lightning.pytorch.strategies.launchers import _SubprocessScriptLauncher")
    assert uses("x = {'_target_': 'hydra._internal.core_plugins.basic_launcher.BasicLauncher'}")
    assert uses(
        "from hydra.plugins.config_source import ConfigSource\n"
        "header = ConfigSource._get_header_dict(text)"
    ) == ["ConfigSource._get_header_dict"]
    assert uses("import torch\nflag = torch._C._get_tracing_state()") == [
        "torch._C",
        "torch._C._get_tracing_state",
    ]
    assert uses("def f(node):\n    return node._is_none()") == ["node._is_none"]
    assert uses("def f(trainer):\n    return getattr(trainer, '_results')")
    inherited = (
        "from hydra.plugins.config_source import ConfigSource\n"
        "class Source(ConfigSource):\n"
        "    def path_of(self, name):\n"
        "        self._cache = {}\n"
        "        return self._normalize_file_name(name), self._cache\n"
    )
    assert uses(inherited) == ["self._normalize_file_name (inherited by Source)"]


def test_the_scan_leaves_public_and_own_names_alone():
    own = (
        "import torch\n"
        "from hydra.core.config_store import ConfigStore\n"
        "from lightning.pytorch.callbacks import Callback\n"
        "class Mine(Callback):\n"
        "    def __init__(self):\n"
        "        self._seen = 0\n"
        "    def _count(self):\n"
        "        self._seen += 1\n"
        "        return self._count, torch.__version__\n"
        "class Plain:\n"
        "    def f(self, index):\n"
        "        return self._helper(), index._decode_bytes()\n"
        "node = ConfigStore.instance().load('hydra/launcher/basic.yaml')\n"
        "text = 'hydra._internal is private'  # prose, not a path\n"
    )
    assert private_uses(own) == []


OVERRIDE = (
    "from lightning.pytorch.callbacks import ModelCheckpoint\n"
    "class Mine(ModelCheckpoint):\n"
    "    def _save_checkpoint(self, trainer, filepath):\n"
    "        pass\n"
    "    def _mine(self):\n"
    "        pass\n"
)


def test_the_scan_finds_every_use_compat_makes_were_it_elsewhere():
    known = KNOWN_PRIVATE | compats_private_attributes()
    found = {what for _, what in private_uses(COMPAT.read_text(encoding="utf-8"), known)}
    assert "from hydra._internal.utils import get_args_parser" in found
    assert "ConfigSource._get_header_dict" in found and "logger._experiment" in found
    assert "study._storage" in found and "callback._every_n_train_steps" in found
    assert "ModelCheckpointWithSaveHooks._save_checkpoint (an override)" in found
    assert [what for _, what in private_uses(OVERRIDE, known)] == [
        "Mine._save_checkpoint (an override)"
    ]


@pytest.mark.slow  # imports Lightning and Optuna
def test_the_import_scan_finds_a_private_override_it_was_not_told_of():
    assert private_overrides(OVERRIDE) == [
        (3, "Mine._save_checkpoint overrides lightning.pytorch.callbacks.ModelCheckpoint")
    ]
    found = {what for _, what in private_overrides(COMPAT.read_text(encoding="utf-8"))}
    assert "GridSampler._get_unvisited_grid_ids overrides optuna.samplers.GridSampler" in found
