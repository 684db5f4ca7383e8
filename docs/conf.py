"""Sphinx configuration of pysketch's documentation.

Build: ``pip install ".[docs]"``, then ``python -m sphinx -W -b html docs docs/_build/html``
(from the repository root; the package must be importable, its compiled core built).
The API reference, docs/api/, is written by docs/apigen.py (see there).
"""

import warnings

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
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

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

html_theme = "pydata_sphinx_theme"
html_title = f"pysketch {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
