"""The user guide (docs/guide/), the changelog and the citing page cannot rot.

Read from the sources, without Sphinx: every guide page exists and is in a toctree that the
site reaches from docs/index.rst; every ``pysketch.X`` name a page mentions (in a role such as
{class}`~pysketch.estimators.CompressiveKMeans`, in code, in an import, or in prose) names a
real object; and a role's target is documented in the API reference (docs/api), so that
Sphinx resolves it (docs/conf.py turns an unresolved reference of these pages into a
warning, an error with -W).
"""

import importlib
import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
GUIDE = DOCS / "guide"

#: The pages issue 39 asks for, in the order of the guide's toctree.
GUIDE_PAGES = ("sketch", "kmeans", "pca", "statistics", "distances", "regression", "privacy", "scale_out",
               "embedding", "performance")
#: Pages checked like the guide's (outside docs/guide/).
OTHER_PAGES = ("changelog", "citing")

_ROLE = re.compile(r"\{(?:py:)?(class|func|meth|mod|attr|data|exc|obj)\}`~?([^`<>]+?)`")
_NAME = re.compile(r"(?<![\w.])pysketch(?:\.[A-Za-z_]\w*)+")
_IMPORT = re.compile(r"^[ \t]*(?:>>>|\.\.\.)?[ \t]*from[ \t]+(pysketch(?:\.\w+)*)[ \t]+import[ \t]+"
                     r"(\([^)]*\)|[\w \t,]+)", re.M)
_TOCTREE = re.compile(r"```\{toctree\}\n(.*?)```", re.S)
_RST_TOCTREE = re.compile(r"\.\. toctree::\n((?:[ \t]+.*\n|\n)+)")


def _page(name):
    return GUIDE / f"{name}.md" if name in GUIDE_PAGES or name == "index" else DOCS / f"{name}.md"


def _toctree_entries(text, rst=False):
    entries = []
    for block in (_RST_TOCTREE if rst else _TOCTREE).findall(text):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith(":"):
                entries.append(line)
    return entries


def resolve(dotted):
    """The object a dotted name of pysketch names (its longest importable module, then
    attributes), or raise LookupError naming what is missing."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for i, attr in enumerate(parts[cut:], start=cut):
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                raise LookupError(f"{dotted}: {'.'.join(parts[:i])} has no attribute {attr!r}") from None
        return obj
    raise LookupError(f"{dotted}: no such module")


def names_in(text):
    """Every pysketch name a page mentions: role targets, dotted names anywhere, and the names
    of ``from pysketch... import a, b`` statements (as module.a, module.b)."""
    found = {target.strip() for _, target in _ROLE.findall(text)}
    found |= set(_NAME.findall(text))
    for module, imported in _IMPORT.findall(text):
        names = imported.strip("()").replace("\n", " ").split(",")
        found |= {f"{module}.{name.split(' as ')[0].strip()}" for name in names if name.strip()}
    return {name for name in found if name.split(".")[0] == "pysketch"}


def documented_targets():
    """The modules and objects the API reference documents (automodule, currentmodule and
    auto* directives of docs/api/*.rst), as Sphinx names them: an object under its home
    module, not under a package that re-exports it."""
    done = set()
    for page in (DOCS / "api").glob("*.rst"):
        module = None
        for line in page.read_text().splitlines():
            m = re.match(r"\.\. (automodule|currentmodule|auto\w+)::\s*(\S+)", line)
            if not m:
                continue
            kind, name = m.groups()
            if kind in ("automodule", "currentmodule"):
                module = name
                done.add(name)
            else:
                done.add(name if name.startswith("pysketch.") else f"{module}.{name}")
    return done


def unresolved(text):
    """The names of `text` that name nothing, with the reason."""
    bad = []
    for name in sorted(names_in(text)):
        try:
            resolve(name)
        except LookupError as exc:
            bad.append(str(exc))
    return bad


def undocumented_roles(text, documented):
    """Role targets that Sphinx cannot resolve: neither an object the reference documents nor
    a member defined by a documented class itself (autodoc's :members: documents those, not
    the inherited ones)."""
    bad = []
    for _, target in _ROLE.findall(text):
        target = target.strip()
        parent, _, member = target.rpartition(".")
        if target in documented:
            continue
        if parent in documented:
            try:
                owner = resolve(parent)
            except LookupError:
                owner = None
            if isinstance(owner, type) and member in vars(owner):
                continue
        bad.append(target)
    return bad


@pytest.mark.parametrize("name", GUIDE_PAGES + OTHER_PAGES)
def test_every_page_exists(name):
    assert _page(name).is_file(), f"{_page(name)} is missing"


def test_every_guide_page_is_in_the_guide_toctree_and_the_guide_in_the_site():
    entries = _toctree_entries((GUIDE / "index.md").read_text())
    assert [e for e in entries if e in GUIDE_PAGES] == list(GUIDE_PAGES), entries
    root = _toctree_entries((DOCS / "index.rst").read_text(), rst=True)
    assert root[0] == "guide/index", f"the guide comes first in docs/index.rst's toctree: {root}"
    for name in OTHER_PAGES:
        assert name in root, f"{name} is not in docs/index.rst's toctree"


@pytest.mark.parametrize("name", ("index",) + GUIDE_PAGES + OTHER_PAGES)
def test_every_pysketch_name_on_a_page_resolves(name):
    text = _page(name).read_text()
    assert unresolved(text) == []


@pytest.mark.parametrize("name", ("index",) + GUIDE_PAGES + OTHER_PAGES)
def test_every_role_names_an_object_of_the_reference(name):
    text = _page(name).read_text()
    assert undocumented_roles(text, documented_targets()) == []


def test_the_checks_see_a_misspelt_name():
    # every way a page names an object, each misspelt once
    page = "\n".join([
        "{class}`~pysketch.estimators.CompressiveKMean`",
        ">>> km = pysketch.CompressiveKMeanz(3)",
        ">>> from pysketch.privacy import make_private, BudgetAcountant",
        "the module `pysketch.privcy` holds it",
    ])
    bad = unresolved(page)
    assert len(bad) == 4, bad
    assert undocumented_roles("{func}`pysketch.privacy.budget.make_privte`", documented_targets()) == [
        "pysketch.privacy.budget.make_privte"]
    # and the real names pass, through a re-export too
    assert unresolved("{class}`~pysketch.estimators.CompressiveKMeans` pysketch.CompressiveKMeans "
                      "from pysketch.privacy import make_private, BudgetAccountant") == []
    assert undocumented_roles("{meth}`pysketch.estimators.CompressiveKMeans.predict`",
                              documented_targets()) == []
    # a re-exported name is documented at its home only, and an inherited method not at all
    assert undocumented_roles("{class}`pysketch.CompressiveKMeans` {meth}`pysketch.estimators.CompressiveKMeans.fit_sketch`",
                              documented_targets()) == ["pysketch.CompressiveKMeans",
                                                        "pysketch.estimators.CompressiveKMeans.fit_sketch"]
