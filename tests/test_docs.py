"""The API reference (docs/api/, issue 39) covers the public API, and the public API is
documented.

A public module is pysketch or any of its modules and subpackages whose dotted name has no
part starting with '_'; its public names are those of its ``__all__``. For each of them:

- a docstring: a module's and a function's own ``__doc__``, a class's own (not one it
  inherits); a constant's "#:" comment (or string) at the assignment that defines it,
  found by following ``from ... import`` statements to the module that assigns it;
- for a class or function (counted once, where it is defined), the numpydoc sections of
  issue 39 (item 4), read with numpydoc's own parser: Parameters, Returns, Raises as its
  signature and source call for, and Examples with a doctest (see _required_sections;
  numpydoc is in the test extra, so these never skip); and the Parameters section names
  exactly the signature's parameters; the Sphinx doctest build (``-b doctest``) runs the examples;
- a row in the summary table of its module's page, docs/api/<module>.rst, which names the
  same object, and that object documented by an autodoc directive (``autoclass``,
  ``autofunction``, ``autodata``, ``autoexception``, ``automodule``) on some page.

The checks read the .rst sources, not a Sphinx build, so that they run without Sphinx
(CI builds the site separately, with warnings as errors). A new public name or module
fails here until ``python docs/apigen.py`` rewrites the pages.
"""

import ast
import importlib
import inspect
import os
import re
import textwrap
import warnings

import pytest

import pysketch

PKG_DIR = os.path.dirname(pysketch.__file__)
REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API_DIR = os.path.join(REPO_DIR, "docs", "api")
HINT = "run `python docs/apigen.py` to rewrite the reference pages"

pytestmark = pytest.mark.skipif(not os.path.isdir(API_DIR), reason="no docs/api next to the tests")


def _public_modules():
    names = []
    for root, dirs, files in os.walk(PKG_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith((".", "_")))
        rel = os.path.relpath(root, PKG_DIR)
        package = "pysketch" if rel == "." else "pysketch." + rel.replace(os.sep, ".")
        if "__init__.py" not in files:
            continue
        names.append(package)
        names += [f"{package}.{f[:-3]}" for f in sorted(files) if f.endswith(".py") and not f.startswith("_")]
    return names


PUBLIC_MODULES = _public_modules()
PUBLIC_NAMES = [(m, n) for m in PUBLIC_MODULES for n in getattr(importlib.import_module(m), "__all__", ())]


def _kind(obj):
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return "object"
    return "data"


# ---------------------------------------------------------------------------- docstrings


def _comment_at_assignment(module_name, name, seen=()):
    """The doc comment ("#:" above or after the assignment, or a string statement right
    after it) of `name` in the module that assigns it; None when there is none."""
    module = importlib.import_module(module_name)
    source = inspect.getsource(module)
    lines = source.splitlines()
    body = ast.parse(source).body
    for i, node in enumerate(body):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
                isinstance(t, ast.Name) and t.id == name for t in targets):
            above, j = [], node.lineno - 2
            while j >= 0 and lines[j].lstrip().startswith("#:"):
                above.insert(0, lines[j].lstrip()[2:].strip())
                j -= 1
            trailing = re.search(r"#:(.*)$", lines[node.end_lineno - 1])
            after = body[i + 1] if i + 1 < len(body) else None
            string_after = (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                            and isinstance(after.value.value, str))
            text = " ".join(above) or (trailing.group(1).strip() if trailing else "") or (
                after.value.value.strip() if string_after else "")
            return text or None
    for node in body:
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            package = module_name if module.__file__.endswith("__init__.py") else module_name.rpartition(".")[0]
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                origin = ".".join(parts + ([node.module] if node.module else []))
            else:
                origin = node.module
            if origin not in seen:
                return _comment_at_assignment(origin, name, seen + (module_name,))
    return None


def _docstring(module_name, name):
    obj = getattr(importlib.import_module(module_name), name)
    if _kind(obj) == "data":
        return _comment_at_assignment(module_name, name)
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    return doc.strip() if isinstance(doc, str) else None


def test_the_public_modules_are_found():
    assert {"pysketch", "pysketch.sketch", "pysketch.privacy", "pysketch.privacy.budget", "pysketch.rfm.ssp"} \
        <= set(PUBLIC_MODULES)
    assert not any(part.startswith("_") for m in PUBLIC_MODULES for part in m.split("."))
    assert len(PUBLIC_NAMES) > 400


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_module_has_a_docstring(module_name):
    doc = importlib.import_module(module_name).__doc__
    assert doc and doc.strip(), f"{module_name} has no docstring"


def test_every_public_name_has_a_docstring():
    missing = [f"{m}.{n}" for m, n in PUBLIC_NAMES if not _docstring(m, n)]
    assert not missing, (
        f"{len(missing)} public names without a docstring (a constant: a '#:' comment where it is "
        f"assigned): {missing}")


def test_the_docstring_check_sees_a_missing_docstring_and_comment():
    # the checker on the package's own objects, with what it must refuse
    assert _docstring("pysketch.sketch", "Sketch")
    assert _docstring("pysketch.features", "FEATURE_MAPS")  # assigned, with its comment, in pysketch._state
    assert _comment_at_assignment("pysketch.privacy.sensitivity", "NEIGHBOURING")  # from pysketch._checks
    assert _comment_at_assignment("pysketch.sketch", "SUBSAMPLED_FORMAT_VERSION")  # a comment above
    assert _comment_at_assignment("pysketch.decoders.problem", "ALPHA_BOUNDS")  # a comment after

    class Undocumented(pysketch.Sketch):
        pass

    assert Undocumented.__dict__.get("__doc__") is None and inspect.getdoc(Undocumented)  # inherited only
    assert _comment_at_assignment("pysketch.decoders.problem", "no_such_name") is None


# ---------------------------------------------------------------------------- docstring sections


def _public_callables():
    """Every public class and function once (by identity), in the order of PUBLIC_NAMES."""
    out = {}
    for module_name, name in PUBLIC_NAMES:
        obj = getattr(importlib.import_module(module_name), name)
        if _kind(obj) == "object":
            out.setdefault(id(obj), obj)
    return list(out.values())


PUBLIC_CALLABLES = _public_callables()


def _label(obj):
    return f"{obj.__module__}.{obj.__qualname__}"


def _definition(obj):
    """The ast node of an object's own definition (a def or class statement); None when it
    has no source (a class made by collections.namedtuple)."""
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        return None
    return ast.parse(textwrap.dedent(source)).body[0]


def _own_nodes(node):
    """The nodes of a def's body, not entering the nested defs, lambdas and classes (their
    return and yield are not the function's)."""
    stack = list(node.body)
    while stack:
        sub = stack.pop()
        yield sub
        if not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack += ast.iter_child_nodes(sub)


def _takes_parameters(obj):
    """Whether a function, or a class's __init__ (a namedtuple's __new__), takes a parameter
    besides self or cls. A class whose __init__ and __new__ are both built in (an exception
    or a warning without its own __init__) takes none that need describing."""
    if not inspect.isclass(obj):
        return bool(inspect.signature(obj).parameters)
    for special in ("__init__", "__new__"):
        method = next(k.__dict__[special] for k in obj.__mro__ if special in k.__dict__)
        method = method.__func__ if isinstance(method, (staticmethod, classmethod)) else method
        if inspect.isfunction(method):
            return len(inspect.signature(method).parameters) > 1
    return False


def _required_sections(obj):
    """The numpydoc sections the rule of issue 39 (item 4) asks of a public class or
    function, from its signature and its own source:

    - Parameters when it (a class: its __init__) takes a parameter besides self/cls;
    - Returns (or Yields) when a function's own body has ``return <value>`` with a value
      other than None, or a ``yield``;
    - Raises when a function's source has a ``raise`` statement (nested defs included:
      their source is the function's), or a class's source has one in any method;
    - Examples, with a ``>>>`` line, always.
    """
    required = ["Parameters"] if _takes_parameters(obj) else []
    node = _definition(obj)
    if node is not None and not inspect.isclass(obj):
        own = list(_own_nodes(node))
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own) or any(
                isinstance(n, ast.Return) and n.value is not None
                and not (isinstance(n.value, ast.Constant) and n.value.value is None) for n in own):
            required.append("Returns")
    if node is not None and any(isinstance(n, ast.Raise) for n in ast.walk(node)):
        required.append("Raises")
    return required + ["Examples"]


def _missing_sections(obj):
    """The sections of _required_sections that the object's own docstring, parsed by
    numpydoc, lacks or leaves empty ('Returns' is met by a Yields section too)."""
    from numpydoc import docscrape  # in the test extra: the checks must not skip
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpydoc warns of a section it does not know, and drops it
        parsed = docscrape.NumpyDocString(inspect.cleandoc(doc or ""))
    missing = []
    for section in _required_sections(obj):
        if section == "Examples":
            present = any(line.lstrip().startswith(">>>") for line in parsed["Examples"])
        elif section == "Returns":
            present = bool(parsed["Returns"] or parsed["Yields"])
        else:
            present = bool(parsed[section])
        if not present:
            missing.append(section)
    return missing


@pytest.mark.parametrize("obj", PUBLIC_CALLABLES, ids=_label)
def test_every_public_class_and_function_has_its_sections(obj):
    missing = _missing_sections(obj)
    assert not missing, (
        f"{_label(obj)}: its docstring lacks the numpydoc section(s) {', '.join(missing)} "
        f"(the rule is in _required_sections)")


def test_the_section_check_sees_a_missing_section():
    from numpydoc import docscrape  # noqa: F401 (the test extra has it)

    def bare(x):
        """Half of x, checked."""
        if x is None:
            raise ValueError("x is None")
        return x / 2

    def complete(x):
        """Half of x, checked.

        Parameters
        ----------
        x : float
            The number.

        Returns
        -------
        float
            x / 2.

        Raises
        ------
        ValueError
            If x is None.

        Examples
        --------
        >>> complete(3.0)
        1.5
        """
        if x is None:
            raise ValueError("x is None")
        return x / 2

    def generator(n):
        """The numbers below n.

        Parameters
        ----------
        n : int
            The bound.

        Examples
        --------
        The text of an example without a prompt does not count.
        """
        yield from range(n)

    def outer():
        """A function whose only value-returning return is in a nested def.

        Examples
        --------
        >>> outer()
        """
        def inner():
            return 1
        inner()
        return None

    class Checked:
        """A class whose method raises.

        Parameters
        ----------
        n : int
            A number.

        Examples
        --------
        >>> Checked(1).n
        1
        """

        def __init__(self, n):
            self.n = n

        def check(self):
            if self.n < 0:
                raise ValueError("n < 0")

    class Quiet(UserWarning):
        """A warning, built-in __init__.

        Examples
        --------
        >>> Quiet("x").args
        ('x',)
        """

    class Misspelt:
        """A section numpydoc does not know.

        Example
        -------
        >>> Misspelt()
        """

    assert _missing_sections(bare) == ["Parameters", "Returns", "Raises", "Examples"]
    assert _missing_sections(complete) == []
    assert _missing_sections(generator) == ["Returns", "Examples"]
    assert _missing_sections(outer) == []
    assert _missing_sections(Checked) == ["Raises"]
    assert _missing_sections(Quiet) == []
    with pytest.raises(UserWarning, match="Unknown section Example"):
        _missing_sections(Misspelt)
    # the package's own objects: a namedtuple (no source), its fields are its parameters
    assert _required_sections(pysketch.files.Block) == ["Parameters", "Examples"]
    assert "Raises" in _required_sections(pysketch.Sketch)


# ---------------------------------------------------------------------------- the reference

_DIRECTIVE = re.compile(r"^\.\. (automodule|autoclass|autofunction|autodata|autoexception|currentmodule)::\s*(\S+)")


def _resolve(dotted):
    """The object a dotted name names (the longest importable module, then attributes)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def _read_page(path):
    """(summary-table targets, directive targets) of one page, as fully qualified names."""
    current, table, documented = None, [], []
    in_table = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = _DIRECTIVE.match(line)
            if m:
                in_table = False
                directive, target = m.groups()
                if directive in ("automodule", "currentmodule"):
                    current = target
                if directive != "currentmodule":
                    documented.append(target if directive == "automodule" or "." in target
                                      else f"{current}.{target}")
                continue
            if line.startswith(".. autosummary::"):
                in_table = True
                continue
            if in_table:
                if line and not line.startswith(" "):
                    in_table = False
                    continue
                entry = line.strip()
                if not entry or entry.startswith(":"):
                    continue
                entry = entry.lstrip("~")
                relative = f"{current}.{entry}"
                try:
                    _resolve(relative)
                    table.append(relative)
                except (ImportError, AttributeError):
                    table.append(entry)
    return table, documented


def _pages():
    pages = {}
    for f in sorted(os.listdir(API_DIR)):
        if f.endswith(".rst") and f != "index.rst":
            pages[f[:-4]] = _read_page(os.path.join(API_DIR, f))
    return pages


def _same(a, b):
    return a is b if _kind(a) != "data" else (type(a) is type(b) and a == b)


def test_every_public_module_has_a_page_in_the_reference():
    pages = _pages()
    missing = [m for m in PUBLIC_MODULES if m not in pages]
    assert not missing, f"modules with no page in docs/api: {missing}; {HINT}"
    with open(os.path.join(API_DIR, "index.rst"), encoding="utf-8") as f:
        listed = {line.strip() for line in f if line.startswith("   ") and not line.strip().startswith(":")}
    unlisted = [m for m in PUBLIC_MODULES if m not in listed]
    assert not unlisted, f"pages missing from the toctree of docs/api/index.rst: {unlisted}; {HINT}"
    stale = [p for p in pages if p not in PUBLIC_MODULES]
    assert not stale, f"pages of modules that are not public modules: {stale}"


def test_every_public_name_is_in_the_reference():
    pages = _pages()
    documented = {name for _, names in pages.values() for name in names}
    problems = []
    for module_name, name in PUBLIC_NAMES:
        if module_name not in pages:
            problems.append(f"{module_name}: no page")
            continue
        obj = getattr(importlib.import_module(module_name), name)
        table, _ = pages[module_name]
        rows = [t for t in table if t.rpartition(".")[2] == name or (_kind(obj) == "module" and t == obj.__name__)]
        rows = [t for t in rows if _same(_resolve(t), obj)]
        if not rows:
            problems.append(f"{module_name}.{name}: not in the table of docs/api/{module_name}.rst")
        elif not any(t in documented for t in rows):
            problems.append(f"{module_name}.{name}: its row ({rows[0]}) is documented on no page")
    assert not problems, f"{len(problems)} public names missing from the reference: {problems}; {HINT}"


def test_every_reference_entry_names_an_object():
    bad = []
    for page, (table, documented) in _pages().items():
        for target in table + documented:
            try:
                _resolve(target)
            except (ImportError, AttributeError):
                bad.append(f"{page}: {target}")
    assert not bad, f"reference entries that name nothing: {bad}; {HINT}"


def _parameter_mismatch(obj):
    """(undocumented, unknown): the parameters of obj's signature (a class's: its
    constructor's) that its Parameters (or Other Parameters) section does not name, and the
    names that section gives which the signature lacks (allowed only when the signature takes
    **kwargs or *args, whose keywords a docstring may list). Names starting with '_' are not
    the user's (a dataclass's private field)."""
    from numpydoc import docscrape  # in the test extra: the checks must not skip
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # a compiled function without a signature
        return [], []
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = docscrape.NumpyDocString(inspect.cleandoc(doc or ""))
    documented = set()
    for entry in list(parsed["Parameters"]) + list(parsed["Other Parameters"]):
        documented.update(part.strip().lstrip("*") for part in entry.name.split(","))
    kinds = inspect.Parameter
    named = [p.name for p in signature.parameters.values()
             if p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) and not p.name.startswith("_")]
    takes_more = any(p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) for p in signature.parameters.values())
    undocumented = [name for name in named if name not in documented]
    unknown = [] if takes_more else sorted(documented - set(named) - {"args", "kwargs"})
    return undocumented, unknown


@pytest.mark.parametrize("obj", PUBLIC_CALLABLES, ids=_label)
def test_the_parameters_section_names_the_signature(obj):
    undocumented, unknown = _parameter_mismatch(obj)
    assert not undocumented, f"{_label(obj)}: parameters {undocumented} are not in its Parameters section"
    assert not unknown, (f"{_label(obj)}: its Parameters section names {unknown}, which its signature lacks "
                         "(prose placed after the section is read as parameters: move it into Notes)")


def test_the_parameter_check_sees_a_missing_and_an_unknown_name():
    def scale(x, factor=2.0):
        """x times factor.

        Parameters
        ----------
        x : float
            The number.

        A paragraph after the section, which numpydoc reads as one more parameter.
        """
        return x * factor

    def options(x, **kwargs):
        """x and options.

        Parameters
        ----------
        x, colour : object
            The value; colour, a keyword taken by **kwargs.
        """

    undocumented, unknown = _parameter_mismatch(scale)
    assert undocumented == ["factor"] and unknown and unknown[0].startswith("A paragraph")
    assert _parameter_mismatch(options) == ([], [])
