"""The package's structure measured from its code: modules per folder, import floors, circles, sizes.

An edge ``a -> b`` is an import of module ``b`` written in module ``a``: at module level, inside a
function (a lazy import is still a dependency) or under ``if TYPE_CHECKING:`` (a module that names
another's types depends on it; ``--runtime-only`` leaves those out). ``from package import name``
counts as an import of ``package.name`` when that is a module, else of ``package``. The implicit
import of a parent package that Python performs is not an edge. Floors are the length of the
longest chain of imports once circles are collapsed; a circle is a strongly connected component of
more than one module. An upward arrow is an import, from inside a folder, of that folder's (or an
enclosing folder's) ``__init__``: the front door that stands above the modules behind it. The
declared floors (:data:`FLOORS`) put each top-level unit of the package (a top-level module or
folder) on a floor, bottom to top; an import runs up a floor when its module stands on a lower
floor than its target (:func:`up_a_floor`). The extension points are the places
docs/architecture.md says a new backend, strategy, CLI command, worker kind, report format or
benchmark touches; the command counts the existing files each one edits.
``tests/test_architecture.py`` holds the package to its limits; this command prints the measures::

    python -m benchmarks import-graph [--package pytest_autotune] [--chain] [--runtime-only]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "EXTENSION_POINTS",
    "FLOORS",
    "Structure",
    "floor_numbers",
    "import_graph",
    "imports_of",
    "measure",
    "strongly_connected",
    "top_level_unit",
    "unplaced_units",
    "up_a_floor",
    "upward_arrows",
]

ROOT = Path(__file__).resolve().parents[2]

#: What adding each kind of thing edits: the existing files (relative to the repository root); the
#: new module or folder itself is not counted. docs/architecture.md's "Extension points" says how.
EXTENSION_POINTS: dict[str, tuple[str, ...]] = {
    "backend": ("pytest_autotune/backends/registry.py",),
    "strategy": ("pytest_autotune/strategies/registry.py",),
    "CLI command": ("pytest_autotune/commands/__init__.py", "docs/reference/commands.md"),
    "worker kind": (
        "pytest_autotune/plugin/workers/protocol.py",
        "pytest_autotune/plugin/workers/launch.py",
        "pytest_autotune/plugin/__init__.py",
    ),
    # one line in the registry; a format whose option names a file adds its row (kind "output")
    "report format": (
        "pytest_autotune/plugin/report/formats/registry.py",
        "pytest_autotune/plugin/option_table.py",
    ),
    "benchmark": ("docs/benchmarks.md",),
}

#: The floors of each package, bottom first: every top-level unit (a module directly in the package,
#: or a folder: its ``__init__`` and everything in it) stands on one floor, and imports run down or
#: stay on their floor, never up (:func:`up_a_floor`; ``__init__`` is the package's own front door).
#: Chosen from the import graph as it is (``python -m benchmarks import-graph`` prints it):
#:
#: 0. the foundations everything reads, importing no other unit: option values, warning types, a
#:    trial's outcome, the lazy exports, the reader of input files;
#: 1. ``space``, which needs only those;
#: 2. ``strategies`` (search a space) and ``backends`` (devices; the launch limits are constraints);
#: 3. ``timing`` (its default timer asks the loaded backends) and ``replay`` (a Kernel Tuner cache as
#:    a space and an objective);
#: 4. ``policy`` (budgets and tolerances in ``timing``'s units) and ``entry`` (it keeps a
#:    ``timing`` history);
#: 5. ``store`` (the file of entries) and ``tuning`` (the tuner, above the policy it validates);
#:    the one import between them is ``store.history_record``'s of ``tuning.trials``, for the type of
#:    the result a history is built from (an import within a floor is allowed);
#: 6. what a user's code and the plugin call: ``api`` (the decorators build a tuning spec),
#:    ``fixture``, ``recovery`` (writes through ``store``) and ``runtime`` (reads it);
#: 7. ``testing`` (helpers over the API and the fixture) and ``commands`` (read the store, export
#:    through ``runtime``);
#: 8. ``plugin``, the pytest glue over all of the above (inside it, only the front-door rule holds:
#:    its concerns import each other both ways, ``report`` <-> ``compare`` and the session <->
#:    ``compare``, ``workers``, ``report``, so they form no floors of their own yet);
#: 9. the package's ``__init__`` (its public names) and ``__main__`` (the commands).
FLOORS: dict[str, tuple[tuple[str, ...], ...]] = {
    "pytest_autotune": (
        ("values", "warning_types", "outcome", "_lazy", "input_file"),
        ("space",),
        ("strategies", "backends"),
        ("timing", "replay"),
        ("policy", "entry"),
        ("store", "tuning"),
        ("api", "fixture", "recovery", "runtime"),
        ("testing", "commands"),
        ("plugin",),
        ("__init__", "__main__"),
    ),
}


def _module_name(package_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, *, annotations: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement (those under ``if TYPE_CHECKING:`` only with ``annotations``)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if not annotations and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(
    package_dir: Path, *, annotations: bool = True
) -> tuple[dict[str, set[str]], dict[str, int]]:
    """Edges between the package's modules, and each module's line count.

    With ``annotations`` (the default) imports under ``if TYPE_CHECKING:`` count too: they do not
    run, but a module that names another's types in its signatures still depends on it.
    """
    paths = {_module_name(package_dir, p): p for p in sorted(package_dir.rglob("*.py"))}
    edges: dict[str, set[str]] = {name: set() for name in paths}
    lines: dict[str, int] = {}
    for name, path in paths.items():
        text = path.read_text(encoding="utf-8")
        lines[name] = text.count("\n")
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(text), annotations=annotations):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                targets = [f"{module}.{alias.name}" for alias in node.names]
            for target in targets:
                while target and target not in paths:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges, lines


def _front_doors(package_dir: Path) -> set[str]:
    return {_module_name(package_dir, p) for p in package_dir.rglob("__init__.py")}


def upward_arrows(edges: dict[str, set[str]], front_doors: set[str]) -> list[tuple[str, str]]:
    """The imports of a folder's front door (its ``__init__``) from inside that folder."""
    return sorted(
        (module, target)
        for module, targets in edges.items()
        for target in targets
        if target in front_doors and module.startswith(f"{target}.")
    )


def top_level_unit(module: str) -> str:
    """The top-level unit ``module`` belongs to: the module or folder right under the package
    (``pkg.space.chain`` -> ``space``, ``pkg.values`` -> ``values``), ``__init__`` for the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor_numbers(floors: Sequence[Sequence[str]]) -> dict[str, int]:
    """Each unit's floor (0 at the bottom)."""
    return {unit: number for number, units in enumerate(floors) for unit in units}


def unplaced_units(edges: dict[str, set[str]], floors: Sequence[Sequence[str]]) -> list[str]:
    """The top-level units of the graph that stand on no floor."""
    placed = floor_numbers(floors)
    return sorted({top_level_unit(module) for module in edges} - set(placed))


def up_a_floor(
    edges: dict[str, set[str]], floors: Sequence[Sequence[str]]
) -> list[tuple[str, str, int, int]]:
    """Every import whose module stands on a lower floor than its target: (module, target, the
    module's floor, the target's floor). Units on no floor are left out (:func:`unplaced_units`)."""
    number = floor_numbers(floors)
    found = []
    for module, targets in edges.items():
        below = number.get(top_level_unit(module))
        for target in targets:
            above = number.get(top_level_unit(target))
            if below is not None and above is not None and below < above:
                found.append((module, target, below, above))
    return sorted(found)


def imports_of(package_dir: Path, other: str) -> list[tuple[str, str]]:
    """Every import of package ``other`` (or a module in it) written in the package: (module, target)."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        name = _module_name(package_dir, path)
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")), annotations=True):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                targets = [node.module or ""] if node.level == 0 else []
            found += [(name, t) for t in targets if t == other or t.startswith(f"{other}.")]
    return found


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
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
                    components.append(sorted(component))
    return components


@dataclass(frozen=True)
class Structure:
    """The measures of one package."""

    modules: int
    top_level_modules: int
    floors: int
    longest_chain: tuple[str, ...]
    circles: tuple[tuple[str, ...], ...]
    largest: tuple[str, int]
    per_folder: dict[str, int]
    upward: tuple[tuple[str, str], ...]
    up_a_floor: tuple[tuple[str, str, int, int], ...] = ()
    unplaced: tuple[str, ...] = ()


def measure(package_dir: Path, *, annotations: bool = True) -> Structure:
    """Measure the package in ``package_dir`` (a folder holding ``__init__.py``)."""
    edges, lines = import_graph(package_dir, annotations=annotations)
    components = strongly_connected(edges)
    owner = {m: i for i, component in enumerate(components) for m in component}
    # Tarjan emits components in reverse topological order: dependencies first.
    height: dict[int, int] = {}
    below: dict[int, int | None] = {}
    for i, component in enumerate(components):
        targets = {owner[t] for m in component for t in edges[m]} - {i}
        best = max(targets, key=lambda t: height[t], default=None)
        height[i] = 1 + (height[best] if best is not None else 0)
        below[i] = best
    top = max(height, key=lambda i: height[i])
    chain: list[str] = []
    current: int | None = top
    while current is not None:
        chain.append(components[current][0])
        current = below[current]
    per_folder: dict[str, int] = defaultdict(int)
    for path in package_dir.rglob("*.py"):
        if path.name != "__init__.py":  # a package's __init__ is its folder, not a module in it
            per_folder[_module_name(package_dir, path.parent)] += 1
    root = package_dir.name
    floors = FLOORS.get(root, ())
    return Structure(
        modules=len(edges),
        top_level_modules=per_folder.get(root, 0),
        floors=height[top],
        longest_chain=tuple(chain),
        circles=tuple(tuple(c) for c in components if len(c) > 1),
        largest=max(lines.items(), key=lambda item: item[1]),
        per_folder=dict(sorted(per_folder.items())),
        upward=tuple(upward_arrows(edges, _front_doors(package_dir))),
        up_a_floor=tuple(up_a_floor(edges, floors)),
        unplaced=tuple(unplaced_units(edges, floors)) if floors else (),
    )


NAME = "import-graph"  # python -m benchmarks import-graph
QUESTION = "How is the code laid out: floors, circles, upward arrows, layers, modules per folder?"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the measures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="pytest_autotune", help="package folder under the root")
    parser.add_argument("--chain", action="store_true", help="print the longest import chain")
    parser.add_argument(
        "--runtime-only", action="store_true", help="leave out imports under `if TYPE_CHECKING:`"
    )
    args = parser.parse_args(argv)
    structure = measure(ROOT / args.package, annotations=not args.runtime_only)
    print(f"modules                {structure.modules}")
    print(f"top-level modules      {structure.top_level_modules}")
    print(f"floors                 {structure.floors}")
    print(f"import circles         {len(structure.circles)}")
    for circle in structure.circles:
        print(f"  circle: {' <-> '.join(circle)}")
    print(f"largest module         {structure.largest[0]} ({structure.largest[1]} lines)")
    print(f"upward arrows          {len(structure.upward)}")
    for module, target in structure.upward:
        print(f"  up: {module} -> {target}")
    floors = FLOORS.get(args.package, ())
    if floors:
        print("declared floors (top first):")
        for number, units in reversed(list(enumerate(floors))):
            print(f"  {number:>2}  {', '.join(units)}")
        print(f"imports up a floor     {len(structure.up_a_floor)}")
        for module, target, below, above in structure.up_a_floor:
            print(f"  up a floor: {module} (floor {below}) -> {target} (floor {above})")
        if structure.unplaced:
            print(f"units on no floor      {', '.join(structure.unplaced)}")
    folder, most = max(structure.per_folder.items(), key=lambda item: item[1])
    print(f"largest folder         {folder} ({most} modules)")
    print("modules per folder:")
    for folder, count in structure.per_folder.items():
        print(f"  {folder:40} {count}")
    print("files an extension point edits (besides its new module):")
    for point, paths in EXTENSION_POINTS.items():
        print(f"  {point:20} {len(paths)}  {', '.join(paths)}")
    if args.chain:
        print("longest chain (importer first):")
        for name in structure.longest_chain:
            print(f"  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
