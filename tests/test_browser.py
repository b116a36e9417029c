"""The book as learners see it: every page of _toc.yml opened in headless Chromium.

The built site (_build/html, made by `make book`; `make test` builds it first) is served from
127.0.0.1 and every request that would leave this machine is blocked, so a page that needs a CDN
(MathJax, a web font, a script) fails here exactly as it would for a learner on a train. Each
page is visited once; the tests below check what was recorded:

- it loads with no failed request, no request leaving 127.0.0.1 and no console error;
- MathJax typeset every equation (each `.math` element holds an `mjx-container`, no TeX error,
  no raw `$$`, `\\(` or `\\[` left in the visible text);
- every exercise, solution and hint in the page's source is rendered, and every exercise states
  its difficulty, importance and time budget;
- every hint and every solution starts collapsed and opens on a click;
- every image has loaded (naturalWidth > 0);
- every internal link points at a file of the site, and at an id that exists in it;
- the download button offers the page's source (the .ipynb of a notebook chapter);
- axe-core (npm, pinned by package-lock.json, injected from node_modules/) finds no serious or
  critical violation of the WCAG 2.1 A and AA rules.

A full-page screenshot of each page goes to _build/screenshots/.
"""
from __future__ import annotations

import functools
import html.parser
import http.server
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
# Headless and quiet: no GPU, no QUIC, and none of Chromium's own calls home (updates, sync,
# field trials), which would show up as failed or external requests.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PAGE_TIMEOUT_MS = 60_000
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"  # `npm ci` (make test runs it)
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
AXE_BLOCKING = ("serious", "critical")


# ---------------------------------------------------------------- what the sources promise


def toc_docnames() -> list[str]:
    """Every page of _toc.yml, in reading order (root first)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                names.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("chapters"))
    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
    return [re.sub(r"\.(md|ipynb)$", "", name) for name in names]


def source_path(docname: str) -> Path | None:
    for suffix in (".ipynb", ".md"):
        path = ROOT / f"{docname}{suffix}"
        if path.exists():
            return path
    return None


def markdown_text(path: Path) -> str:
    """The MyST text of a page: a .md file, or a notebook's markdown cells."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        return "\n\n".join(
            "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for cell in cells if cell["cell_type"] == "markdown"
        )
    return path.read_text()


def count_directives(docname: str, name: str) -> int:
    """How many `{name}` (or gated `{name}-start`) directives open a fence in the page source."""
    path = source_path(docname)
    if path is None:
        return 0
    fence = re.compile(rf"^[ \t]*(?:`{{3,}}|:{{3,}})[ \t]*\{{{name}(?:-start)?\}}", re.MULTILINE)
    return len(fence.findall(markdown_text(path)))


def count_hints(docname: str) -> int:
    """`{hint}` directives, and `{admonition}`s whose title starts with "Hint"."""
    path = source_path(docname)
    if path is None:
        return 0
    fence = re.compile(r"^[ \t]*(?:`{3,}|:{3,})[ \t]*\{(?:hint\}|admonition\}[ \t]*Hint)", re.MULTILINE)
    return len(fence.findall(markdown_text(path)))


DOCNAMES = toc_docnames()
DOCNAMES_WITH_EXERCISES = [d for d in DOCNAMES if count_directives(d, "exercise") > 0]
DOCNAMES_WITH_COLLAPSIBLES = [
    d for d in DOCNAMES if count_directives(d, "solution") > 0 or count_hints(d) > 0]


# ---------------------------------------------------------------- serving and browsing


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass


@pytest.fixture(scope="module")
def site_url():
    if not (SITE / "index.html").exists():
        pytest.skip("no built book in _build/html: run `make book` (`make test` builds it first)")
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # port 0: a free port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} not found: install Debian's Chromium with "
            "`apt-get install chromium chromium-driver` (no browser download is needed)"
        )

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@dataclass
class Visit:
    """What one page did in the browser."""

    url: str
    status: int | None = None
    failed_requests: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    math: dict = field(default_factory=dict)
    exercises: list[str] = field(default_factory=list)  # the text of each exercise block
    solutions: list[dict] = field(default_factory=list)
    hints: list[dict] = field(default_factory=list)
    images: list[dict] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    accessibility: list[dict] | None = None  # axe-core's violations; None without axe-core
    wide_code: list[str] = field(default_factory=list)  # code blocks that scroll sideways
    screenshot: Path | None = None


# Every `.math` element must hold typeset output; the text outside code must hold no TeX.
_MATH_JS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const maths = [...document.querySelectorAll('.math')];
  const main = document.querySelector('main') || document.body;
  const clone = main.cloneNode(true);
  clone.querySelectorAll('pre, code, .highlight, mjx-container, script, style')
       .forEach(el => el.remove());
  return {
    mathjax_loaded: Boolean(window.MathJax && MathJax.startup),
    math_elements: maths.length,
    untypeset: maths.filter(el => !el.querySelector('mjx-container'))
                    .map(el => el.textContent.slice(0, 80)),
    containers: document.querySelectorAll('mjx-container').length,
    tex_errors: [...document.querySelectorAll('mjx-merror')].map(el => el.textContent.slice(0, 80)),
    // What a screen reader gets of each equation (MathJax's assistive MathML): a backslash in
    // there is a TeX command MathJax printed as text, such as \\_ inside \\text{...}.
    assistive: document.querySelectorAll('mjx-assistive-mml').length,
    literal_tex: [...document.querySelectorAll('mjx-assistive-mml mtext')]
                 .map(el => el.textContent).filter(t => t.includes('\\\\')),
    text: clone.textContent,
  };
}"""

# Lazy images would never load in a page nobody scrolls: make them eager, then wait for all.
_IMAGES_JS = """async () => {
  const imgs = [...document.querySelectorAll('img')];
  imgs.forEach(img => { img.loading = 'eager'; });
  await Promise.all(imgs.map(img => img.complete ? null : new Promise(done => {
    img.addEventListener('load', done); img.addEventListener('error', done);
    setTimeout(done, 15000);
  })));
  return imgs.map(img => ({src: img.currentSrc || img.src, complete: img.complete,
                           naturalWidth: img.naturalWidth}));
}"""

# A solution's or hint's body is everything but its title. sphinx-togglebutton hides it with
# visibility, opacity and height (not display), so all three count.
_BODY_VISIBLE_JS = """el => [...el.children]
  .filter(child => !child.classList.contains('admonition-title'))
  .some(child => child.checkVisibility({visibilityProperty: true, opacityProperty: true})
                 && child.getBoundingClientRect().height > 0)"""

# Everything a page asks to load by itself, whether or not it was fetched by the time we look.
_RESOURCES_JS = """() => [
  ...[...document.querySelectorAll('script[src]')].map(el => el.src),
  ...[...document.querySelectorAll('link[href]')]
     .filter(el => /stylesheet|preload|icon|font/.test(el.rel)).map(el => el.href),
]"""


# Every WCAG 2.1 A/AA rule, on the page as it first shows (solutions and hints collapsed).
_AXE_JS = """async tags => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                          resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                      targets: v.nodes.slice(0, 3).map(n => n.target.join(' ')),
                                      count: v.nodes.length}));
}"""


# Code and outputs that scroll sideways at the window's width (1280 px): the end of the line hides.
_WIDE_CODE_JS = """() => [...document.querySelectorAll('main pre')]
  .filter(el => el.getClientRects().length && el.scrollWidth > el.clientWidth + 1)
  .map(el => el.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '').slice(0, 100))"""


SOLUTIONS = ".solution.admonition"
HINTS = "[data-test-hint]"
# A hint is a {hint}, or an {admonition} titled "Hint..." (the chapters' way; given a :class:,
# such an admonition carries no class saying so): mark them all for HINTS.
_MARK_HINTS_JS = """() => document.querySelectorAll('.admonition').forEach(el => {
  const title = el.querySelector(':scope > .admonition-title');
  if (el.classList.contains('hint') || (title && /^\\s*Hint/.test(title.textContent))) {
    el.dataset.testHint = '1';
  }
})"""


def open_by_click(page, block) -> dict:
    """Whether a collapsible block starts hidden, and shows its body after a click on its toggle."""
    record = {"title": block.locator(".admonition-title").first.text_content().strip()[:80],
              "hidden_at_first": not block.evaluate(_BODY_VISIBLE_JS),
              "shown_after_click": False}
    button = block.locator("button.toggle-button")
    if button.count() == 0:
        return record  # not collapsible at all
    button.first.click()
    try:  # the toggle animates for 0.3 s
        page.wait_for_function(_BODY_VISIBLE_JS, arg=block.element_handle(), timeout=5_000)
        record["shown_after_click"] = True
    except PlaywrightTimeout:
        pass
    return record


def visit_page(browser, site_url: str, docname: str) -> Visit:
    visit = Visit(url=f"{site_url}/{docname}.html")
    origin = urlsplit(site_url).netloc
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)

    def route(route):
        if urlsplit(route.request.url).netloc == origin or route.request.url.startswith("data:"):
            route.continue_()
        else:
            visit.external_requests.append(route.request.url)
            route.abort()

    page.route("**/*", route)
    page.on("requestfailed", lambda req: visit.failed_requests.append(f"{req.url}: {req.failure}"))
    page.on("response", lambda res: res.status >= 400 and visit.failed_requests.append(
        f"{res.url}: HTTP {res.status}"))
    page.on("console", lambda msg: msg.type == "error" and visit.console_errors.append(msg.text))
    page.on("pageerror", lambda exc: visit.console_errors.append(f"uncaught: {exc}"))
    try:
        response = page.goto(visit.url, wait_until="load")
        visit.status = response.status if response else None
        visit.math = page.evaluate(_MATH_JS)
        visit.images = page.evaluate(_IMAGES_JS)
        visit.exercises = page.eval_on_selector_all(
            ".exercise.admonition", "els => els.map(el => el.textContent)")
        visit.links = page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)")
        visit.resources = page.evaluate(_RESOURCES_JS)
        visit.wide_code = page.evaluate(_WIDE_CODE_JS)
        page.wait_for_load_state("networkidle")
        if AXE.exists():  # injected as inline code: no request, nothing from a CDN
            page.add_script_tag(content=AXE.read_text())
            visit.accessibility = page.evaluate(_AXE_JS, AXE_TAGS)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        visit.screenshot = SCREENSHOTS / f"{docname.replace('/', '__')}.png"
        page.screenshot(path=str(visit.screenshot), full_page=True)
        # Last, because clicking changes the page the screenshot shows.
        visit.solutions = [open_by_click(page, block) for block in page.locator(SOLUTIONS).all()]
        page.evaluate(_MARK_HINTS_JS)
        visit.hints = [open_by_click(page, block) for block in page.locator(HINTS).all()]
    finally:
        context.close()
    return visit


@pytest.fixture(scope="module")
def visits(browser, site_url):
    """One visit per page, made on first use and shared by every test of that page."""
    cache: dict[str, Visit] = {}

    def get(docname: str) -> Visit:
        if docname not in cache:
            cache[docname] = visit_page(browser, site_url, docname)
        return cache[docname]

    return get


# ---------------------------------------------------------------- the site's own files


class _Anchors(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" or (name == "name" and tag == "a"):
                self.ids.add(value)


@functools.lru_cache(maxsize=None)
def anchors_in(path: Path) -> frozenset[str]:
    parser = _Anchors()
    parser.feed(path.read_text(errors="replace"))
    return frozenset(parser.ids)


def site_file(url_path: str) -> Path:
    path = SITE / unquote(url_path).lstrip("/")
    return path / "index.html" if url_path.endswith("/") else path


# ---------------------------------------------------------------- the tests


def test_toc_pages_have_sources():
    missing = [d for d in DOCNAMES if source_path(d) is None]
    assert not missing, f"_toc.yml lists pages with no .md or .ipynb source: {missing}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_loads_offline_without_errors(visits, docname):
    visit = visits(docname)
    assert visit.status == 200, f"{visit.url} answered HTTP {visit.status}"
    assert not visit.external_requests, (
        f"{docname} needs the network (blocked here, as on a closed network): "
        f"{visit.external_requests}")
    assert not visit.failed_requests, f"{docname}: failed requests {visit.failed_requests}"
    assert not visit.console_errors, f"{docname}: console errors {visit.console_errors}"
    origin = urlsplit(visit.url).netloc
    outside = [url for url in visit.resources if urlsplit(url).netloc != origin]
    assert not outside, f"{docname} asks for scripts, styles or fonts from outside the site: {outside}"
    assert visit.screenshot is not None and visit.screenshot.stat().st_size > 0


@pytest.mark.parametrize("docname", DOCNAMES)
def test_math_is_typeset(visits, docname):
    math = visits(docname).math
    if math["math_elements"]:
        assert math["mathjax_loaded"], f"{docname} has equations but MathJax did not load"
        assert not math["untypeset"], f"{docname}: equations MathJax left as TeX: {math['untypeset']}"
    assert not math["tex_errors"], f"{docname}: TeX errors {math['tex_errors']}"
    text = math["text"]
    raw = [token for token in ("$$", "\\(", "\\)", "\\[", "\\]", "\\begin{") if token in text]
    for token in raw:
        at = text.index(token)
        raise AssertionError(
            f"{docname}: raw TeX {token!r} in the visible text: ...{text[max(0, at - 60):at + 60]!r}...")


@pytest.mark.parametrize("docname", DOCNAMES)
def test_no_tex_command_is_shown_as_text(visits, docname):
    math = visits(docname).math
    if math["containers"]:
        assert math["assistive"], f"{docname}: no assistive MathML to read the equations from"
    assert not math["literal_tex"], f"{docname}: TeX shown literally in equations: {math['literal_tex']}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_code_does_not_scroll_sideways(visits, docname):
    """At 1280 px, every code cell and output fits its column (they wrap: book/_static/course.css)."""
    wide = visits(docname).wide_code
    assert not wide, f"{docname}: {len(wide)} code blocks scroll sideways, e.g. {wide[:3]}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_every_exercise_is_rendered(visits, docname):
    visit = visits(docname)
    for kind, expected, found in [
        ("exercise", count_directives(docname, "exercise"), len(visit.exercises)),
        ("solution", count_directives(docname, "solution"), len(visit.solutions)),
        ("hint", count_hints(docname), len(visit.hints)),
    ]:
        assert found == expected, (
            f"{docname}: {expected} {kind} blocks in the source, {found} on the page")


@pytest.mark.parametrize("docname", DOCNAMES_WITH_EXERCISES)
def test_exercises_state_ratings_and_time(visits, docname):
    """Each exercise opens with its difficulty, its importance and a time budget in minutes."""
    unrated = [text.strip()[:60] for text in visits(docname).exercises
               if not ("Difficulty" in text and "Importance" in text
                       and re.search(r"Time\W*~?\s*\d+\s*min", text))]
    assert not unrated, f"{docname}: exercises without Difficulty, Importance and Time ~N min: {unrated}"


@pytest.mark.parametrize("docname", DOCNAMES_WITH_COLLAPSIBLES)
def test_hints_and_solutions_start_collapsed_and_open_on_click(visits, docname):
    visit = visits(docname)
    blocks = visit.solutions + visit.hints
    assert blocks, f"{docname} has hints or solutions in its source but none on the page"
    shown = [b["title"] for b in blocks if not b["hidden_at_first"]]
    assert not shown, f"{docname}: hints or solutions visible before any click: {shown}"
    stuck = [b["title"] for b in blocks if not b["shown_after_click"]]
    assert not stuck, f"{docname}: hints or solutions that a click does not open: {stuck}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_images_load(visits, docname):
    broken = [img["src"] for img in visits(docname).images
              if not img["complete"] or img["naturalWidth"] == 0]
    assert not broken, f"{docname}: images that did not load: {broken}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_internal_links_resolve(visits, site_url, docname):
    visit = visits(docname)
    origin = urlsplit(site_url).netloc
    broken = []
    for href in visit.links:
        url = urlsplit(href)
        if url.scheme not in ("http", "https") or url.netloc != origin:
            continue  # mailto:, and links to papers: outside the site by design
        target = site_file(url.path)
        if not target.is_file():
            broken.append(f"{href}: no file {target.relative_to(SITE)}")
        elif url.fragment and target.suffix == ".html" and unquote(url.fragment) not in anchors_in(target):
            broken.append(f"{href}: no id {unquote(url.fragment)!r} in {target.relative_to(SITE)}")
    assert not broken, f"{docname}: internal links that lead nowhere: {broken}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_download_button_offers_the_source(visits, docname):
    source = source_path(docname)
    assert source is not None, f"{docname} has no source"
    wanted = f"/_sources/{docname}{source.suffix}"
    links = visits(docname).links
    assert any(urlsplit(href).path.endswith(wanted) for href in links), (
        f"{docname}: no download link to {wanted}")


@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_is_accessible(visits, docname):
    visit = visits(docname)
    if visit.accessibility is None:
        pytest.skip(f"no {AXE.relative_to(ROOT)}: run `npm ci` (make test does)")
    blocking = [f"{v['id']} ({v['impact']}, {v['count']} elements): {v['help']}; e.g. {v['targets']}"
                for v in visit.accessibility if v["impact"] in AXE_BLOCKING]
    assert not blocking, f"{docname}: WCAG 2.1 A/AA violations (axe-core):\n" + "\n".join(blocking)
