"""Sphinx extension: what the course site needs beyond Jupyter Book 1's configuration.

Citations read "Vaswani et al. (2017)" and "(Dao et al., 2022; Shazeer, 2019)": an author-year
style with round brackets, registered here as `author_year_round` (sphinxcontrib-bibtex ships
only square brackets).

And the scripts each page loads, fixed for reading offline. Two things Jupyter Book 1 (with
Sphinx 7.4) gets wrong, both seen by tests/test_browser.py in a real browser:

- sphinx-togglebutton and sphinx-thebe add their inline configuration scripts after the HTML
  builder has started, and Sphinx then lists each of them twice (once as filename None, once as
  ''). The second `const THEBE_JS_URL = ...` is a SyntaxError in every page's console.
- sphinx-thebe points at a script on unpkg.com. Thebe (live code in the page) needs the network,
  so its assets are dead weight and the only CDN address in a page.

And the bibliography's ARIA roles. Docutils writes each entry as `<div role="doc-biblioentry">`
inside `<div role="list">`: a deprecated role (DPUB-ARIA 1.1), and a list with no list items,
which screen readers cannot announce (axe-core: aria-deprecated-role, aria-required-children).
Each entry becomes a `listitem`, as DPUB-ARIA 1.1 says to write it.

And two buttons of the theme whose accessible name leaves out text they show, so that someone
who speaks to the browser cannot say what they see (axe-core: label-content-name-mismatch, WCAG
2.5.3): the search button shows "Search Ctrl+K" and is named "Search" (it is named by what it shows
now, with aria-keyshortcuts); the colour-mode button, named "Color mode", draws its icons' titles
("Light", "Dark") as text (they go: the button's tooltip names it). Both buttons exist only where
JavaScript runs (class pst-js-only), so a script fixes them there.

And the toggle of a code cell tagged `hide-input` (its code folded under its output): MyST-NB
names its `<summary>` "Toggle hidden content" while it shows "Show code cell source", so the
name is dropped and the summary is named by what it shows (axe-core: label-content-name-mismatch).

And the launch buttons (Colab, Binder, a JupyterHub) of the chapters, from `course_hosting` in
_config.yml: shown only when its `release_url` is set (the chapters' first cell installs the
course's package from there on a hosted kernel), so an offline build has none.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import sphinxcontrib.bibtex.plugin
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")")


def _round_semicolons() -> BracketStyle:
    # "(Dao et al., 2022; Shazeer, 2019)": with commas the authors and years would run together.
    return BracketStyle(left="(", right=")", sep="; ")


@dataclass
class RoundAuthorYearStyle(AuthorYearReferenceStyle):
    bracket_parenthetical: BracketStyle = field(default_factory=_round_semicolons)
    bracket_textual: BracketStyle = field(default_factory=_round)
    bracket_author: BracketStyle = field(default_factory=_round)
    bracket_label: BracketStyle = field(default_factory=_round)
    bracket_year: BracketStyle = field(default_factory=_round)


sphinxcontrib.bibtex.plugin.register_plugin(
    "sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYearStyle
)


HOSTING_KEYS = ("release_url", "repository_url", "branch", "binderhub_url", "colab_url", "jupyterhub_url")
_GITHUB_RELEASE = re.compile(r"(https://github\.com/[^/]+/[^/]+)/releases/")


def launch_options(hosting: dict) -> dict:
    """The theme options (sphinx-book-theme) for the launch buttons: none without a release_url."""
    unknown = set(hosting) - set(HOSTING_KEYS)
    if unknown:
        raise ValueError(f"course_hosting in _config.yml: unknown keys {sorted(unknown)}; "
                         f"known: {list(HOSTING_KEYS)}")
    if not (hosting.get("release_url") or "").strip():
        return {}
    repository = (hosting.get("repository_url") or "").strip()
    if not repository:
        github = _GITHUB_RELEASE.match(hosting["release_url"].strip())
        if not github:
            raise ValueError("course_hosting in _config.yml: set repository_url (the launch buttons "
                             "open the chapters from it); release_url is not a GitHub release")
        repository = github[1]
    buttons = {key: hosting.get(key) or "" for key in ("binderhub_url", "colab_url", "jupyterhub_url")}
    return {
        "repository_url": repository.rstrip("/"),
        "repository_branch": hosting.get("branch") or "main",
        "path_to_docs": "",  # the book's root is the repository's: pages are book/NN_name
        "launch_buttons": {**{k: v for k, v in buttons.items() if v}, "notebook_interface": "jupyterlab"},
    }


def add_launch_buttons(app, config):
    try:
        options = launch_options(config.course_hosting or {})
    except ValueError as error:
        from sphinx.errors import ConfigError
        raise ConfigError(str(error)) from None
    if options:
        config.html_theme_options = {**config.html_theme_options, **options}


def _is_thebe(asset) -> bool:
    return "thebe" in str(asset.filename or "") or "THEBE_JS_URL" in asset.attributes.get("body", "")


def _key(asset):
    return (str(asset.filename or ""), tuple(sorted(asset.attributes.items())))


def fix_page_assets(app, pagename, templatename, context, doctree):
    kept, seen = [], set()
    for asset in context.get("script_files", []):
        if _is_thebe(asset) or _key(asset) in seen:
            continue
        seen.add(_key(asset))
        kept.append(asset)
    context["script_files"] = kept
    context["css_files"] = [css for css in context.get("css_files", []) if not _is_thebe(css)]


def fix_bibliography_roles(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = context["body"].replace('role="doc-biblioentry"', 'role="listitem"')


def fix_folded_code_names(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = context["body"].replace('<summary aria-label="Toggle hidden content">', "<summary>")


_BUTTON_NAMES_JS = """document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".search-button-field").forEach(button => {
    button.removeAttribute("aria-label");
    button.setAttribute("aria-keyshortcuts", "Control+K");
  });
  // Decoration, whether Font Awesome has already turned each <i title> into an <svg role="img">
  // with a <title>, or does it later (it copies the <i>'s attributes).
  document.querySelectorAll(".theme-switch-button .theme-switch").forEach(icon => {
    icon.setAttribute("aria-hidden", "true");
    icon.removeAttribute("title");
    icon.removeAttribute("aria-labelledby");
    icon.querySelectorAll("title").forEach(title => title.remove());
  });
});"""


def setup(app):
    app.add_config_value("course_hosting", {}, "html", [dict])
    app.connect("config-inited", add_launch_buttons)
    # Late, so that per-page scripts added by other extensions are seen too.
    app.connect("html-page-context", fix_page_assets, priority=900)
    app.connect("html-page-context", fix_bibliography_roles)
    app.connect("html-page-context", fix_folded_code_names)
    app.add_js_file(None, body=_BUTTON_NAMES_JS)
    # Bump env_version when the citations or their HTML change: Sphinx then re-reads and re-writes
    # every page (it cannot see a change in this file's code; cached pages would keep the old HTML).
    return {"env_version": 4, "parallel_read_safe": True, "parallel_write_safe": True}
