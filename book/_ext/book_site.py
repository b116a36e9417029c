"""Sphinx extension: what the course site needs beyond Jupyter Book 1's configuration.

Citations read "Vaswani et al. (2017)" and "(Dao et al., 2022; Shazeer, 2019)": an author-year
style with round brackets, registered here as `author_year_round` (sphinxcontrib-bibtex ships
only square brackets).

And the scripts each page loads, fixed for reading offline. Two things Jupyter Book 1 (with
Sphinx 7.4) gets wrong, both seen by tests/test_browser.py in a real browser:

- sphinx-togglebutton and sphinx-thebe add their inline configuration scripts after the HTML
  builder has started, and Sphinx then lists each of them twice (once as filename None, once as
  ''). The second `const THEBE_JS_URL = ...` is a SyntaxError in every page's console.
- sphinx-thebe points at a script on unpkg.com. The book has no launch buttons (Binder and
  Thebe need the network), so its assets are dead weight and the only CDN address in a page.
"""
from __future__ import annotations

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


def setup(app):
    # Late, so that per-page scripts added by other extensions are seen too.
    app.connect("html-page-context", fix_page_assets, priority=900)
    # Bump env_version when the citation style changes: Sphinx then re-reads every page (it
    # cannot see a change in this file's code, and cached pages would keep the old citations).
    return {"env_version": 2, "parallel_read_safe": True, "parallel_write_safe": True}
