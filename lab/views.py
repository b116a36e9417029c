"""Views in the page: attention weights to explore with the mouse or the keyboard, the sentence
model running in the browser, and results as tables instead of printed text.

``show_attention(weights, tokens)`` shows any attention weights, your own layer's included: pick
a layer and a head, hover or focus a token, and each head's weights from it (its query row) or
to it (its key column) show as bars, with the largest spelled out as text. ``show_inputs`` does
the same for several inputs (or several versions of a model) to choose from.
``show_sentence_model()`` runs chapter 8's sentence model in the page (the weights exported by
``scripts/export_sentence_model.py``). ``table(header, rows)`` is a rendered table.

Each returns an object that Jupyter and the book draw as HTML: the data as JSON inside the
output, and the script and styles of ``book/_static/`` inlined with it, so a view works in a
notebook, in the published book and offline (nothing loads from the network). Strings you pass
(tokens, labels) are shown as text, never run as HTML.
"""
from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

STATIC = Path(__file__).resolve().parents[1] / "book" / "_static"
VIEW_JS, VIEW_CSS = STATIC / "attention_view.js", STATIC / "attention_view.css"
MODEL_JS, MODEL_JSON = STATIC / "sentence_model.js", STATIC / "sentence_model.json"
MAX_TOKENS = 512  # a view draws a cell per token per head: more is unreadable and slow
MAX_VALUES = 1_000_000  # weights in one view (all inputs): about 8 MB of JSON at most
MAX_TOKEN_CHARS = 40
TABLE_CSS = (".mha-table{border-collapse:collapse;font-size:0.9rem;margin:0.5rem 0}"
             ".mha-table th,.mha-table td{border:1px solid #8a8a8a;padding:0.15rem 0.45rem;text-align:left}"
             ".mha-table caption{caption-side:top;text-align:left;font-weight:bold;padding-bottom:0.2rem}")
DECIMALS = 5  # weights are written rounded to 1e-5: the page shows them to within 5e-6


class Rendered:
    """HTML for Jupyter and the book (``_repr_html_``), and a plain-text stand-in elsewhere."""

    def __init__(self, markup: str, text: str):
        self.html, self.text = markup, text

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


def _asset(path: Path) -> str:
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the views need the course's book/_static folder "
                                f"(a full checkout of the course, not only its Python package)")
    return path.read_text()


def _script_json(value) -> str:
    """JSON that can sit inside <script>: no "</" can close the element early."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def _as_layers(weights, where: str) -> np.ndarray:
    """``(Lq, Lk)``, ``(H, Lq, Lk)`` or ``(layers, H, Lq, Lk)`` -> float64 ``(layers, H, L, L)``."""
    if hasattr(weights, "detach"):  # a torch tensor, without importing torch here
        weights = weights.detach().cpu().numpy()
    array = np.asarray(weights, dtype=np.float64)
    if array.ndim == 2:
        array = array[None, None]
    elif array.ndim == 3:
        array = array[None]
    elif array.ndim != 4:
        raise ValueError(f"{where}: weights of shape {array.shape}; expected (L, L), (heads, L, L) or "
                         f"(layers, heads, L, L) (for your layer's (B, H, L, L), pass one item: weights[0])")
    if array.shape[-1] != array.shape[-2]:
        raise ValueError(f"{where}: weights of shape {array.shape} are not square in their last two axes "
                         f"(queries and keys must be the same tokens here)")
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        raise ValueError(f"{where}: weights hold {len(bad)} NaN or infinite values, the first at index "
                         f"{tuple(int(i) for i in bad[0])}")
    return array


def _tokens(tokens, length: int, where: str) -> list[str]:
    if isinstance(tokens, str):
        tokens = list(tokens)  # a string: one token per character
    if hasattr(tokens, "tolist"):
        tokens = tokens.tolist()
    tokens = [str(t) for t in tokens]
    if len(tokens) != length:
        raise ValueError(f"{where}: {len(tokens)} tokens for weights over {length} positions")
    if length > MAX_TOKENS:
        raise ValueError(f"{where}: {length} tokens; a view shows at most {MAX_TOKENS}")
    long = [t for t in tokens if len(t) > MAX_TOKEN_CHARS]
    if long:
        raise ValueError(f"{where}: tokens longer than {MAX_TOKEN_CHARS} characters: {long[0][:MAX_TOKEN_CHARS]!r}...")
    return tokens


def _input(label, weights, tokens, removed=(), layer_names=None, head_names=None) -> tuple[dict, int]:
    """One input of a view, as the page reads it, and its number of weights."""
    where = f"input {label!r}"
    array = _as_layers(weights, where)
    layers, heads, length = array.shape[0], array.shape[1], array.shape[-1]
    if array.size > MAX_VALUES:  # before any copy into Python lists
        raise ValueError(f"{where}: {array.size:,} weights; a view shows at most {MAX_VALUES:,}")
    layer_names = list(layer_names) if layer_names is not None else [f"layer {l}" for l in range(layers)]
    if head_names is None:
        head_names = [[f"{layer_names[l]}, head {h}" if layers > 1 else f"head {h}" for h in range(heads)]
                      for l in range(layers)]
    if len(layer_names) != layers or len(head_names) != layers or any(len(n) != heads for n in head_names):
        raise ValueError(f"{where}: names for {len(layer_names)} layers and {[len(n) for n in head_names]} heads, "
                         f"weights for {layers} layers of {heads} heads")
    removed = [[int(l), int(h)] for l, h in removed]
    outside = [r for r in removed if not (0 <= r[0] < layers and 0 <= r[1] < heads)]
    if outside:
        raise ValueError(f"{where}: removed heads {outside} are not among {layers} layers of {heads} heads")
    tokens = _tokens(tokens, length, where)
    return {"label": str(label), "tokens": tokens,
            "layers": np.round(array, DECIMALS).tolist(), "layer_names": [str(n) for n in layer_names],
            "head_names": [[str(n) for n in names] for names in head_names], "removed": removed}, array.size


def _view(sized: list[tuple[dict, int]], title: str) -> Rendered:
    if not sized:
        raise ValueError("no input to show")
    inputs, size = [i for i, _ in sized], sum(n for _, n in sized)
    if size > MAX_VALUES:
        raise ValueError(f"{size:,} weights in one view; at most {MAX_VALUES:,} (show fewer tokens or layers)")
    data = {"title": str(title), "inputs": inputs}
    first = inputs[0]
    text = (f"attention view {title!r}: {len(inputs)} input(s); the first, {first['label']!r}, has "
            f"{len(first['tokens'])} tokens, {len(first['layers'])} layer(s) of {len(first['layers'][0])} head(s)")
    markup = (f"<style>{_asset(VIEW_CSS)}</style>\n"
              f'<div class="mha-attn"><script type="application/json" class="mha-attn-data">{_script_json(data)}'
              f"</script><p>{html.escape(text)} (the interactive view needs JavaScript)</p></div>\n"
              f"<script>{_asset(VIEW_JS)}</script>")
    return Rendered(markup, text)


def show_attention(weights, tokens, *, title="Attention weights", removed=(), layer_names=None,
                   head_names=None) -> Rendered:
    """An interactive view of ``weights`` over ``tokens``.

    ``weights``: a NumPy array or torch tensor of shape ``(L, L)`` (one head), ``(H, L, L)`` (the
    heads of one layer: ``weights[0]`` of your layer's ``(B, H, L, L)``) or ``(layers, H, L, L)``;
    row ``i`` is query ``i``'s distribution over the keys. ``tokens``: ``L`` labels (a string
    gives one per character). ``removed``: ``(layer, head)`` pairs marked as removed."""
    return _view([_input("input", weights, tokens, removed, layer_names, head_names)], title)


def show_inputs(inputs: Sequence[Mapping], *, title="Attention weights") -> Rendered:
    """One view, several inputs to choose from: each a mapping with ``label``, ``weights``,
    ``tokens`` and optionally ``removed``, ``layer_names``, ``head_names`` (as ``show_attention``)."""
    return _view([_input(i["label"], i["weights"], i["tokens"], i.get("removed", ()), i.get("layer_names"),
                         i.get("head_names")) for i in inputs], title)


def show_sentence_model(prompt: str = "the ", count: int = 60) -> Rendered:
    """Chapter 8's sentence model in the page: type a prompt, pick greedy or a temperature, and
    read the text it writes with the attention of every step."""
    body = json.loads(_asset(MODEL_JSON))
    unknown = sorted(set(prompt) - set(body["alphabet"]))
    if unknown:
        raise ValueError(f"the prompt has characters outside the model's alphabet {body['alphabet']!r}: {unknown}")
    if not 1 <= count < body["context"] - len(prompt) + 1:
        raise ValueError(f"count={count}: the prompt and the new characters must fit the {body['context']} positions")
    text = (f"the sentence model ({body['parameters']:,} parameters) runs here in the browser: "
            f"prompt {prompt!r}, {count} new characters")
    markup = (f"<style>{_asset(VIEW_CSS)}</style>\n"
              f'<div class="mha-lm" data-prompt="{html.escape(prompt)}" data-count="{int(count)}">'
              f'<script type="application/json" class="mha-lm-model">{_script_json(body)}</script>'
              f"<p>{html.escape(text)} (this needs JavaScript)</p></div>\n"
              f"<script>{_asset(VIEW_JS)}</script>\n<script>{_asset(MODEL_JS)}</script>")
    return Rendered(markup, text)


def table(header: Sequence[str], rows: Sequence[Sequence], caption: str | None = None) -> Rendered:
    """A table of results: HTML with a header row (and a caption) in the page, aligned text elsewhere."""
    header = [str(h) for h in header]
    rows = [[str(c) for c in row] for row in rows]
    wrong = [i for i, row in enumerate(rows) if len(row) != len(header)]
    if wrong:
        raise ValueError(f"rows {wrong} have another number of cells than the header's {len(header)}")
    cells = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    caption_html = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    markup = (f"<style>{TABLE_CSS}</style>"
              f'<table class="mha-table">{caption_html}<thead><tr>{cells}</tr></thead>'
              f"<tbody>{body}</tbody></table>")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in [header, *rows]]
    text = "\n".join(([caption] if caption else []) + lines)
    return Rendered(markup, text)
