"""The package's import graph: no cycles, and no layer imports one above it.

Every module under `jaxcontrol/` is parsed with `ast` (nothing is imported), its
imports read wherever they are written: at module level and inside functions, classes
and conditionals alike, except under `if TYPE_CHECKING:` (never run). Relative imports
are resolved against the module's package.

The graph's nodes are modules; a package is its `__init__`. Its edges are what each
import makes Python execute:

  * `import a.b.c` and `from a.b import c`, where `a.b.c` is a module: an edge to
    `a.b.c`, and one to each package on the way (`a`, `a.b`) whose `__init__` runs
    for it;
  * `from a.b import name`, where `name` is no module: an edge to `a.b`, whose
    `__init__` must have defined `name`.

A package that encloses the importing module is left out of the "on the way" edges:
Python has started its `__init__` before the module itself (importing
`jaxcontrol.core` from `jaxcontrol/parity/measures.py` needs no more of
`jaxcontrol/__init__.py` than loading `measures` already did). Taking a *name* from an
enclosing package (`from jaxcontrol import load`, or `import jaxcontrol` to call
`jaxcontrol.load`, inside `jaxcontrol/`) is an edge to it, so it counts when it truly
closes a cycle: the name exists only if that `__init__` got past its own imports
first. Function-level imports count too: a call can come while the package is still
importing (the Gymnasium registration that `import jaxcontrol` runs).

A cycle is a strongly connected set of two or more modules, or a module importing
itself. `find_cycles` reports each such set; the test fails on any.

The layers: modules of the physics and its models (`tasks/`, `mjcf/`, `collision/`,
`physics*`, `cpu_physics`, `ffi_step`) and of rendering (`render/`) import none of the proof
harness (`parity`, the `equivalence` alias), the dm_control bridge (`reference`),
`agents` or `cli`; and the physics and models import no rendering or wrappers either
(a task's dm_control environment that needs OpenGL is the bridge's business:
`reference.overrides`).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = "jaxcontrol"
ROOT = pathlib.Path(__file__).resolve().parent.parent / PACKAGE

LOWER_LAYERS = (
    "jaxcontrol.tasks",
    "jaxcontrol.mjcf",
    "jaxcontrol.collision",
    "jaxcontrol.physics",
    "jaxcontrol.cpu_physics",
    "jaxcontrol.ffi_step",
    "jaxcontrol.render",
)
UPPER_LAYERS = (
    "jaxcontrol.parity",
    "jaxcontrol.equivalence",
    "jaxcontrol.reference",
    "jaxcontrol.agents",
    "jaxcontrol.cli",
)
MODEL_LAYERS = (
    "jaxcontrol.tasks",
    "jaxcontrol.mjcf",
    "jaxcontrol.collision",
    "jaxcontrol.physics",
    "jaxcontrol.cpu_physics",
)
ABOVE_MODELS = (*UPPER_LAYERS, "jaxcontrol.render", "jaxcontrol.wrappers")


def module_names(root: pathlib.Path = ROOT, package: str = PACKAGE) -> dict[str, pathlib.Path]:
    """{dotted name: path} of every module under `root` (a package is its __init__)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join((package, *parts))] = path
    return modules


def _within(name: str, prefix: str) -> bool:
    """`name` is `prefix` or a module under it (by dotted components)."""
    return name == prefix or name.startswith(prefix + ".")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST):
    """Every Import/ImportFrom of `tree`, at any depth, outside `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module name of a `from ... import` (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def module_imports(name: str, source: str, modules: set[str], is_package: bool = False) -> set[str]:
    """The package modules that importing `name` (with `source`) makes Python run,
    as the module docstring defines the edges."""
    enclosing = set(_ancestors(name)) | ({name} if is_package else set())
    edges: set[str] = set()

    def reach(target: str) -> None:
        """`target` (a module) and the packages on the way that do not enclose `name`."""
        for package in _ancestors(target):
            if package in modules and package not in enclosing:
                edges.add(package)
        if target in modules:
            edges.add(target)

    for node in _import_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                reach(alias.name)
            continue
        base = _resolve(node, name, is_package)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in modules:
                reach(submodule)
            else:  # a name that `base`'s own code defines
                reach(base)
                if base in modules:
                    edges.add(base)
    if is_package:  # an __init__ reading its own names back
        edges.discard(name)
    return edges


def import_graph(root: pathlib.Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    """{module: the package modules it imports} for every module under `root`."""
    paths = module_names(root, package)
    names = set(paths)
    return {
        name: module_imports(name, path.read_text(), names, path.name == "__init__.py")
        for name, path in paths.items()
    }


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of `graph`: each strongly connected set of two or more nodes, and
    each node with an edge to itself, sorted (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    cycles.append(sorted(component))
    return sorted(cycles)


def _in_layer(name: str, layer: tuple[str, ...]) -> bool:
    """`name` is in one of `layer`'s packages or modules (`jaxcontrol.physics` also
    covers `physics_*` modules beside it)."""
    return any(_within(name, prefix) for prefix in layer) or (
        "jaxcontrol.physics" in layer and name.startswith("jaxcontrol.physics")
    )


def layer_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) for each lower-layer module importing an upper layer, and
    each physics or model module importing rendering or wrappers."""
    return sorted(
        (importer, imported)
        for importer, imports in graph.items()
        for imported in imports
        if (_in_layer(importer, LOWER_LAYERS) and _in_layer(imported, UPPER_LAYERS))
        or (_in_layer(importer, MODEL_LAYERS) and _in_layer(imported, ABOVE_MODELS))
    )


# ----- the finder itself ---------------------------------------------------------------


def test_find_cycles_on_small_graphs():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert find_cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    assert find_cycles({"a": {"a"}}) == [["a"]]
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert find_cycles({"a": {"missing"}}) == []


def test_edges_follow_what_python_runs():
    modules = {"p", "p.a", "p.b", "p.sub", "p.sub.c", "p.sub.d"}
    # A module of p.sub takes a sibling: p and p.sub are already running.
    assert module_imports("p.sub.c", "from p.sub import d", modules) == {"p.sub.d"}
    assert module_imports("p.sub.c", "from . import d", modules) == {"p.sub.d"}
    assert module_imports("p.sub.c", "import p.sub.d", modules) == {"p.sub.d"}
    # From outside p.sub, its __init__ runs too.
    assert module_imports("p.a", "from p.sub.d import x", modules) == {"p.sub", "p.sub.d"}
    assert module_imports("p.a", "from .sub import d", modules) == {"p.sub", "p.sub.d"}
    # A name (no module) from an enclosing package needs that __init__.
    assert module_imports("p.a", "from p import load", modules) == {"p"}
    assert module_imports("p.sub.c", "from .. import b", modules) == {"p.b"}
    # Inside functions too; not under TYPE_CHECKING.
    source = "import typing\nif typing.TYPE_CHECKING:\n    import p.b\ndef f():\n    import p.a\n"
    assert module_imports("p.sub.c", source, modules) == {"p.a"}
    # A package's __init__ importing its own module.
    assert module_imports("p.sub", "from p.sub import c", modules, is_package=True) == {"p.sub.c"}


def test_a_cycle_through_an_init_is_found():
    """p/__init__ imports p.a, which takes a name from p: a real cycle."""
    modules = {"p", "p.a"}
    graph = {
        "p": module_imports("p", "from p.a import f", modules, is_package=True),
        "p.a": module_imports("p.a", "from p import g", modules),
    }
    assert find_cycles(graph) == [["p", "p.a"]]


def test_layer_violations_are_found():
    graph = {
        "jaxcontrol.tasks.x": {"jaxcontrol.reference.suite", "jaxcontrol.physics"},
        "jaxcontrol.tasks.y": {"jaxcontrol.render.gl", "jaxcontrol.rewards"},
        "jaxcontrol.physics_helpers": {"jaxcontrol.parity"},
        "jaxcontrol.render.z": {"jaxcontrol.render.gl", "jaxcontrol.cli.args"},
        "jaxcontrol.parity.y": {"jaxcontrol.tasks.x", "jaxcontrol.render.gl"},
        "jaxcontrol.reference.w": {"jaxcontrol.render.gl"},
    }
    assert layer_violations(graph) == [
        ("jaxcontrol.physics_helpers", "jaxcontrol.parity"),
        ("jaxcontrol.render.z", "jaxcontrol.cli.args"),
        ("jaxcontrol.tasks.x", "jaxcontrol.reference.suite"),
        ("jaxcontrol.tasks.y", "jaxcontrol.render.gl"),
    ]


# ----- the package ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_graph_sees_the_package(graph):
    assert "jaxcontrol.core" in graph and "jaxcontrol.tasks.cartpole" in graph
    assert "jaxcontrol.physics" in graph["jaxcontrol.tasks.cartpole"]


def test_no_import_cycles(graph):
    assert find_cycles(graph) == []


def test_lower_layers_import_no_proof_bridge_agents_or_cli(graph):
    assert layer_violations(graph) == []
