"""docs/check_site.py, the link check CI runs on the built documentation: it passes a
site whose links resolve and names every kind of broken link."""

import importlib.util
import os

import pytest

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO_DIR, "docs", "check_site.py")

pytestmark = pytest.mark.skipif(not os.path.isfile(SCRIPT), reason="no docs/check_site.py next to the tests")


def _checker():
    spec = importlib.util.spec_from_file_location("check_site", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _site(root, pages):
    for rel, body in pages.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8") if isinstance(body, str) else path.write_bytes(body)


GOOD = {
    "index.html": '<html><head><link href="_static/a.css" rel="stylesheet"></head><body>'
                  '<a href="guide/page.html#choices">a heading</a> <a href="#top" id="top">top</a>'
                  '<a href="https://example.org/x">outside</a> <a href="mailto:a@b.c">mail</a>'
                  '<a href="guide/">a folder</a> <img src="_images/fig.png"></body></html>',
    "guide/page.html": '<html><body><h2 id="choices">Choices</h2><a href="../index.html">up</a>'
                       '<a name="old-anchor"></a><a href="#old-anchor">old</a></body></html>',
    "guide/index.html": "<html><body>guide</body></html>",
    "_static/a.css": "body {}",
    "_static/theme-template.html": '<link href="{{ pathto(\'x\') }}">',  # not a page: not read
    "_images/fig.png": b"\x89PNG",
}


def test_a_site_whose_links_resolve_passes(tmp_path):
    _site(tmp_path, GOOD)
    check = _checker()
    assert check.html_pages(tmp_path) == ["guide/index.html", "guide/page.html", "index.html"]
    assert check.check_links(tmp_path) == []
    assert check.main([str(tmp_path)]) == 0


@pytest.mark.parametrize("page, fault", [
    ('<a href="gone.html">', "gone.html': no such file in the build"),  # a page that is gone
    ('<a href="guide/page.html#renamed">', "guide/page.html has no element with id 'renamed'"),  # a heading
    ('<a href="#nowhere">', "index.html has no element with id 'nowhere'"),  # an anchor on the page itself
    ('<img src="_images/missing.png">', "missing.png': no such file in the build"),  # a figure not made
    ('<script src="_static/missing.js"></script>', "missing.js': no such file in the build"),
    ('<a href="../../etc/passwd">', "points outside the site"),
])
def test_each_kind_of_broken_link_is_named(tmp_path, page, fault):
    pages = dict(GOOD)
    pages["index.html"] = GOOD["index.html"].replace("</body>", page + "</body>")
    _site(tmp_path, pages)
    faults = _checker().check_links(tmp_path)
    assert len(faults) == 1 and fault in faults[0] and faults[0].startswith("index.html:"), faults
    assert _checker().main([str(tmp_path)]) == 1


def test_an_empty_build_is_a_fault(tmp_path):
    assert "no HTML page" in _checker().check_links(tmp_path)[0]


def test_a_gallery_page_without_its_figure_is_a_fault(tmp_path):
    pages = dict(GOOD)
    pages["_images/sphx_glr_plot_map_001.png"] = b"\x89PNG"
    pages["auto_examples/plot_map.html"] = '<html><body><img src="../_images/sphx_glr_plot_map_001.png"></body></html>'
    pages["auto_examples/plot_bare.html"] = '<html><body>text, no figure</body></html>'
    pages["auto_examples/index.html"] = '<html><body>the gallery</body></html>'  # not an example
    _site(tmp_path, pages)
    faults = _checker().check_links(tmp_path)
    assert faults == ["auto_examples/plot_bare.html: a gallery example's page shows no figure (sphx_glr_*.png)"]
