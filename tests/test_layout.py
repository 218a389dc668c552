"""The layout shows the architecture: each folder of src/research/ is one role, and imports run one
way, from the entry points down to the foundations (any import, lazy ones inside functions too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src"
# Lowest first: a module may import its own layer and the layers below it, never above.
LAYERS = [
    {"utils", "compat"},
    {"config"},
    {"tracking"},
    {"retrieval", "optim", "losses", "models", "data", "tasks"},
    {"callbacks"},
    {"launch", "ablation"},
    {"run", "reports"},
    {"cli", "api"},
]
LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}
# What the plugins (loaded by Hydra, named in configs) may use of the library.
PLUGIN_MAY_IMPORT = {"utils", "compat", "config", "tracking"}
# Boundaries inside the component layer (DESIGN.md): who must not know whom.
NOT_KNOWN = {
    "models": {"lightning", "research.tasks", "research.data"},
    "tasks": {"research.data"},
    "data": {"research.models", "research.tasks"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """Every module of ours `name` imports, wherever the import statement is."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            submodules = {f"{base}.{a.name}" for a in node.names} & MODULES.keys()
            # `from package import submodule` depends on the submodule, not on the package's
            # __init__ (which any import of a submodule runs anyway)
            found |= submodules if len(submodules) == len(node.names) else {base, *submodules}
    return {m for m in found if m in MODULES and m != name}


def _part(module: str) -> str | None:
    """The folder (or loose module) of research a module belongs to."""
    parts = module.split(".")
    return parts[1] if parts[0] == "research" and len(parts) > 1 else None


def test_research_has_no_loose_module_but_the_api_and_compat():
    loose = {p.stem for p in (SRC / "research").glob("*.py")}
    assert loose == {"__init__", "api", "compat"}
    folders = {p.name for p in (SRC / "research").iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(LAYER_OF) - {"compat", "api"}


@pytest.mark.parametrize("name", sorted(m for m in MODULES if _part(m)))
def test_imports_run_one_way(name: str):
    own = LAYER_OF[_part(name)]  # type: ignore[index]
    for imported in _imports(name):
        part = _part(imported)
        assert not imported.startswith("hydra_plugins"), (
            f"{name} imports the Hydra plugin {imported}; name it in a config instead"
        )
        if part is not None:
            assert LAYER_OF[part] <= own, f"{name} imports {imported}, a layer above it"


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("hydra_plugins")))
def test_plugins_use_only_the_foundations(name: str):
    for imported in _imports(name):
        part = _part(imported)
        assert part is None or part in PLUGIN_MAY_IMPORT, f"{name} imports {imported}"


@pytest.mark.parametrize("component", sorted(NOT_KNOWN))
def test_components_keep_their_boundaries(component: str):
    for name, path in MODULES.items():
        if _part(name) != component:
            continue
        tree = ast.parse(path.read_text())
        named = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        named |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        for forbidden in NOT_KNOWN[component]:
            assert not any(m == forbidden or m.startswith(forbidden + ".") for m in named), (
                f"{name} imports {forbidden}"
            )


def test_no_import_cycle():
    graph = {name: _imports(name) - {"research"} for name in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    assert not cycles, f"import cycles: {cycles}"
