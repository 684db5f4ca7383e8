"""The example gallery (examples/python, issue 39 item 3), read without running it.

The documentation build runs every example (sphinx-gallery, docs/conf.py); this test only
reads their sources, so it is fast and needs neither matplotlib nor the data packages. It
checks what a gallery page needs and what the build's rules are:

- at least MIN_EXAMPLES examples, files named plot_*.py;
- each starts with a docstring whose first lines are a title underlined with '=' (the
  page's title in sphinx-gallery), followed by a paragraph of text;
- each makes a figure: it calls a plotting function of matplotlib (plt.subplots, imshow,
  plot, scatter, ...) and plt.show() or savefig;
- each reads only data that ship inside installed packages: no URL, no scikit-learn
  ``fetch_*`` loader (which downloads), no urllib / requests / http import, no
  ``download`` call.
"""

import ast
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
GALLERY = REPO / "examples" / "python"
MIN_EXAMPLES = 8

#: matplotlib calls that draw (a figure or axes, or something on them)
PLOT_CALLS = {"subplots", "figure", "plot", "scatter", "imshow", "errorbar", "bar", "barh", "hist",
              "fill_between", "contour", "contourf", "pcolormesh", "matshow", "step", "loglog", "semilogx",
              "semilogy"}
SHOW_CALLS = {"show", "savefig"}
NETWORK_MODULES = {"urllib", "urllib2", "urllib3", "requests", "http", "httpx", "aiohttp", "socket", "ftplib"}

pytestmark = pytest.mark.skipif(not GALLERY.is_dir(), reason="no examples/python next to the tests")


def _examples():
    return sorted(GALLERY.glob("plot_*.py"))


def _calls(tree):
    """The names of the attributes and functions called anywhere in the module."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute):
                names.add(f.attr)
            elif isinstance(f, ast.Name):
                names.add(f.id)
    return names


def _imports_matplotlib(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "matplotlib" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "matplotlib":
            return True
    return False


def title_problem(source):
    """Why the module's docstring is not a gallery title and text; None when it is."""
    doc = ast.get_docstring(ast.parse(source), clean=True)
    if not doc:
        return "no module docstring"
    lines = doc.splitlines()
    if len(lines) < 4:
        return "the docstring needs a title, its '=' underline, a blank line and a text"
    title, underline = lines[0].strip(), lines[1].strip()
    if not title or not re.fullmatch(r"=+", underline) or len(underline) < len(title):
        return f"the docstring's first line must be a title underlined with '=' at least as long: {lines[:2]}"
    if lines[2].strip() or not " ".join(lines[3:]).strip():
        return "the title must be followed by a blank line and a paragraph of text"
    return None


def figure_problem(source):
    """Why the module draws no figure; None when it does."""
    tree = ast.parse(source)
    calls = _calls(tree)
    if not _imports_matplotlib(tree):
        return "does not import matplotlib"
    if not calls & PLOT_CALLS:
        return f"calls none of matplotlib's plotting functions {sorted(PLOT_CALLS)}"
    if not calls & SHOW_CALLS:
        return "neither plt.show() nor savefig(): sphinx-gallery would still scrape, but a reader running it sees nothing"
    return None


def data_problem(source):
    """Why the module may read data from the network; None when it reads bundled data only."""
    if re.search(r"\b(?:https?|ftp)://", source):
        return "holds a URL"
    tree = ast.parse(source)
    calls = _calls(tree)
    fetchers = sorted(c for c in calls if c.startswith("fetch_") or "download" in c.lower())
    if fetchers:
        return f"calls {fetchers} (scikit-learn's fetch_* loaders download their data)"
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            names += [a.name for a in node.names if a.name.startswith("fetch_")]
        bad = sorted(n for n in names if n.split(".")[0] in NETWORK_MODULES or n.split(".")[-1].startswith("fetch_"))
        if bad:
            return f"imports {bad}"
    return None


def test_the_gallery_has_enough_examples():
    found = _examples()
    assert len(found) >= MIN_EXAMPLES, f"{len(found)} examples in {GALLERY}, at least {MIN_EXAMPLES} wanted"
    stray = sorted(p.name for p in GALLERY.glob("*.py") if not p.name.startswith("plot_"))
    assert not stray, f"gallery sources must be named plot_*.py: {stray}"
    assert (GALLERY / "GALLERY_HEADER.rst").is_file() or (GALLERY / "README.txt").is_file()


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.name)
def test_each_example_has_a_title_a_figure_and_bundled_data(path):
    source = path.read_text(encoding="utf-8")
    for check in (title_problem, figure_problem, data_problem):
        problem = check(source)
        assert problem is None, f"{path.name}: {problem}"


def test_the_checks_refuse_what_they_must():
    good = '"""\nA title\n=======\n\nSome text.\n"""\nimport matplotlib.pyplot as plt\n' \
           'from sklearn.datasets import load_digits\nfig, ax = plt.subplots()\nax.plot([1, 2])\nplt.show()\n'
    assert title_problem(good) is None and figure_problem(good) is None and data_problem(good) is None
    # no figure: matplotlib never imported or nothing drawn
    no_figure = good.replace("fig, ax = plt.subplots()\nax.plot([1, 2])\nplt.show()\n", "print(1)\n")
    assert figure_problem(no_figure)
    assert figure_problem(good.replace("import matplotlib.pyplot as plt\n", "import numpy as plt\n"))
    # no title, or a title without its underline
    assert title_problem("import numpy\n")
    assert title_problem('"""\nA title\n\nSome text.\n"""\n')
    assert title_problem('"""\nA long title\n=====\n\nSome text.\n"""\n')
    # data from the network
    assert data_problem(good.replace("load_digits", "fetch_openml"))
    assert data_problem(good + "import urllib.request\n")
    assert data_problem(good + "X = read('https://example.org/data.csv')\n")
    assert data_problem(good + "import pooch\npooch.retrieve\nx = thing.download()\n")
