"""The dependency rule, checked: run ``python scripts/check_architecture.py`` (``make test`` does).

It reads every module of the project with ``ast`` (nothing is imported, so it needs no
database and no Django) and fails when

* an import -- at module level *or inside a function* -- goes against the layer order
  in ``LAYERS`` below (a lower layer never imports a higher one);
* two project modules import each other, directly or around a longer loop (a cycle);
* a pure module (``PURE``) imports Django, Celery, DRF or any Django-side package;
* a module takes a private name (``_name``) of another package's module: ``from kb.services
  import _check`` or ``services._check`` after ``from kb import services``. Packages meet at
  public names only (a module's own package may share its private helpers);
* one of two modules kept apart (``APART``) imports the other, in either direction: the search's
  retrieval and expansion meet only in the selector that runs them (``kb.search``).

docs/architecture.md explains the layers.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Bottom first.  A module may import its own layer and the layers below it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("policy", ("accounts.policy",)),
    ("ingestion", ("ingestion",)),
    ("audit", ("audit",)),
    ("accounts", ("accounts",)),
    ("audit API", ("audit.apis", "audit.serializers")),
    ("kb", ("kb",)),
    ("pipeline", ("pipeline",)),
    ("sources", ("sources",)),
    ("console", ("console",)),
    ("bulkhead", ("bulkhead",)),
    ("bench", ("bench",)),
]
# Pure: no Django, no Celery, no database; importable and testable on their own.
PURE = ("accounts.policy", "ingestion")
FORBIDDEN_IN_PURE = ("django", "rest_framework", "celery", "kombu", "drf_spectacular", "psycopg", "pgvector")
# Pairs of modules where neither may import the other (nor a module inside it).
APART: list[tuple[str, str]] = [("kb.retrieval", "kb.expansion")]
PACKAGES = ("accounts", "audit", "ingestion", "kb", "pipeline", "sources", "console", "bench", "bulkhead")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            modules[module_name(path, root)] = path
    return modules


def _matches(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer_of(name: str) -> int | None:
    # The most specific prefix wins (accounts.policy before accounts).
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if _matches(name, prefix) and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    return None if best is None else best[0]


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, imported name) for every import in the file, wherever it stands."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.append((node.lineno, submodule if submodule in modules else target))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _package(module: str) -> str:
    return module.split(".")[0]


def private_imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, "module._name") for each private name of another package's module that the file takes:
    imported by name, or read as an attribute of a module it imported."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    bound: dict[str, str] = {}  # local name -> the other package's module it holds
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                module = resolve(alias.name, modules)
                if module is not None and _package(module) != _package(name):
                    if alias.asname:
                        bound[alias.asname] = module
                    if module == alias.name and "." not in alias.name:
                        bound[alias.name] = module
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            module = resolve(target, modules)
            if module is None or _package(module) == _package(name):
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in modules:
                    bound[alias.asname or alias.name] = submodule
                if _private(alias.name):
                    found.append((node.lineno, f"{submodule}"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in bound):
            found.append((node.lineno, f"{bound[node.value.id]}.{node.attr}"))
    return found


def resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The project module an import loads (its longest existing prefix), or None."""
    parts = target.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def check(root: Path = ROOT) -> list[str]:
    modules = project_modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    problems: list[str] = []
    for name, path in modules.items():
        rel = path.relative_to(root)
        for line, private in private_imports(name, path, modules):
            problems.append(f"{rel}:{line}: {name} takes the private name {private} of another package")
        own_layer = layer_of(name)
        pure = any(_matches(name, prefix) for prefix in PURE)
        for line, target in imports_of(name, path, modules):
            top = target.split(".")[0]
            if pure and top in FORBIDDEN_IN_PURE:
                problems.append(f"{rel}:{line}: pure module {name} imports {target}")
            imported = resolve(target, modules)
            if imported is None or imported == name:
                continue
            graph[name].add(imported)
            for one, other in APART:
                for mine, theirs in ((one, other), (other, one)):
                    if _matches(name, mine) and _matches(imported, theirs):
                        problems.append(f"{rel}:{line}: {name} imports {imported}; the two are kept apart (APART)")
            if pure and not any(_matches(imported, prefix) for prefix in PURE):
                problems.append(f"{rel}:{line}: pure module {name} imports {imported}, which is not pure")
            their_layer = layer_of(imported)
            if own_layer is not None and their_layer is not None and their_layer > own_layer:
                problems.append(
                    f"{rel}:{line}: {name} (layer {LAYERS[own_layer][0]}) imports {imported} "
                    f"(layer {LAYERS[their_layer][0]}, above it)"
                )
    problems = list(dict.fromkeys(problems))  # one line per import, however many names it takes
    for cycle in find_cycles(graph):
        problems.append("import cycle among: " + ", ".join(cycle))
    return problems


def main() -> int:
    problems = check()
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} architecture problem(s); see the layers in docs/architecture.md", file=sys.stderr)
        return 1
    print(f"architecture: {len(project_modules())} modules, layers respected, no import cycle, pure modules pure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
