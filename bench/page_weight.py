"""What the views in the page (lab/views.py) add to the chapters' pages, in bytes.

    .venv/bin/python bench/page_weight.py                      # the built book: _build/html/book/*.html
    .venv/bin/python bench/page_weight.py --notebooks /tmp/out/*.ipynb   # executed notebooks instead
    .venv/bin/python bench/page_weight.py --current-assets     # the built pages, with today's scripts and styles

First the assets of book/_static that a view inlines (script, styles, the exported sentence
model), raw and gzipped (what a server that compresses sends). Then, per page: its size, and what
the views add to it: each inlined copy of an asset and each view's data (the weights as JSON),
raw and gzipped; the views' share of the page. Every view carries its own copy of the script and
styles, so that it works alone in a notebook as in the book: the table counts every copy.

``--current-assets`` puts the current book/_static script and styles in place of each copy a built
page carries (whatever version its cached notebook run wrote), and writes each view's data as
lab/views.py writes it now: what the pages will weigh once rebuilt, before rebuilding them (the
notebooks' other outputs as built).

Target (exit 1 when missed): no page gains more than ``MAX_ADDED_KIB`` KiB (raw) from its views.
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "book" / "_static"
ASSETS = ["attention_view.js", "attention_view.css", "sentence_model.js", "sentence_model.json"]
# The views' own inlined scripts and styles (whatever version a cached notebook run wrote), their
# data (the weights as JSON, the exported model) and the tables.
SCRIPTS = re.compile(r"<script>(?:(?!</script>).)*?window\.mha(?:Attention|SentenceModel)(?:(?!</script>).)*</script>", re.S)
STYLES = re.compile(r"<style>(?:(?!</style>).)*?\.mha-attn-box(?:(?!</style>).)*</style>", re.S)
DATA = re.compile(r'<script type="application/json" class="mha-(?:attn-data|lm-model)">(.*?)</script>', re.S)
TABLES = re.compile(r'<style>[^<]*</style><table class="mha-table">.*?</table>', re.S)
MAX_ADDED_KIB = 400


def gz(data: bytes) -> int:
    return len(gzip.compress(data, compresslevel=6, mtime=0))


def page_text(path: Path) -> str:
    """A built page as it is; an executed notebook as the HTML of its outputs."""
    if path.suffix != ".ipynb":
        return path.read_text()
    outputs = [o for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    return "\n".join("".join(o.get("data", {}).get("text/html", "")) for o in outputs)


def added(text: str) -> dict:
    """The bytes of the page that are the views': inlined assets, data, tables."""
    parts = SCRIPTS.findall(text) + STYLES.findall(text) + DATA.findall(text) + TABLES.findall(text)
    blob = "".join(parts).encode()
    return {"raw": len(blob), "gzip": gz(blob), "views": len(DATA.findall(text)), "tables": len(TABLES.findall(text))}


def with_current_assets(text: str) -> str:
    """``text`` with every inlined copy of a view's script and styles replaced by today's, as
    lab/views.py inlines them."""
    sys.path.insert(0, str(ROOT))
    from lab.views import _asset

    def script(match):
        name = "sentence_model.js" if "window.mhaSentenceModel = " in match[0] else "attention_view.js"
        return "<script>" + _asset(STATIC / name) + "</script>"

    styles = "<style>" + _asset(STATIC / "attention_view.css") + "</style>"
    return DATA.sub(data, STYLES.sub(lambda _: styles, SCRIPTS.sub(script, text)))


def data(match) -> str:
    """A view's data as lab/views.py writes it today: each row without its trailing zeros."""
    from lab.views import _script_json

    body = json.loads(match[1])
    for view_input in body.get("inputs", []):
        for heads in view_input["layers"]:
            for matrix in heads:
                for i, row in enumerate(matrix):
                    while row and row[-1] == 0:
                        row.pop()
    return match[0].replace(match[1], _script_json(body)) if "inputs" in body else match[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", nargs="*", type=Path, help="executed notebooks instead of the built pages")
    parser.add_argument("--current-assets", action="store_true",
                        help="replace each inlined copy of the views' script and styles by today's book/_static file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from lab.views import _asset

    print(f"{'asset (book/_static)':<24} {'bytes':>9} {'gzip':>9} {'inlined':>9} {'gzip':>9}")
    for name in ASSETS:
        data, inlined = (STATIC / name).read_bytes(), _asset(STATIC / name).encode()
        print(f"{name:<24} {len(data):>9,} {gz(data):>9,} {len(inlined):>9,} {gz(inlined):>9,}")
    pages = args.notebooks or sorted((ROOT / "_build" / "html" / "book").glob("*.html"))
    if not pages:
        print("no pages: build the book (make book) or pass --notebooks", file=sys.stderr)
        return 1
    print(f"\n{'page':<32} {'page bytes':>11} {'views':>5} {'tables':>6} {'added':>9} {'added gz':>9} {'share':>6}")
    worst = 0
    for path in pages:
        text = page_text(path)
        if args.current_assets:
            text = with_current_assets(text)
        a = added(text)
        if not (a["views"] or a["tables"]):
            continue
        size = len(text.encode())
        worst = max(worst, a["raw"])
        print(f"{path.name:<32} {size:>11,} {a['views']:>5} {a['tables']:>6} {a['raw']:>9,} {a['gzip']:>9,} "
              f"{a['raw'] / size:>6.0%}")
    ok = worst <= MAX_ADDED_KIB * 1024
    print(f"\nlargest addition {worst / 1024:.0f} KiB; target <= {MAX_ADDED_KIB} KiB: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
