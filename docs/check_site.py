"""Check a built HTML site of pysketch's documentation.

    python docs/check_site.py BUILD_DIR             # every internal link, anchor and image
    python docs/check_site.py BUILD_DIR --browser   # also open every page in headless Chromium

The link check reads the HTML files with the standard library only. For every ``href`` and
``src`` of every page (links, images, style sheets, scripts) that does not leave the site
(no scheme such as ``https:`` or ``mailto:``), the file it names must exist in the build,
and a ``#fragment`` must be the ``id`` (or anchor ``name``) of an element of the page it
points to. Sphinx's own ``-W`` catches a reference that names no object; this catches what
it does not: a hand-written link to a page or a heading that is gone, an image a page
shows but the build does not hold, a page of the gallery (auto_examples/plot_*.html) that
shows no figure of its example.

``--browser`` opens every page in headless Chromium (through Selenium and chromedriver:
``pip install selenium``; Debian's packages ``chromium`` and ``chromium-driver``) and
checks what a reader sees: the page finishes loading, its main content is not empty, every
image it shows has loaded with a nonzero size, and the browser's console has no error
(files from outside the site, such as MathJax from its CDN, are listed, not failed: the
check runs without network).
``--screenshots DIR`` also saves a picture of every page there.

Exit status: 0 when every check passes, 1 otherwise (each fault printed on its own line).
"""

import argparse
import os
import sys
import time
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

#: attributes that point at another file, per tag
_LINK_ATTRIBUTES = {"a": "href", "link": "href", "img": "src", "script": "src", "source": "src",
                    "iframe": "src", "area": "href"}


class _Page(HTMLParser):
    """The ids (and anchor names) an HTML page defines and the links it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []  # (tag, target, line)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name" if tag == "a" else None):
            if key and attrs.get(key):
                self.ids.add(attrs[key])
        attribute = _LINK_ATTRIBUTES.get(tag)
        if attribute and attrs.get(attribute) is not None:
            self.links.append((tag, attrs[attribute], self.getpos()[0]))
        if tag == "img" and attrs.get("srcset"):
            for part in attrs["srcset"].split(","):
                if part.strip():
                    self.links.append((tag, part.split()[0], self.getpos()[0]))

    handle_startendtag = handle_starttag


#: folders of a Sphinx build that hold no page of the site (a theme's template copied
#: into _static, say): links are checked into them, not from them
_NOT_PAGES = ("_static", "_sources", "_images", "_downloads")


def html_pages(root):
    """Every page of the site under root (its .html files outside _NOT_PAGES), as paths
    relative to it, sorted."""
    pages = []
    for folder, dirs, files in os.walk(root):
        top = os.path.relpath(folder, root) == "."
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (top and d in _NOT_PAGES))
        pages += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(".html")]
    return sorted(pages)


def _parse(path, cache):
    if path not in cache:
        page = _Page()
        with open(path, encoding="utf-8", errors="replace") as f:
            page.feed(f.read())
        page.close()
        cache[path] = page
    return cache[path]


def check_links(root):
    """The faults of the site built in root: a list of strings, empty when every internal
    link, anchor and image resolves."""
    root = os.path.abspath(root)
    faults = []
    cache = {}
    pages = html_pages(root)
    if not pages:
        return [f"{root}: no HTML page (is this a Sphinx build directory?)"]
    for rel in pages:
        path = os.path.join(root, rel)
        page = _parse(path, cache)
        for tag, target, line in page.links:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith("javascript:"):
                continue  # leaves the site: not checked here (no network in CI)
            file_part = unquote(parts.path)
            where = f"{rel}:{line}: <{tag}> {target!r}"
            if file_part:
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not dest.startswith(root + os.sep) and dest != root:
                    faults.append(f"{where} points outside the site")
                    continue
                if os.path.isdir(dest):
                    dest = os.path.join(dest, "index.html")
                if not os.path.isfile(dest):
                    faults.append(f"{where}: no such file in the build")
                    continue
            else:
                dest = path
            fragment = unquote(parts.fragment)
            if fragment and dest.endswith(".html") and fragment not in _parse(dest, cache).ids:
                faults.append(f"{where}: {os.path.relpath(dest, root)} has no element with id {fragment!r}")
        if _is_gallery_example(rel) and not any(
                tag == "img" and os.path.basename(target).startswith(_GALLERY_FIGURE) for tag, target, _ in page.links):
            faults.append(f"{rel}: a gallery example's page shows no figure ({_GALLERY_FIGURE}*.png)")
    return faults


#: sphinx-gallery's pages of examples, and the prefix of the figures it saves from them
_GALLERY_DIR, _GALLERY_FIGURE = "auto_examples", "sphx_glr_"


def _is_gallery_example(rel):
    folder, name = os.path.split(rel)
    return folder == _GALLERY_DIR and name.startswith("plot_") and name.endswith(".html")


# A page's state after loading, read in the browser: whether it finished, the length of
# its main content's text, and the images that did not load (their sources).
_PAGE_STATE_JS = """
const main = document.querySelector('main, article, [role=main]') || document.body;
const broken = Array.from(document.images)
    .filter(img => img.getAttribute('src') && !(img.complete && img.naturalWidth > 0))
    .map(img => img.getAttribute('src'));
return [document.readyState, (main.innerText || '').trim().length, broken, document.title];
"""


def check_in_browser(root, screenshots=None):
    """Open every page of the site in root in headless Chromium; the list of faults."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000",
                     "--allow-file-access-from-files"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})
    binary = next((b for b in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(b)), None)
    if binary:
        options.binary_location = binary
    driver_path = next((p for p in ("/usr/bin/chromedriver",) if os.path.exists(p)), None)
    service = Service(driver_path) if driver_path else Service()
    driver = webdriver.Chrome(options=options, service=service)
    faults = []
    offline = set()
    root = os.path.abspath(root)
    try:
        driver.set_page_load_timeout(60)
        for rel in html_pages(root):
            driver.get("file://" + os.path.join(root, rel))
            deadline = time.monotonic() + 30.0
            while True:  # get() returns at the load event; a page still loading is given 30 s
                state, text_length, broken, title = driver.execute_script(_PAGE_STATE_JS)
                if state == "complete" or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if state != "complete":
                faults.append(f"{rel}: did not finish loading ({state})")
            if text_length == 0 and rel not in ("search.html",):
                faults.append(f"{rel}: the page's main content is empty")
            if not title:
                faults.append(f"{rel}: no title")
            faults += [f"{rel}: image {src!r} did not load" for src in broken]
            for entry in driver.get_log("browser"):
                message = str(entry.get("message", entry))
                if message.startswith(("http://", "https://")) and "net::ERR_" in message:
                    offline.add(message.split()[0])  # a file from outside the site (MathJax's)
                else:
                    faults.append(f"{rel}: console error: {message}")
            if screenshots:
                os.makedirs(screenshots, exist_ok=True)
                driver.save_screenshot(os.path.join(screenshots, rel.replace(os.sep, "__")[:-5] + ".png"))
    finally:
        driver.quit()
    for url in sorted(offline):  # not a fault of the site: the check runs without network
        print(f"browser: not loaded (no network here): {url}")
    return faults


def main(argv=None):
    parser = argparse.ArgumentParser(description="Check a built HTML site: internal links, anchors, images; "
                                     "optionally every page in headless Chromium.")
    parser.add_argument("build_dir", help="the HTML build directory (sphinx -b html's output)")
    parser.add_argument("--browser", action="store_true", help="also open every page in headless Chromium")
    parser.add_argument("--screenshots", metavar="DIR", help="with --browser: save a picture of every page in DIR")
    args = parser.parse_args(argv)
    pages = html_pages(args.build_dir)
    faults = check_links(args.build_dir)
    print(f"links: {len(pages)} pages checked, {len(faults)} faults")
    if args.browser:
        browser_faults = check_in_browser(args.build_dir, args.screenshots)
        print(f"browser: {len(pages)} pages opened, {len(browser_faults)} faults")
        faults += browser_faults
    for fault in faults:
        print(fault)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
