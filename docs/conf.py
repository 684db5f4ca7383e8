"""Sphinx configuration of pysketch's documentation.

Build: ``pip install ".[docs]"``, then ``python -m sphinx -W -b html docs docs/_build/html``
(from the repository root; the package must be importable, its compiled core built).
The API reference, docs/api/, is written by docs/apigen.py (see there).
"""

import ast
import importlib
import inspect
import warnings

from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging

import pysketch

project = "pysketch"
author = "The pysketch developers"
copyright = "the pysketch developers"
release = pysketch.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.doctest",
    "myst_parser",
    "matplotlib.sphinxext.plot_directive",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# The gallery (sphinx-gallery): every examples/python/*.py is run at each build and its
# page written to docs/auto_examples/ (generated, not in git). An example that raises stops
# the build (abort_on_example_error), so CI fails on it. The times are written to
# docs/sg_execution_times.rst (an orphan page) and to each example's page. The examples read
# only data that ship inside installed packages: no network. No links to external
# documentation are looked up (reference_url stays empty), so the build needs no network
# either. A later build re-runs only the examples whose source changed (sphinx-gallery keeps
# their checksums in docs/auto_examples/).
sphinx_gallery_conf = {
    "examples_dirs": "../examples/python",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*",         # run every example (the default runs /plot* only)
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "plot_gallery": "True",
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 0,
    "write_computation_times": False,  # its pages load jQuery from a CDN: each example page gives its own time
    "show_memory": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "remove_config_comments": True,
    "download_all_examples": False,
    "reference_url": {},
    "backreferences_dir": None,
    "doc_module": (),
}

# autodoc: members in source order; the reference pages are written by docs/apigen.py, so
# autosummary only draws the summary tables (no stub pages)
autodoc_member_order = "bysource"
autosummary_generate = False

# numpydoc: no method tables inside the class pages (autodoc documents the members)
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# numpydoc reports a docstring it cannot parse (an unknown section, whose text it then
# drops; a wrong underline) as a Python warning, which Sphinx's -W would not see: pass
# those to Sphinx's log as warnings, so that the build with -W fails on them.
_logger = logging.getLogger("pysketch.docs")
_showwarning = warnings.showwarning


def _numpydoc_to_sphinx(message, category, filename, lineno, file=None, line=None):
    if "numpydoc" in filename:
        _logger.warning("numpydoc: %s", message, type="numpydoc")
    else:
        _showwarning(message, category, filename, lineno, file, line)


warnings.showwarning = _numpydoc_to_sphinx
warnings.filterwarnings("always", category=UserWarning, module="numpydoc")



# A constant is documented by a "#:" comment where it is assigned. autodoc reads that comment
# in the module the page documents it in; a constant that module imports (from a private
# module, e.g. pysketch.features.FEATURE_MAPS from pysketch._state) has none there, and
# autodoc would show its type's docstring (str's, tuple's) instead: take the comment from
# the module that assigns it, found by following the "from ... import" statements.
def _assigning_module(module_name, name, seen=()):
    module = importlib.import_module(module_name)
    tree = ast.parse(inspect.getsource(module))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
                isinstance(t, ast.Name) and t.id == name for t in targets):
            return module_name
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            package = module_name if module.__file__.endswith("__init__.py") else module_name.rpartition(".")[0]
            parts = package.split(".")[: len(package.split(".")) - max(node.level - 1, 0)]
            source = ".".join(parts + [node.module or ""]).strip(".") if node.level else node.module
            if source not in seen:
                return _assigning_module(source, name, seen + (module_name,))
    return None


def _constant_doc(app, what, name, obj, options, lines):
    if what != "data":
        return
    module_name, _, attr = name.rpartition(".")
    if ("", attr) in ModuleAnalyzer.for_module(module_name).find_attr_docs():
        return
    source = _assigning_module(module_name, attr)
    comment = ModuleAnalyzer.for_module(source).find_attr_docs().get(("", attr)) if source else None
    lines[:] = list(comment or [])


# The user guide, the changelog and the citing page name the API with roles
# ({class}`pysketch.estimators.CompressiveKMeans`): an unresolved one there is a warning (so an
# error with -W), so that a renamed or removed object breaks the build instead of leaving
# plain text. The API reference keeps Sphinx's default (numpydoc's types are not all objects).
_CHECKED_PAGES = ("guide/", "changelog", "citing")


def _guide_reference(app, env, node, contnode):
    if node.get("refdomain") == "py" and node.get("refdoc", "").startswith(_CHECKED_PAGES):
        _logger.warning("unresolved reference %r (%s role) in a guide page", node.get("reftarget"),
                        node.get("reftype"), location=node, type="guide")
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _constant_doc, priority=400)  # before numpydoc
    app.connect("missing-reference", _guide_reference)


# The guide's pictures are drawn at build time from small seeded computations with pysketch
# (matplotlib's plot directive), so that a picture cannot disagree with the code.
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]
plot_rcparams = {"figure.figsize": (8.0, 3.4), "font.size": 9}

html_theme = "pydata_sphinx_theme"
html_title = f"pysketch {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
# the theme's light/dark switch starts from this mode; without it the page starts with no
# mode and the theme's script logs an error to the browser's console before choosing one
html_context = {"default_mode": "auto"}
