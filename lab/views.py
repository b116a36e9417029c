"""Views in the page: attention weights to explore with the mouse or the keyboard, the sentence
model running in the browser, and results as tables instead of printed text.

``show_attention(weights, tokens)`` shows any attention weights, your own layer's included: pick
a layer and a head, pin a token (click, or Enter), and each head's weights from it (its query row)
or to it (its key column) show as bars, with the largest spelled out as text; the chosen head is
drawn whole as a query x key matrix (every cell readable), next to thumbnails of every layer and
head, and as a table on demand. ``show_inputs`` does the same for several inputs (or several
versions of a model) to choose from. ``show_sentence_model()`` runs chapter 8's sentence model in
the page (the weights exported by ``scripts/export_sentence_model.py``). ``table(header, rows)``
is a rendered table.

For your own language model (``lab.language_model.CausalLM``), in Python: ``next_tokens(model,
ids, step, temperature)`` is the table of the most likely next tokens at T = 1 and at T that the
page shows under its text, and ``score_steps(model, ids, layer, head, query, key)`` takes one
attention score apart (q . k, / sqrt(d_k), the row's softmax) as the page does for a pinned cell.

Each returns an object that Jupyter and the book draw as HTML: the data as JSON inside the
output, and the script and styles of ``book/_static/`` inlined with it, so a view works in a
notebook, in the published book and offline (nothing loads from the network). Strings you pass
(tokens, labels) are shown as text, never run as HTML.
"""
from __future__ import annotations

import copy
import html
import json
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

STATIC = Path(__file__).resolve().parents[1] / "book" / "_static"
VIEW_JS, VIEW_CSS = STATIC / "attention_view.js", STATIC / "attention_view.css"
MODEL_JS, MODEL_JSON = STATIC / "sentence_model.js", STATIC / "sentence_model.json"
MAX_TOKENS = 512  # a view draws a cell per token per head: more is unreadable and slow
MAX_VALUES = 1_000_000  # weights in one view (all inputs): about 8 MB of JSON at most
MAX_TOKEN_CHARS = 40
# Colours of its own, light or under a dark theme (the book's, JupyterLab's), as the views':
# a theme's table colours (light cells in the dark) would leave its caption unreadable.
TABLE_CSS = (".mha-table{border-collapse:collapse;font-size:0.9rem;margin:0.5rem 0;color:#1a1a1a;background:#fff}"
             "html[data-theme=dark] .mha-table,body[data-jp-theme-light=false] .mha-table{color:#ececec;background:#16191d}"
             ".mha-table th,.mha-table td{border:1px solid #8a8a8a;padding:0.15rem 0.45rem;text-align:left;"
             "color:inherit;background:inherit}"
             ".mha-table caption{caption-side:top;text-align:left;font-weight:bold;padding-bottom:0.2rem;color:inherit}")
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
    """A script or styles of book/_static as a view inlines them: without their comments (whole-line
    ones, the block ones that start a line), indentation and blank lines, which every view's copy
    would otherwise carry again; the code itself is unchanged."""
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the views need the course's book/_static folder "
                                f"(a full checkout of the course, not only its Python package)")
    text = path.read_text()
    if path.suffix == ".css":
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    elif path.suffix == ".js":
        text = re.sub(r"(?ms)^[ \t]*/\*.*?\*/[ \t]*\n", "", text)
    else:
        return text
    lines = (line.strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line and not line.startswith("//"))


def _script_json(value) -> str:
    """JSON that can sit inside <script>: no "</" can close the element early."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def _numpy(weights) -> np.ndarray:
    if hasattr(weights, "detach"):  # a torch tensor, without importing torch here
        weights = weights.detach().cpu().numpy()
    return np.asarray(weights, dtype=np.float64)


def _as_layers(weights, where: str, item=None) -> np.ndarray:
    """``(Lq, Lk)``, ``(H, Lq, Lk)``, a batch ``(B, H, Lq, Lk)`` with ``item``, or a list of layers
    (each ``(H, L, L)``, or ``(B, H, L, L)`` with ``item``, as a model's ``last_weights``)
    -> float64 ``(layers, H, L, L)``."""
    if isinstance(weights, (list, tuple)) and weights and all(hasattr(w, "shape") for w in weights):
        layers = [_as_layers(w, f"{where}, layer {l}", item) for l, w in enumerate(weights)]
        if not layers or len({a.shape for a in layers}) != 1:
            raise ValueError(f"{where}: a list of layers must hold at least one layer, all of one shape; got "
                             f"{[a.shape[1:] for a in layers]}")
        total = sum(a.size for a in layers)
        if total > MAX_VALUES:  # before the layers are copied into one array
            raise ValueError(f"{where}: {total:,} weights; a view shows at most {MAX_VALUES:,}")
        return np.concatenate(layers)
    array = _numpy(weights)
    if array.ndim == 4:  # a batch, as a layer returns it: one item of it is shown, never B "layers"
        if item is None:
            raise ValueError(f"{where}: weights of shape {array.shape} are a batch (B, H, L, L): pass item= to say "
                             f"which of the {array.shape[0]} to show (for several layers, pass a list of them, "
                             f"e.g. model.last_weights with item=0)")
        if not -array.shape[0] <= item < array.shape[0]:
            raise ValueError(f"{where}: item={item}, but the batch has {array.shape[0]} items")
        array = array[item]
    elif item is not None and array.ndim != 4:
        raise ValueError(f"{where}: item={item} selects from a batch (B, H, L, L); these weights have shape {array.shape}")
    if array.ndim == 2:
        array = array[None, None]
    elif array.ndim == 3:
        array = array[None]
    else:
        raise ValueError(f"{where}: weights of shape {array.shape}; expected (L, L), (heads, L, L), a batch "
                         f"(B, H, L, L) with item=, or a list of layers")
    if array.shape[-1] != array.shape[-2]:
        raise ValueError(f"{where}: weights of shape {array.shape} are not square in their last two axes "
                         f"(queries and keys must be the same tokens here)")
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        raise ValueError(f"{where}: weights hold {len(bad)} NaN or infinite values, the first at index "
                         f"{tuple(int(i) for i in bad[0])}")
    return array


def _scale(array: np.ndarray, where: str) -> dict | None:
    """None for rows of probabilities; else a warning and the span the bars must show."""
    sums = array.sum(-1)
    negative, above, off = int((array < -1e-6).sum()), int((array > 1 + 1e-6).sum()), int((np.abs(sums - 1) > 1e-4).sum())
    if not (negative or above or off):
        return None
    lo, hi = min(0.0, float(array.min())), max(1.0, float(array.max()))
    said = ", ".join(part for part in (f"{off} rows do not sum to 1" if off else "",
                                       f"{negative} weights are negative" if negative else "",
                                       f"{above} weights are above 1" if above else "") if part)
    warnings.warn(f"{where}: these weights are not probabilities ({said}); the view's bars span {lo:.3g} to {hi:.3g}",
                  stacklevel=4)
    return {"lo": lo, "hi": hi, "note": f"These weights are not probabilities ({said}): a full box spans "
                                        f"{lo:.3g} to {hi:.3g}, bars rise or fall from 0 (negative ones in another colour)."}


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


def _input(label, weights, tokens, removed=(), layer_names=None, head_names=None, item=None) -> tuple[dict, int]:
    """One input of a view, as the page reads it, and its number of weights."""
    where = f"input {label!r}"
    array = _as_layers(weights, where, item)
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
    data = {"label": str(label), "tokens": tokens, "layers": _trimmed(np.round(array, DECIMALS)), "layer_names": [str(n) for n in layer_names],
            "head_names": [[str(n) for n in names] for names in head_names], "removed": removed}
    scale = _scale(array, where)
    if scale:
        data["scale"] = scale
    return data, array.size


def _trimmed(array: np.ndarray) -> list:
    """Nested lists of ``array`` (layers, H, L, L), each row without its trailing zeros (a causal
    row ends in them; the page pads the rows back to L)."""
    nonzero = array != 0
    ends = np.where(nonzero.any(-1), array.shape[-1] - np.argmax(nonzero[..., ::-1], axis=-1), 0)
    return [[[row[:end] for row, end in zip(matrix.tolist(), matrix_ends.tolist())]
             for matrix, matrix_ends in zip(heads, heads_ends)] for heads, heads_ends in zip(array, ends)]


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
                   head_names=None, item=None) -> Rendered:
    """An interactive view of ``weights`` over ``tokens``.

    ``weights``: a NumPy array or torch tensor of shape ``(L, L)`` (one head), ``(H, L, L)`` (the
    heads of one layer), your layer's batch ``(B, H, L, L)`` with ``item=`` (which one to show), or
    a list of layers (each ``(H, L, L)``, or ``(B, H, L, L)`` with ``item=``: a model's
    ``last_weights``); row ``i`` is query ``i``'s distribution over the keys (other numbers are
    shown, with a warning, on a scale that holds them). ``tokens``: ``L`` labels (a string gives one
    per character). ``removed``: ``(layer, head)`` pairs marked as removed."""
    return _view([_input("input", weights, tokens, removed, layer_names, head_names, item)], title)


def show_inputs(inputs: Sequence[Mapping], *, title="Attention weights") -> Rendered:
    """One view, several inputs to choose from: each a mapping with ``label``, ``weights``,
    ``tokens`` and optionally ``removed``, ``layer_names``, ``head_names``, ``item`` (as
    ``show_attention``)."""
    return _view([_input(i["label"], i["weights"], i["tokens"], i.get("removed", ()), i.get("layer_names"),
                         i.get("head_names"), i.get("item")) for i in inputs], title)


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


def _ids(ids, alphabet):
    if isinstance(ids, str):
        from lab import sentences

        alphabet = alphabet or sentences.ALPHABET
        unknown = sorted(set(ids) - set(alphabet))
        if unknown:
            raise ValueError(f"characters outside the alphabet {alphabet!r}: {unknown}")
        return [alphabet.index(c) for c in ids]
    ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    if ids and isinstance(ids[0], list):
        if len(ids) != 1:
            raise ValueError(f"ids: a batch of {len(ids)} sequences; pass one")
        ids = ids[0]
    if not ids:
        raise ValueError("ids: an empty sequence")
    return [int(i) for i in ids]


def _float64_pass(model, ids):
    """``model`` (a copy, in float64, left as it was) on ``ids``: the logits (L, V) and the copy."""
    import torch

    twin = copy.deepcopy(model).double().eval()
    with torch.no_grad():
        logits = twin(torch.tensor([ids]))[0]
    return logits, twin


def next_tokens(model, ids, step: int = -1, temperature: float = 1.0, k: int = 5, alphabet: str | None = None) -> Rendered:
    """The ``k`` most likely tokens after position ``step`` of ``ids`` (a list, a tensor, or a
    string of ``alphabet``, the sentence model's by default), at T = 1 and at ``temperature``:
    ``softmax(logits / T)`` of your model, computed in float64 as the page does. The rendered table
    has ``.rows``: ``(token id, character, p at T = 1, p at T)``, most likely first."""
    import torch

    from lab import sentences

    if not temperature > 0:
        raise ValueError(f"temperature={temperature}: a number above 0 (greedy decoding takes the first row)")
    ids = _ids(ids, alphabet)
    if not -len(ids) <= step < len(ids):
        raise ValueError(f"step={step}: the sequence has {len(ids)} positions")
    step %= len(ids)
    logits, _ = _float64_pass(model, ids[:step + 1])
    p1, pt = torch.softmax(logits[step], -1), torch.softmax(logits[step] / temperature, -1)
    order = sorted(range(len(p1)), key=lambda i: (-float(p1[i]), i))[:k]
    alphabet = alphabet or sentences.ALPHABET
    names = [alphabet[i] if i < len(alphabet) else str(i) for i in order]
    rows = [(i, name, float(p1[i]), float(pt[i])) for i, name in zip(order, names)]
    rendered = table(["next", "p at T = 1", f"p at T = {temperature:g}"],
                     [[repr(name), f"{a:.4f} {'█' * round(20 * a)}", f"{b:.4f} {'█' * round(20 * b)}"]
                      for _, name, a, b in rows],
                     caption=f"The {k} most likely tokens after position {step} "
                             f"({''.join(alphabet[i] if i < len(alphabet) else '?' for i in ids[max(0, step - 11):step + 1])!r})")
    rendered.rows = rows
    return rendered


def score_steps(model, ids, layer: int, head: int, query: int, key: int) -> dict:
    """One attention score of your ``CausalLM`` taken apart, in float64 (as the page does for a
    pinned cell): ``q . k`` of ``head`` in ``layer``, ``/ sqrt(d_k)``, the scores of the query's row
    (keys ``0..query``), their softmax. ``weight_in_model`` is the weight your layer itself gave."""
    import torch

    ids = _ids(ids, None)
    if not 0 <= key <= query < len(ids):
        raise ValueError(f"query={query}, key={key}: need 0 <= key <= query < {len(ids)} (later keys are masked)")
    captured = {}
    twin = copy.deepcopy(model).double().eval()
    block = twin.blocks[layer]
    hook = block.norm1.register_forward_hook(lambda module, args, out: captured.setdefault("h", out))
    try:
        with torch.no_grad():
            twin(torch.tensor([ids]))
            h = captured["h"][0]
            q, k = block.attn.W_q(h), block.attn.W_k(h)
    finally:
        hook.remove()
    dk = twin.d_model // twin.num_heads
    part = slice(head * dk, (head + 1) * dk)
    qks = (k[:query + 1, part] @ q[query, part]).tolist()
    scores = [s / dk ** 0.5 for s in qks]
    weights = torch.softmax(torch.tensor(scores, dtype=torch.float64), -1).tolist()
    return {"dk": dk, "qk": qks[key], "scaled": scores[key], "scores": scores, "weights": weights,
            "weight": weights[key], "weight_in_model": float(twin.last_weights[layer][0, head, query, key])}


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
