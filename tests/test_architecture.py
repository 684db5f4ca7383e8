"""The package's layering, read from its source (issue 38, "layers you can trust"):

- no import circle among the modules of src/pysketch: import statements, imports inside
  functions (a lazy import is still a dependency) and `importlib.import_module` calls with
  a literal name (relative names resolved against their package argument) all count;
  a call whose name is not a literal is allowed only in the modules of DYNAMIC_IMPORTS;
- no underscore name of another layer imported, nor read as an attribute of a module or
  class of another layer; no operator's private method (`_apply`, `_adjoint`, ...) called
  outside operators.py;
- the compiled core `pysketch._core` imported only by the backend module of each layer
  (CORE_BACKENDS);
- the range checks of the data's scale imported from `pysketch._checks` only;
- no comment or string of src/ citing a note kept outside the repository (a comment cites
  the public paper: authors, year, section or equation, or states the fact itself);
- no feature-map kind switch outside the classes that own the kinds;
- no decoder name compared with a string literal (other than 'auto') outside the decoders'
  own package: an estimator reads what a decoder declares on its class (its task, atoms,
  frequency law, scale rule), never which decoder it is.

Every checker is a function of a module's name and source, so that the tests at the end
of each part feed it a small fake source with the fault and see it reported."""

import ast
import importlib.util
import io
import os
import re
import tokenize

import pytest

import pysketch

PKG_DIR = os.path.dirname(pysketch.__file__)
#: the repository (this file's parent's parent): pysketch may be installed elsewhere (CI
#: installs it into a fresh environment), its documentation is only here
REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def _source(name):
    with open(MODULES[name], encoding="utf-8") as f:
        return f.read()


def _is_package(name):
    return MODULES[name].endswith("__init__.py")


def _package(name, is_package=None):
    """The package a module's relative imports are resolved in."""
    if is_package is None:
        is_package = name in MODULES and _is_package(name)
    return name if is_package else name.rpartition(".")[0]


def _from_target(package, node):
    """The absolute module name of a `from ... import` node in `package`."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


# ------------------------------------------------------------------ import_module calls


def _is_import_module(call):
    """Whether a Call node calls importlib.import_module (as `importlib.import_module`,
    or `import_module` imported from importlib)."""
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id == "import_module")


def _literal(node, name, package):
    """The string a node stands for when it is known statically: a str literal, or the
    module's own `__name__` / `__package__`; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id == "__name__":
        return name
    if isinstance(node, ast.Name) and node.id == "__package__":
        return package
    return None


def _import_module_calls(name, tree, is_package=None):
    """(resolved target or None, line) for every import_module call in a module: a literal
    name, absolute or relative with a literal (or __name__ / __package__) package
    argument, is resolved; a computed one gives None."""
    package = _package(name, is_package)
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _is_import_module(node) and node.args):
            continue
        target = _literal(node.args[0], name, package)
        if target is not None and target.startswith("."):
            anchor = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "package"), None)
            anchor = _literal(anchor, name, package) if anchor is not None else None
            target = importlib.util.resolve_name(target, anchor) if anchor else None
        out.append((target, node.lineno))
    return out


def _imports_of(name, tree, is_package=None, known=None):
    """(target module, imported names) for every import of module `name` (source `tree`):
    import statements, relative ones resolved, and import_module calls with a literal
    name; targets outside the package are skipped."""
    package = _package(name, is_package)
    known = (MODULES.keys() | COMPILED) if known is None else known
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
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
            if submodules:  # from package import module
                out.extend((s, []) for s in submodules)
                names = [n for n in names if f"{target}.{n}" not in known]
            if names:
                out.append((target, names))
    for target, _ in _import_module_calls(name, tree, is_package):
        if target is not None and target.startswith("pysketch"):
            out.append((target, []))
    return out


def _imports(name):
    return _imports_of(name, ast.parse(_source(name), MODULES[name]))


def _ancestors(name):
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _edges_of(name, imports, known):
    """The modules `name` depends on: each imported module and the packages above it
    (importing pysketch.a.b runs pysketch.a's __init__) except its own ancestors (they
    are being imported already when `name` runs); `from pysketch import x` of a name
    defined in pysketch/__init__.py is an edge to pysketch."""
    deps = set()
    skip = _ancestors(name) | {name}
    for target, names in imports:
        parts = target.split(".")
        for i in range(2, len(parts) + 1):
            mod = ".".join(parts[:i])
            if mod in known and mod not in skip:
                deps.add(mod)
        if names and target in _ancestors(name) and target != name:
            deps.add(target)  # a name defined in an ancestor package's __init__
    return deps


def _edges(name):
    return _edges_of(name, _imports(name), MODULES.keys() | COMPILED)


def _find_cycles(graph):
    state, stack, found = {}, [], []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph.get(v, ())):
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


def _cycles():
    # a package's __init__ importing its own submodules is how packages work; a cycle
    # through them is still a cycle if a submodule imports the package's __init__ back
    graph = {name: _edges(name) for name in MODULES}
    graph.update({name: set() for name in COMPILED})
    return _find_cycles(graph)


def _fake_cycles(sources):
    """The import circles of a fake package given as {module name: source} (names ending
    in '.__init__' are packages), read by the same functions as the real one."""
    names = {n[: -len(".__init__")] if n.endswith(".__init__") else n: n.endswith(".__init__") for n in sources}
    graph = {}
    for src_name, src in sources.items():
        name = src_name[: -len(".__init__")] if src_name.endswith(".__init__") else src_name
        graph[name] = _edges_of(name, _imports_of(name, ast.parse(src), names[name], set(names)), set(names))
    return _find_cycles(graph)


def test_the_graph_reader_sees_imports():
    # the reader itself: known edges of the package are found (a reader that returned
    # nothing would make the tests below vacuous)
    assert "pysketch.operators" in _edges("pysketch.features")
    assert "pysketch._core" in _edges("pysketch.features")
    assert "pysketch.decoders" not in _edges("pysketch.decoders.clompr")  # its own package
    assert "pysketch.features" in _edges("pysketch.privacy.sensitivity")
    assert "pysketch.privacy" in _edges("pysketch.estimators")  # via pysketch.privacy.release (lazy import)
    assert len(MODULES) > 30


def test_the_graph_reader_sees_import_module_calls():
    # the package root registers the private sketch format's provider with a relative
    # import_module call (pysketch/__init__.py): an edge like any import
    assert "pysketch.privacy" in _edges("pysketch")


def test_no_import_circle():
    cycles = _cycles()
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_a_circle_would_be_found(monkeypatch):
    # the detector on an injected edge: sketch -> features closes features -> accumulate -> sketch
    real = _edges
    monkeypatch.setitem(globals(), "_edges",
                        lambda n: real(n) | ({"pysketch.features"} if n == "pysketch.sketch" else set()))
    assert any("pysketch.sketch" in c and "pysketch.features" in c for c in _cycles())


@pytest.mark.parametrize("call", [
    'importlib.import_module("pysketch.b")',
    'import_module("pysketch.b")',
    'importlib.import_module(".b", "pysketch")',
    'importlib.import_module(".b", package="pysketch")',
    'importlib.import_module(".b", __package__)',
])
def test_a_circle_through_import_module_would_be_found(call):
    # the fault: b -> a by a statement, a -> b by importlib inside a function
    sources = {
        "pysketch.__init__": "",
        "pysketch.a": f"import importlib\nfrom importlib import import_module\ndef f():\n    {call}\n",
        "pysketch.b": "from .a import f\n",
    }
    assert ["pysketch.a", "pysketch.b", "pysketch.a"] in _fake_cycles(sources)


def test_a_computed_import_module_name_is_not_an_edge():
    sources = {"pysketch.__init__": "", "pysketch.a": "import importlib\nimportlib.import_module(NAME)\n",
               "pysketch.b": "from .a import f\n"}
    assert _fake_cycles(sources) == []
    assert _import_module_calls("pysketch.a", ast.parse(sources["pysketch.a"]), False) == [(None, 2)]


#: modules that may call import_module with a name computed at run time (no static edge):
#: what they import and why that is no dependency upward
DYNAMIC_IMPORTS = {
    "pysketch": "the lazy public names of the package root (_LAZY): the root is above every layer",
    "pysketch.model_files": "the built-in model classes by their saved name (_BUILTIN): estimator modules, above it",
    "pysketch.datasets._real": "the third-party packages the real data sets ship in",
}


def _computed_import_module_calls(name, tree, is_package=None):
    return [line for target, line in _import_module_calls(name, tree, is_package) if target is None]


def test_every_import_module_call_of_the_package_is_read():
    # a computed name would hide an edge from the circle check: only where it cannot be one
    bad = [f"{name}:{line}" for name in MODULES if name not in DYNAMIC_IMPORTS
           for line in _computed_import_module_calls(name, ast.parse(_source(name)))]
    assert not bad, "import_module calls with a computed name (no edge read):\n" + "\n".join(bad)


def test_a_computed_import_module_call_would_be_reported():
    assert _computed_import_module_calls("pysketch.a", ast.parse("importlib.import_module(f'pysketch.{x}')\n"),
                                         False) == [1]


# ------------------------------------------------------------------ private names


def _layer(name):
    """The layer of a module: its top-level module or subpackage under pysketch."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_private(attr):
    return attr.startswith("_") and not attr.startswith("__")


def test_no_private_name_is_imported_from_another_layer():
    bad = []
    for name in MODULES:
        for target, names in _imports(name):
            for n in names:
                if _is_private(n) and _layer(target) != _layer(name):
                    bad.append(f"{name}: from {target} import {n}")
    assert not bad, "private names imported across layers:\n" + "\n".join(bad)


def _bindings(name, tree, is_package=None, known=None):
    """{local name: (module, attribute or None)} for the names a module binds to the
    package's modules (import x as y, import pysketch.x, from . import module) and to
    names imported from them (from .x import Class: (pysketch.x, 'Class'))."""
    package = _package(name, is_package)
    known = MODULES.keys() if known is None else known
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _from_target(package, node)
            if not target.startswith("pysketch"):
                continue
            for a in node.names:
                if f"{target}.{a.name}" in known:
                    out[a.asname or a.name] = (f"{target}.{a.name}", None)
                elif a.name != "*":
                    out[a.asname or a.name] = (target, a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("pysketch"):
                    if a.asname:
                        out[a.asname] = (a.name, None)
                    else:
                        out[a.name.split(".")[0]] = (a.name.split(".")[0], None)
    return out


def _dotted(node):
    """'a.b.c' for a chain of Attribute nodes over a Name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id] + parts[::-1])


def _private_reads(name, tree, is_package=None, known=None):
    """'owner.attr' for every read of a private attribute `attr` of a module or of a name
    imported from a module of another layer: module._name, pysketch.x._name,
    Class._name with Class imported from another layer."""
    known = MODULES.keys() if known is None else known
    binds = _bindings(name, tree, is_package, known)
    bad = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        owner = _dotted(node.value)
        if owner is None or owner.split(".")[0] not in binds:
            continue
        head, *rest = owner.split(".")
        module, attr = binds[head]
        full = ".".join([module] + ([attr] if attr else []) + rest)
        # the longest module prefix of the chain is the owner's module
        parts = full.split(".")
        owner_module = max((".".join(parts[:i]) for i in range(1, len(parts) + 1)
                            if ".".join(parts[:i]) in known), key=len, default=module)
        if _layer(owner_module) != _layer(name):
            bad.append(f"{full}.{node.attr}")
    return bad


def test_no_private_attribute_of_another_layer_is_read():
    # module._private through a module object (from . import metrics; metrics._kmeans(...)),
    # a dotted module path, or a class imported from another layer
    bad = [f"{name}: {r}" for name in MODULES for r in _private_reads(name, ast.parse(_source(name)))]
    assert not bad, "private attributes of other layers read:\n" + "\n".join(sorted(set(bad)))


@pytest.mark.parametrize("line, read", [
    ("from . import metrics\nmetrics._kmeans(1)\n", "pysketch.metrics._kmeans"),
    ("import pysketch.metrics as m\nm._kmeans\n", "pysketch.metrics._kmeans"),
    ("import pysketch.metrics\npysketch.metrics._kmeans\n", "pysketch.metrics._kmeans"),
    ("from .operators import DenseOperator\nDenseOperator._from_state({}, {})\n", "pysketch.operators.DenseOperator._from_state"),
])
def test_a_private_read_of_another_layer_would_be_found(line, read):
    known = {"pysketch", "pysketch.metrics", "pysketch.operators", "pysketch.sketch"}
    assert _private_reads("pysketch.sketch", ast.parse(line), False, known) == [read]


def test_a_private_read_inside_the_layer_is_allowed():
    known = {"pysketch", "pysketch.decoders", "pysketch.decoders.problem", "pysketch.decoders.clompr"}
    src = "from .problem import DecodingProblem\nDecodingProblem._check(1)\n"
    assert _private_reads("pysketch.decoders.clompr", ast.parse(src), False, known) == []


def _defined_private_methods(tree):
    return {f.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_private(f.name)}


def _operator_private_methods():
    """The private methods of the operators (operators.py) that no other module defines
    (a name that other classes define too, as _meta, cannot be told apart statically)."""
    own = _defined_private_methods(ast.parse(_source("pysketch.operators")))
    others = set()
    for name in MODULES:
        if name != "pysketch.operators":
            tree = ast.parse(_source(name))
            others |= _defined_private_methods(tree)
            others |= {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}
    return own - others


def _private_method_calls(tree, methods):
    """(line, attr) for every `x.attr` with attr in `methods`, x not self / cls / super()."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in methods:
            v = node.value
            if isinstance(v, ast.Name) and v.id in ("self", "cls"):
                continue
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "super":
                continue
            out.append((node.lineno, node.attr))
    return out


def test_the_operators_private_methods_are_known():
    assert {"_apply", "_adjoint"} <= _operator_private_methods()


def test_no_operator_private_method_is_called_outside_operators():
    # the decoders use the public `apply_into` / `adjoint_into` (unchecked products)
    methods = _operator_private_methods()
    bad = [f"{name}:{line}: .{attr}" for name in MODULES if name != "pysketch.operators"
           for line, attr in _private_method_calls(ast.parse(_source(name)), methods)]
    assert not bad, "operators' private methods called from outside operators.py:\n" + "\n".join(bad)


def test_an_operator_private_call_would_be_found():
    src = "def f(op, x, out):\n    op._apply(x, out)\n    self._apply(x, out)\n    problem.operator._adjoint(x, out)\n"
    assert _private_method_calls(ast.parse(src), {"_apply", "_adjoint"}) == [(2, "_apply"), (4, "_adjoint")]


# ------------------------------------------------------------------ the compiled core

#: the one module of each layer that reaches the compiled core `pysketch._core` (a layer:
#: a top-level module, or a subpackage); every other module calls their public functions
CORE_BACKENDS = {
    "runtime": "pysketch.runtime",              # threads, SIMD level
    "blocks": "pysketch.blocks",                # array passes: finite check, running column bounds
    "hadamard": "pysketch.hadamard",            # the fast Walsh-Hadamard transform
    "operators": "pysketch.operators",          # operator products, fused sketching
    "features": "pysketch.features",            # nonlinearities, one-hot binning and hashing, Gram
    "cluster": "pysketch.cluster",              # nearest centres
    "decoders": "pysketch.decoders.kernels",    # sin/cos, atom terms, the CL-AMP output channel
    "privacy": "pysketch.privacy.mechanisms",   # exact discrete samplers
    "rfm": "pysketch.rfm.solvers",              # Kaczmarz / SGD row updates
}

#: modules allowed to import _core themselves for now (none left; a module listed here
#: that no longer needs it fails the test, so the list cannot go stale)
CORE_PENDING = set()


def _imports_core(name, tree, is_package=None, known=None):
    known = (MODULES.keys() | COMPILED) if known is None else known
    return any(t == "pysketch._core" or t.startswith("pysketch._core.")
               for t, _ in _imports_of(name, tree, is_package, known))


def _core_importers(modules, known=None):
    """{module: why it is wrong} for the modules of {name: tree} that import _core
    without being their layer's backend."""
    return {name: f"imports pysketch._core (the backend of layer {_layer(name)!r}: "
                  f"{CORE_BACKENDS.get(_layer(name), 'none')})"
            for name, tree in modules.items()
            if _imports_core(name, tree, None if known is None else False, known)
            and CORE_BACKENDS.get(_layer(name)) != name}


def test_the_core_is_reached_through_one_backend_per_layer():
    trees = {name: ast.parse(_source(name)) for name in MODULES}
    bad = {n: why for n, why in _core_importers(trees).items() if n not in CORE_PENDING}
    assert not bad, "\n".join(f"{n}: {why}" for n, why in sorted(bad.items()))
    # every backend exists and reaches the core, one per layer
    for layer, backend in CORE_BACKENDS.items():
        assert _layer(backend) == layer and backend in MODULES, backend
        assert _imports_core(backend, trees[backend]), f"{backend} is listed as a backend but never imports _core"
    # the pending list only names modules that still need it
    assert all(_imports_core(n, trees[n]) for n in CORE_PENDING), "CORE_PENDING names a module that is fixed"


@pytest.mark.parametrize("src", [
    "from . import _core\n",
    "from ._core import sincos\n",
    "import pysketch._core\n",
    "def f():\n    from .. import _core\n",
    "import importlib\nimportlib.import_module('pysketch._core')\n",
])
def test_a_core_import_outside_the_backend_would_be_found(src):
    known = {"pysketch", "pysketch._core", "pysketch.sketch", "pysketch.decoders", "pysketch.decoders.problem"}
    name = "pysketch.decoders.problem" if "from .. " in src else "pysketch.sketch"
    assert name in _core_importers({name: ast.parse(src)}, known)
    assert _core_importers({"pysketch.runtime": ast.parse("from . import _core\n")}, known) == {}


# ------------------------------------------------------------------ range checks

#: the checks of the data's scale and their limits, owned by pysketch._checks
RANGE_CHECKS = {"check_data_magnitude", "data_unit", "check_box_width",
                "MAX_DATA_EXPONENT", "COMFORT_EXPONENT", "MIN_WIDTH_EXPONENT"}

#: modules allowed to import them from pysketch.kernel_scale for now (none left)
RANGE_PENDING = set()


def _range_check_imports(name, tree, is_package=None, known=None):
    """'module.name' for every range check imported, or read as a module attribute,
    from anywhere but pysketch._checks."""
    bad = [f"{t}.{n}" for t, names in _imports_of(name, tree, is_package, known) for n in names
           if n in RANGE_CHECKS and t != "pysketch._checks"]
    binds = _bindings(name, tree, is_package, known)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in RANGE_CHECKS:
            owner = _dotted(node.value)
            if owner and owner.split(".")[0] in binds:
                module, attr = binds[owner.split(".")[0]]
                full = ".".join([module] + ([attr] if attr else []) + owner.split(".")[1:])
                if full != "pysketch._checks":
                    bad.append(f"{full}.{node.attr}")
    return bad


def test_range_checks_come_from_checks():
    import pysketch._checks

    assert RANGE_CHECKS <= set(vars(pysketch._checks))
    bad = [f"{name}: {r}" for name in MODULES if name not in RANGE_PENDING
           for r in _range_check_imports(name, ast.parse(_source(name)))]
    assert not bad, "range checks imported from elsewhere than pysketch._checks:\n" + "\n".join(bad)
    assert all(_range_check_imports(n, ast.parse(_source(n))) for n in RANGE_PENDING), \
        "RANGE_PENDING names a module that is fixed"


@pytest.mark.parametrize("src", [
    "def f():\n    from ..kernel_scale import check_data_magnitude\n",
    "from .. import kernel_scale\nkernel_scale.data_unit(1.0)\n",
])
def test_a_range_check_from_kernel_scale_would_be_found(src):
    known = {"pysketch", "pysketch.kernel_scale", "pysketch._checks", "pysketch.decoders", "pysketch.decoders.coreset"}
    assert _range_check_imports("pysketch.decoders.coreset", ast.parse(src), False, known)
    assert not _range_check_imports("pysketch.decoders.coreset",
                                    ast.parse("from .._checks import check_data_magnitude, data_unit\n"), False, known)


# ------------------------------------------------------------------ citations

#: how the code used to cite the notes kept outside the repository (../shared/notes:
#: "notes seed003 sec. 2.2", "seed001_m2m.md", "the issue 14 note") instead of the paper
NOTE_CITATION = re.compile(
    r"\bnotes?\b'?[\s,(]*(?:seed\s?\d{3}|sec\.|section|pitfalls?\b|items?\b|\d+\.\d+|P\d)"  # notes seed000 sec. 2.3
    r"|\bseed\s?\d{3}[\s_]*(?:notes?|\w*\.md|sec\.|pitfall|P\d|\d\.\d)"  # seed003 sec. 1.3, seed001_m2m.md
    r"|\b(?:anchors_fwht|shared/notes)\b"
    r"|\bissue\s+\d+\s+notes?\b"             # the issue 14 note
    r"|\bthe\s+(?:project\s+)?notes\b"          # the notes' erratum, the project notes
    , re.IGNORECASE)

#: modules allowed to cite notes outside the repository for now (none left)
CITATION_PENDING = set()


def _text_blocks(source):
    """(line, text) of every comment block (consecutive comment lines joined) and every
    string literal (docstrings, messages) of a source."""
    out, block, start, last = [], [], None, None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            if block and tok.start[0] != last + 1:
                out.append((start, " ".join(block)))
                block = []
            if not block:
                start = tok.start[0]
            block.append(tok.string.lstrip("#").strip())
            last = tok.start[0]
    if block:
        out.append((start, " ".join(block)))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
    return out


def _missing_md(text):
    """The .md files a text names that are not in the repository."""
    names = re.findall(r"[\w./-]+\.md\b", text)
    return [n for n in names if not os.path.exists(os.path.join(REPO_DIR, n))
            and not os.path.exists(os.path.join(REPO_DIR, "docs", os.path.basename(n)))]


def _note_citations(source):
    """(line, excerpt) for every comment or string that cites a note outside the repository."""
    out = []
    for line, text in _text_blocks(source):
        for m in NOTE_CITATION.finditer(text):
            out.append((line, text[max(0, m.start() - 20): m.end() + 20].replace("\n", " ")))
        out.extend((line, md) for md in _missing_md(text))
    return out


def test_no_comment_cites_a_note_outside_the_repository():
    bad = [f"{name}:{line}: ...{ex}..." for name in sorted(MODULES) if name not in CITATION_PENDING
           for line, ex in _note_citations(_source(name))]
    assert not bad, (f"{len(bad)} comments or strings cite a note outside the repository (cite the paper: "
                     "authors, year, section or equation; or state the fact):\n" + "\n".join(bad))
    fixed = [name for name in CITATION_PENDING if not _note_citations(_source(name))]
    assert not fixed, f"CITATION_PENDING names modules without a note citation: {fixed}"


@pytest.mark.parametrize("src", [
    "x = 1  # the L1 bound (notes seed000 sec. 2.3)\n",
    "# lambda as in notes\n# seed001 sec. 2.4\nx = 1\n",
    "def f():\n    '''Algorithm 1 (notes seed004 sec. 2.2 and pitfall 1).'''\n",
    "x = 1  # see seed002_dpjl.md\n",
    "x = 1  # measured (issue 14 note)\n",
    "x = 1  # from ../shared/notes/anchors_fwht.md\n",
    "raise ValueError('see notes seed003 sec. 1.3')\n",
])
def test_a_note_citation_would_be_found(src):
    assert _note_citations(src)


def test_a_paper_citation_or_an_md_file_of_the_repository_is_fine():
    src = ("x = 1  # Chatalic et al. 2022, Lemma 5 eq. (9); docs/c_api.md\n"
           "# a note on the units: the sum is in float64\n"
           "'''Houssiau et al. (M2M), Sec. 3.1; notes: none'''\n")
    assert _note_citations(src) == []


# ------------------------------------------------------------------ kind switches

#: the modules that own kinds: the feature-map family and the operators
KIND_OWNERS = {"pysketch.features", "pysketch.operators"}


@pytest.mark.parametrize("name", sorted(set(MODULES) - KIND_OWNERS))
def test_no_kind_switch_outside_its_owner(name):
    src = open(MODULES[name]).read()
    hits = re.findall(r"\b(?:fm|feature_map|operator|op)\.kind\s*(?:==|!=|in\b|not in\b)"
                      r"|kind\s*[!=]=\s*['\"](?:complex|real|quantized|quadratic|dense|r3|gr2|fastfood)['\"]", src)
    assert not hits, f"{name} switches on a feature map's or operator's kind: {hits}"


# ------------------------------------------------------------------ decoder names

#: modules allowed to compare decoder names with literals for now (none left; a listed
#: module that no longer does fails the test, so the set cannot go stale)
DECODER_NAME_PENDING = set()


def _names_a_decoder(node):
    """Whether an expression stands for a decoder's name: a name or attribute chain whose
    last part says 'decoder' (decoder, self.decoder, args.decoder, est.decoder_,
    decoder_name) or is the `name` of one (decoder.name), or a call of such a chain
    (self._decoder_name(sketch)). A decoder's other attributes (decoder.task) are its
    declarations, not its name."""
    if isinstance(node, ast.Call):
        node = node.func
    dotted = _dotted(node)
    if dotted is None:
        return False
    parts = dotted.lower().split(".")
    return "decoder" in parts[-1] or (parts[-1] == "name" and any("decoder" in p for p in parts[:-1]))


def _name_literals(node):
    """The string literals other than 'auto' that an operand is or holds (a tuple, list or set)."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value != "auto"]


def _decoder_name_tests(tree):
    """(line, literal) for every comparison (==, !=, in, not in, is) of a decoder name with a
    string literal other than 'auto', and every `case` literal of a `match` on one."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left] + node.comparators
            if any(_names_a_decoder(o) for o in operands):
                out.extend((node.lineno, lit) for o in operands if not _names_a_decoder(o) for lit in _name_literals(o))
        elif isinstance(node, ast.Match) and _names_a_decoder(node.subject):
            for case in node.cases:
                for pattern in ast.walk(case.pattern):
                    if isinstance(pattern, ast.MatchValue):
                        out.extend((pattern.lineno, lit) for lit in _name_literals(pattern.value))
    return out


def test_no_decoder_name_is_tested_outside_the_decoders():
    # decoder='auto' may choose a decoder by name (a rule of the estimator); what a decoder
    # prefers is read from its class (pysketch.decoders.base), never from its name
    trees = {name: ast.parse(_source(name)) for name in MODULES if _layer(name) != "decoders"}
    bad = [f"{name}:{line}: decoder name compared with {lit!r}" for name, tree in sorted(trees.items())
           if name not in DECODER_NAME_PENDING for line, lit in _decoder_name_tests(tree)]
    assert not bad, ("decoder names tested outside pysketch.decoders (declare the behaviour on the decoder's class "
                     "and read it there):\n" + "\n".join(bad))
    assert all(_decoder_name_tests(trees[n]) for n in DECODER_NAME_PENDING), "DECODER_NAME_PENDING names a fixed module"


@pytest.mark.parametrize("src, literal", [
    ('def _default_law(self):\n    return "log_uniform" if self.decoder == "coreset" else "gaussian"\n', "coreset"),
    ("if self.decoder != 'coreset':\n    pass\n", "coreset"),
    ('if args.decoder not in ("auto", "clompr"):\n    pass\n', "clompr"),
    ('if "grid" == decoder.name:\n    pass\n', "grid"),
    ('if self._decoder_name(sketch) == "grid":\n    pass\n', "grid"),
    ('spread = est.decoder_ in {"coreset"}\n', "coreset"),
    ('match self.decoder:\n    case "coreset":\n        pass\n    case _:\n        pass\n', "coreset"),
])
def test_a_decoder_name_test_would_be_found(src, literal):
    assert [lit for _, lit in _decoder_name_tests(ast.parse(src))] == [literal]


def test_auto_and_a_decoders_declarations_are_not_name_tests():
    src = ('if self.decoder == "auto" or args.decoder not in ("auto",):\n    pass\n'
           'if route == "grid" and decoder.task == "subspace":\n    pass\n'
           'if DECODERS.get(self.decoder).scale_rule == "spread":\n    pass\n'
           'name = "coreset" if alone else "clompr"\n')
    assert _decoder_name_tests(ast.parse(src)) == []
