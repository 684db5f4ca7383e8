"""The package's layering, read from its source: no import circle among the modules of
src/pysketch (imports inside functions included: a lazy import is still a dependency), no
module importing an underscore name of another module, and no feature-map kind switch
outside the classes that own the kinds."""

import ast
import os
import re

import pytest

import pysketch

PKG_DIR = os.path.dirname(pysketch.__file__)


def _modules():
    """{module name: path} of every .py file of the package."""
    out = {}
    for root, dirs, files in os.walk(PKG_DIR):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f), PKG_DIR)[:-3].replace(os.sep, ".")
                parts = ["pysketch"] + [p for p in rel.split(".") if p != "__init__"]
                out[".".join(parts)] = os.path.join(root, f)
    return out


MODULES = _modules()
#: compiled modules of the package (no .py source): imported like modules, no edges out
COMPILED = {"pysketch._core"}


def _is_package(name):
    return MODULES[name].endswith("__init__.py")


def _from_target(package, node):
    """The absolute module name of a `from ... import` node in `package`."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name):
    """(target module, imported names) for every import statement in module `name`,
    relative imports resolved; targets outside the package are skipped."""
    tree = ast.parse(open(MODULES[name]).read(), MODULES[name])
    package = name if _is_package(name) else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pysketch"):
                    out.append((alias.name, []))
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(package, node)
            if not target.startswith("pysketch"):
                continue
            names = [a.name for a in node.names]
            known = MODULES.keys() | COMPILED
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
            if submodules:  # from package import module
                out.extend((s, []) for s in submodules)
                names = [n for n in names if f"{target}.{n}" not in known]
            if names:
                out.append((target, names))
    return out


def _ancestors(name):
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _edges(name):
    """The modules `name` depends on: each imported module and the packages above it
    (importing pysketch.a.b runs pysketch.a's __init__) except its own ancestors (they
    are being imported already when `name` runs); `from pysketch import x` of a name
    defined in pysketch/__init__.py is an edge to pysketch."""
    deps = set()
    skip = _ancestors(name) | {name}
    for target, names in _imports(name):
        parts = target.split(".")
        for i in range(2, len(parts) + 1):
            mod = ".".join(parts[:i])
            if (mod in MODULES or mod in COMPILED) and mod not in skip:
                deps.add(mod)
        if names and target in _ancestors(name) and target != name:
            deps.add(target)  # a name defined in an ancestor package's __init__
    return deps


def _cycles():
    graph = {name: _edges(name) for name in MODULES}
    graph.update({name: set() for name in COMPILED})
    # a package's __init__ importing its own submodules is how packages work; a cycle
    # through them is still a cycle if a submodule imports the package's __init__ back
    state, stack, found = {}, [], []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                found.append(stack[stack.index(w):] + [w])
            elif w not in state:
                visit(w)
        stack.pop()
        state[v] = 2

    for v in sorted(graph):
        if v not in state:
            visit(v)
    return found


def test_the_graph_reader_sees_imports():
    # the reader itself: known edges of the package are found (a reader that returned
    # nothing would make the tests below vacuous)
    assert "pysketch.operators" in _edges("pysketch.features")
    assert "pysketch._core" in _edges("pysketch.features")
    assert "pysketch.decoders" not in _edges("pysketch.decoders.clompr")  # its own package
    assert "pysketch.features" in _edges("pysketch.privacy.sensitivity")
    assert "pysketch.privacy" in _edges("pysketch.estimators")  # via pysketch.privacy.release (lazy import)
    assert len(MODULES) > 30


def test_no_import_circle():
    cycles = _cycles()
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_a_circle_would_be_found(monkeypatch):
    # the detector on an injected edge: sketch -> features closes features -> accumulate -> sketch
    real = _edges
    monkeypatch.setitem(globals(), "_edges",
                        lambda n: real(n) | ({"pysketch.features"} if n == "pysketch.sketch" else set()))
    assert any("pysketch.sketch" in c and "pysketch.features" in c for c in _cycles())


def _layer(name):
    """The layer of a module: its top-level module or subpackage under pysketch."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_private_name_is_imported_from_another_layer():
    bad = []
    for name in MODULES:
        for target, names in _imports(name):
            for n in names:
                if n.startswith("_") and not n.startswith("__") and _layer(target) != _layer(name):
                    bad.append(f"{name}: from {target} import {n}")
    assert not bad, "private names imported across layers:\n" + "\n".join(bad)


def _module_aliases(name, tree):
    """{local name: module} for the package's modules bound in `name` (import x as y,
    from . import module [as y])."""
    package = name if _is_package(name) else name.rpartition(".")[0]
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _from_target(package, node)
            for a in node.names:
                if f"{target}.{a.name}" in MODULES:
                    out[a.asname or a.name] = f"{target}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES and a.asname:
                    out[a.asname] = a.name
    return out


def test_no_private_attribute_of_another_layer_is_read():
    # module._private through a module object (from . import metrics; metrics._kmeans(...))
    bad = []
    for name in MODULES:
        tree = ast.parse(open(MODULES[name]).read())
        aliases = _module_aliases(name, tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and _layer(aliases[node.value.id]) != _layer(name)):
                bad.append(f"{name}: {aliases[node.value.id]}.{node.attr}")
    assert not bad, "private attributes of other layers read:\n" + "\n".join(sorted(set(bad)))


#: the modules that own kinds: the feature-map family and the operators
KIND_OWNERS = {"pysketch.features", "pysketch.operators"}


@pytest.mark.parametrize("name", sorted(set(MODULES) - KIND_OWNERS))
def test_no_kind_switch_outside_its_owner(name):
    src = open(MODULES[name]).read()
    hits = re.findall(r"\b(?:fm|feature_map|operator|op)\.kind\s*(?:==|!=|in\b|not in\b)"
                      r"|kind\s*[!=]=\s*['\"](?:complex|real|quantized|quadratic|dense|r3|gr2|fastfood)['\"]", src)
    assert not hits, f"{name} switches on a feature map's or operator's kind: {hits}"
