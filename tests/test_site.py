"""The published site (`make site`: the built book as one folder for any static host) reads offline.

The folder is made here by the Makefile's own copy step (`make site-copy`, from the current
_build/html; `make test` builds the book first), then every HTML and CSS file in it is read:

- nothing a page loads (script, stylesheet, icon, image, font, frame, media) comes from outside
  the folder: no http(s) or protocol-relative address. Hyperlinks (<a href>) to papers and to the
  hosted-notebook services are fine: following one is the reader's choice;
- every relative address, loaded or linked, names a file inside the folder.
"""
from __future__ import annotations

import html.parser
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build" / "html"

# Attributes that make the browser fetch something, by tag.
LOADED = {"script": ("src",), "img": ("src", "srcset"), "source": ("src", "srcset"), "iframe": ("src",),
          "video": ("src", "poster"), "audio": ("src",), "track": ("src",), "embed": ("src",),
          "object": ("data",), "input": ("src",), "image": ("href", "xlink:href"), "use": ("href", "xlink:href")}
LOADED_LINK_RELS = {"stylesheet", "icon", "shortcut", "apple-touch-icon", "preload", "modulepreload",
                    "prefetch", "manifest", "mask-icon"}
LINKED = {"a": ("href",), "area": ("href",), "link": ("href",)}
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""")
NOT_A_FILE = ("data:", "mailto:", "javascript:", "tel:", "blob:", "about:")


class _Refs(html.parser.HTMLParser):
    """(loaded?, tag, address) for every address in a page, and the CSS of its <style> blocks."""

    def __init__(self):
        super().__init__()
        self.refs: list[tuple[bool, str, str]] = []
        self.css: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        attrs = {k: v or "" for k, v in attrs}
        rels = set(attrs.get("rel", "").lower().split())
        for name in LOADED.get(tag, ()):
            for value in _addresses(name, attrs.get(name)):
                self.refs.append((True, tag, value))
        if tag == "link":
            for value in _addresses("href", attrs.get("href")):
                self.refs.append((bool(rels & LOADED_LINK_RELS), tag, value))
        elif tag in LINKED:
            for value in _addresses("href", attrs.get("href")):
                self.refs.append((False, tag, value))
        if tag == "base" and attrs.get("href"):
            self.refs.append((True, tag, attrs["href"]))  # a <base> would move every relative link
        if "style" in attrs:
            self.css.append(attrs["style"])
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.css.append(data)


def _addresses(attribute: str, value: str | None) -> list[str]:
    if not value:
        return []
    if attribute == "srcset":  # "a.png 1x, b.png 2x"
        return [part.split()[0] for part in value.split(",") if part.strip()]
    return [value.strip()]


def _outside(address: str) -> bool:
    return address.startswith("//") or urlsplit(address).scheme in ("http", "https", "ftp")


def _resolves(site: Path, page: Path, address: str) -> bool:
    url = urlsplit(address)
    if url.scheme or url.netloc or address.startswith(NOT_A_FILE):
        return True  # not a file of the site
    if not url.path:
        return True  # "#section" or "?q": the page itself
    target = (page.parent / unquote(url.path)).resolve()
    if url.path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target.is_relative_to(site.resolve()) and target.is_file()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if not (BUILD / "index.html").exists():
        pytest.skip("no built book in _build/html: run `make book` (`make test` builds it first)")
    folder = tmp_path_factory.mktemp("site") / "site"
    result = subprocess.run(["make", "-s", "--no-print-directory", "site-copy", f"SITE_DIR={folder}"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"make site-copy failed:\n{result.stdout}\n{result.stderr}"
    return folder


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_site_is_a_complete_folder(site):
    assert (site / "index.html").is_file() and (site / ".nojekyll").is_file()
    assert not (site / ".buildinfo").exists()
    pages = {p.relative_to(site).as_posix() for p in _pages(site)}
    assert {"book/intro.html", "book/01_attention.html", "book/references.html"} <= pages, sorted(pages)


def test_nothing_is_loaded_from_outside_the_folder(site):
    found = []
    for page in _pages(site):
        parser = _Refs()
        parser.feed(page.read_text(errors="replace"))
        found += [f"{page.relative_to(site)}: <{tag}> {address}"
                  for loaded, tag, address in parser.refs if loaded and _outside(address)]
        for css in parser.css:
            found += [f"{page.relative_to(site)}: inline CSS {m[0] or m[1]}"
                      for m in CSS_URL.findall(css) if _outside(m[0] or m[1])]
    for sheet in sorted(site.rglob("*.css")):
        found += [f"{sheet.relative_to(site)}: {m[0] or m[1]}"
                  for m in CSS_URL.findall(sheet.read_text(errors="replace")) if _outside(m[0] or m[1])]
    assert not found, "the site loads from outside its folder:\n" + "\n".join(found[:30])


def test_every_relative_address_names_a_file_of_the_folder(site):
    broken = []
    for page in _pages(site):
        parser = _Refs()
        parser.feed(page.read_text(errors="replace"))
        broken += [f"{page.relative_to(site)}: <{tag}> {address}"
                   for _, tag, address in parser.refs if not _resolves(site, page, address)]
    for sheet in sorted(site.rglob("*.css")):
        for m in CSS_URL.findall(sheet.read_text(errors="replace")):
            if not _resolves(site, sheet, m[0] or m[1]):
                broken.append(f"{sheet.relative_to(site)}: {m[0] or m[1]}")
    assert not broken, "relative addresses that lead nowhere:\n" + "\n".join(broken[:30])


def test_the_checks_see_outside_loads_and_broken_links(tmp_path):
    """The parser above is what the tests rely on: it must catch each kind of fault."""
    page = tmp_path / "p.html"
    (tmp_path / "here.css").write_text("")
    parser = _Refs()
    parser.feed('<link rel="stylesheet" href="https://cdn.example.org/x.css"><img srcset="a.png 1x, '
                '//cdn.example.org/b.png 2x"><a href="https://arxiv.org/abs/1706.03762">paper</a>'
                '<link rel="stylesheet" href="here.css"><a href="gone.html#x">x</a>'
                '<div style="background: url(https://cdn.example.org/bg.png)"></div>')
    outside = [address for loaded, _, address in parser.refs if loaded and _outside(address)]
    assert outside == ["https://cdn.example.org/x.css", "//cdn.example.org/b.png"]
    assert [m[0] for m in CSS_URL.findall(parser.css[0])] == ["https://cdn.example.org/bg.png"]
    assert [a for _, _, a in parser.refs if not _resolves(tmp_path, page, a)] == ["a.png", "gone.html#x"]
