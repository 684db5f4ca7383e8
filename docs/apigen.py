"""Write the API reference pages of docs/api/ from the package's public modules.

A public module is pysketch or any of its modules and subpackages whose dotted name has no
part starting with '_'; its public names are those of its ``__all__``. Each module gets one
page, docs/api/<module>.rst: the module's docstring, a summary table of every name of its
``__all__``, and the full documentation (autodoc) of the names whose home it is. A name
re-exported by several modules (``pysketch.Sketch`` is ``pysketch.sketch.Sketch``) is
documented once, at its home, and the other tables link there, so that every object has one
target for cross-references. The home of a class or function is the public module it is
defined in when that module lists it, else the deepest public module that lists it (a name
defined in a private module); the home of a constant is the public module that assigns it,
else the deepest that lists it.

Run ``python docs/apigen.py`` after adding a public module or name (tests/test_docs.py
fails until the reference has it); the pages may then be edited by hand (prose, order),
as long as every name stays in its module's table and is documented at its home.
"""

import ast
import importlib
import inspect
import os
import pkgutil
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
API_DIR = os.path.join(DOCS, "api")
PACKAGE = "pysketch"


def public_modules():
    """The names of the public modules, the package first, then in alphabetical order."""
    pkg = importlib.import_module(PACKAGE)
    names = [
        info.name
        for info in pkgutil.walk_packages(pkg.__path__, PACKAGE + ".")
        if not any(part.startswith("_") for part in info.name.split("."))
    ]
    return [PACKAGE] + sorted(names)


def public_names(module_name):
    """The names of a module's ``__all__`` (none for a module without one)."""
    return list(getattr(importlib.import_module(module_name), "__all__", ()))


def _assigned_names(module):
    """The names a module's source assigns at its top level."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return set()
    names = set()
    for node in ast.parse(source).body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
    return names


def kind(obj):
    """'module', 'exception', 'class', 'function' or 'data'."""
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isroutine(obj):
        return "function"
    return "data"


def homes(modules=None):
    """{(module, name): home module} for every public name of every public module."""
    modules = public_modules() if modules is None else modules
    listed = {}  # key of an object -> the modules that list it
    keys = {}
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            obj = getattr(module, name)
            if kind(obj) == "data":
                key = ("data", name, id(obj))
            else:
                key = ("object", id(obj))
            keys[module_name, name] = key
            listed.setdefault(key, []).append(module_name)
    out = {}
    for (module_name, name), key in keys.items():
        candidates = listed[key]
        obj = getattr(importlib.import_module(module_name), name)
        if kind(obj) == "module":
            out[module_name, name] = obj.__name__
            continue
        if kind(obj) == "data":
            defined = [m for m in candidates if name in _assigned_names(importlib.import_module(m))]
        else:
            defined = [m for m in candidates if m == getattr(obj, "__module__", None)]
        if defined:
            out[module_name, name] = defined[0]
        else:
            out[module_name, name] = max(candidates, key=lambda m: (m.count("."), m))
    return out


def _title(text, char):
    return [text, char * len(text), ""]


_DIRECTIVES = {
    "class": ["autoclass", ["members"]],
    "exception": ["autoexception", ["members"]],
    "function": ["autofunction", []],
    "data": ["autodata", []],
}


def page(module_name, home_of):
    """The text of a module's page."""
    module = importlib.import_module(module_name)
    names = public_names(module_name)
    lines = [".. This page was written by docs/apigen.py; see its docstring.", ""]
    lines += _title(f"``{module_name}``", "=")
    lines += [f".. automodule:: {module_name}", "", f".. currentmodule:: {module_name}", ""]
    if not names:
        lines += ["This module has no ``__all__``: none of its names is public.", ""]
        return "\n".join(lines)
    lines += [".. autosummary::", ""]
    for name in names:
        home = home_of[module_name, name]
        target = home if kind(getattr(module, name)) == "module" else f"{home}.{name}"
        if home == module_name:
            lines.append(f"   {name}")
        elif target.startswith(module_name + "."):  # autosummary wants it relative to the page's module
            lines.append(f"   ~{target[len(module_name) + 1:]}")
        else:
            lines.append(f"   ~{target}")
    lines.append("")
    for name in names:
        obj = getattr(module, name)
        if home_of[module_name, name] != module_name or kind(obj) == "module":
            continue
        directive, options = _DIRECTIVES[kind(obj)]
        lines.append(f".. {directive}:: {name}")
        lines += [f"   :{option}:" for option in options]
        if kind(obj) == "data" and not isinstance(obj, (bool, int, float, str, tuple)):
            lines.append("   :no-value:")
        lines.append("")
    return "\n".join(lines)


def index(modules):
    lines = [".. This page was written by docs/apigen.py; see its docstring.", ""]
    lines += _title("API reference", "=")
    lines += [
        "One page per public module: its docstring, a table of every name of its ``__all__``,",
        "and the documentation of the names it defines. A name that several modules export",
        "(``pysketch.Sketch`` is ``pysketch.sketch.Sketch``) is documented on one page, and",
        "the other tables link to it.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
    ]
    lines += [f"   {m}" for m in modules]
    lines.append("")
    return "\n".join(lines)


def write(api_dir=API_DIR):
    """(Re)write every page; returns the paths written."""
    modules = public_modules()
    home_of = homes(modules)
    os.makedirs(api_dir, exist_ok=True)
    written = []
    texts = {"index": index(modules)}
    texts.update({m: page(m, home_of) for m in modules})
    for stem, text in texts.items():
        path = os.path.join(api_dir, stem + ".rst")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    return written


if __name__ == "__main__":
    paths = write(sys.argv[1] if len(sys.argv) > 1 else API_DIR)
    print(f"wrote {len(paths)} pages")
