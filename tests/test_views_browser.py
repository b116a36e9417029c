"""The views of lab/views.py in Chromium (Playwright, Debian's /usr/bin/chromium, as
tests/test_browser.py drives it), on a page made here from the same files the book inlines, opened
from disk in a context with the network off (Playwright's ``offline``, and every http(s) request
aborted and recorded). One browser for the module, one page for most tests:

- the sentence model in the page writes, greedily, the tokens Python's ``generate`` writes, for
  five prompts; and the weights shown for a pinned token are the model's (an uncached forward pass
  in torch) to 1e-4, from and to the token, every layer and head;
- its next-token probabilities (top 5, at T = 1 and at T) are Python's ``lab.views.next_tokens``
  to 1e-5 for 5 prompts and 3 temperatures, and one score taken apart (q . k, / sqrt(d_k), the
  row's softmax) is ``lab.views.score_steps``'s;
- the form forgives: no browser validation blocks a value, the page names each problem (the
  alphabet listed), fields that do not apply are ignored, empty ones take the default the label
  states, an error clears the stale view, and the view's layer, head and direction survive;
- a pinned token stays pinned while the mouse moves; the keyboard alone pins a cell of the matrix,
  reads its weight and releases it; every weight can be read as text, the scale is stated;
- a view of given weights shows those weights; whitespace tokens are visible, labels never run
  together, tokens and bars stay in the same columns at 375 px; a batch needs item=, weights that
  are not probabilities are drawn on a scale that holds them;
- axe-core finds no violation (any impact) of WCAG 2.1 A/AA, light and dark; an unchecked radio is
  not drawn as a disc in the dark; Tab alone reaches every control; a hostile token is only text.

The same checks on the built chapters (chapters 3, 5 and 8 in _build/html, `make book`) run when
that build exists. Screenshots go to _build/screenshots/views-*.png (375 px, 200 % zoom, dark).
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from lab import sentences, views

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import AXE, AXE_TAGS, CHROMIUM, CHROMIUM_ARGS, ROOT, SCREENSHOTS  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import train_sentences  # noqa: E402
from solutions import language_model as ref  # noqa: E402

PROMPTS = ["the ", "two dogs ", "a small cat near the ", "the old foxes with a bird ", "a girl"]
NEW_TOKENS = 60
TOLERANCE = 1e-4
HOSTILE = "</script><img src=x onerror=__pwned=1>"
BUILT_CHAPTERS = ["book/03_heads", "book/05_looking_at_heads", "book/08_language_model"]
SITE = ROOT / "_build" / "html"

# The displayed weights of every head panel, by (layer, head): [key index, weight] for every cell.
_SHOWN_JS = """root => JSON.stringify([...root.querySelectorAll('.mha-attn-head')].map(panel => ({
  layer: Number(panel.dataset.layer), head: Number(panel.dataset.head),
  weights: [...panel.querySelectorAll('.mha-attn-cell')].map(c => Number(c.dataset.weight)),
  text: panel.querySelector('.mha-attn-top').textContent})))"""


# Each thumbnail clicked in turn: [layer, head, [query, key, weight] of every cell of the matrix shown],
# as one JSON string (Playwright's own transfer of nested arrays is ten times slower).
_MATRICES_JS = """root => JSON.stringify([...root.querySelectorAll('.mha-attn-thumb')].map(thumb => { thumb.click();
  return [Number(thumb.dataset.layer), Number(thumb.dataset.head),
          [...root.querySelectorAll('.mha-attn-matrix [role=gridcell]')].map(
            c => [Number(c.dataset.q), Number(c.dataset.k), Number(c.dataset.weight)])]; }))"""


@pytest.fixture(scope="module")
def sentence_model():
    torch.set_num_threads(1)
    model = train_sentences.build()
    model.load_state_dict(torch.load(train_sentences.WEIGHTS, weights_only=True))
    return model.eval()


@pytest.fixture(scope="module")
def example_weights():
    """Two layers of three heads over 7 tokens, rows summing to one, causal."""
    generator = torch.Generator().manual_seed(5)
    scores = torch.randn(2, 3, 7, 7, generator=generator, dtype=torch.float64)
    scores = scores.masked_fill(~torch.ones(7, 7, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1).numpy()


# The book's theme in the dark (pydata-sphinx-theme: html[data-theme=dark] sets color-scheme: dark).
THEME = ("<style>html[data-theme=dark]{color-scheme:dark;background:#14181e;color:#ced6dd}"
         "html[data-theme=dark] a{color:#9dbcff}</style>")
WHITESPACE = ["a", "\n", "\t", "long-label", "another-long", " ", "b"]


@pytest.fixture(scope="module")
def test_page(example_weights):
    tokens = ["the", " cat", HOSTILE, " dog", ".", " a", "end"]
    induction_like = np.tril(np.random.default_rng(0).random((2, 4, 64, 64)))
    induction_like /= induction_like.sum(-1, keepdims=True)
    with pytest.warns(UserWarning, match="not probabilities"):
        odd = views.show_attention(np.array([[1.0, 0.0, 0, 0, 0, 0, 0]] * 7) * np.linspace(-1, 2, 7), WHITESPACE,
                                   title="Scores, not weights, over whitespace tokens")._repr_html_()
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>views</title>', THEME,
        "</head><body><main>",
        "<h1>The course's views</h1>",
        views.show_sentence_model("the ", NEW_TOKENS)._repr_html_(),
        views.show_inputs([{"label": "given weights", "weights": list(example_weights), "tokens": tokens, "removed": [(1, 2)]},
                           {"label": "the same, first layer only", "weights": example_weights[0], "tokens": tokens}],
                          title="A view of given weights")._repr_html_(),
        views.show_attention(list(induction_like[:, None]), [str(n % 50) for n in range(64)], item=0,
                             title="Sixty-four numbered tokens")._repr_html_(),
        odd,
        views.table(["seed", "loss"], [[0, "0.12"], [1, "0.13"]], caption="A table of results")._repr_html_(),
        "</main></body></html>",
    ]
    with tempfile.TemporaryDirectory(prefix="mha-views-") as folder:
        path = Path(folder) / "index.html"
        path.write_text("\n".join(parts))
        yield path


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found: `apt-get install chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_offline(browser, url, **options):
    """A page with the network off; the list of requests that tried to leave the machine; errors."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, "offline": True, **options})
    page = context.new_page()
    tried, errors = [], []

    def route(route):
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            tried.append(route.request.url)
            route.abort()

    page.route("**/*", route)
    page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    page.goto(url, wait_until="load")
    return context, page, tried, errors


@pytest.fixture(scope="module")
def page(browser, test_page):
    context, page, tried, errors = open_offline(browser, test_page.as_uri())
    page.wait_for_selector(".mha-lm .mha-attn-head")
    yield page, tried, errors
    context.close()


def _python_greedy(model, prompt):
    with torch.no_grad():
        out = ref.generate(model, sentences.encode(prompt)[None], NEW_TOKENS)  # greedy, with the KV cache
    return out[0].tolist()


def _generate_in_page(page, prompt):
    lm = page.locator(".mha-lm")
    lm.locator("[data-control=prompt]").fill(prompt)
    lm.locator("[data-control=mode]").select_option("greedy")
    lm.locator("[data-control=count]").fill(str(NEW_TOKENS))
    lm.locator("[data-control=generate]").click()
    page.wait_for_function("p => document.querySelector('.mha-lm-output').dataset.text?.startsWith(p)", arg=prompt)
    return json.loads(lm.locator(".mha-lm-output").get_attribute("data-ids"))


def _pin(root, token):
    """Click token ``token`` unless it is pinned already (a second click would release it)."""
    button = root.locator(".mha-attn-token").nth(token)
    if button.get_attribute("aria-pressed") != "true":
        button.click()
    assert button.get_attribute("aria-pressed") == "true"


def _shown(page, root, token, direction, layer):
    radio = root.locator(f"[data-control=direction][value={direction}]")
    if not radio.is_checked():
        radio.check()
    if root.locator("[data-control=layer]").input_value() != str(layer):
        root.locator("[data-control=layer]").select_option(str(layer))
    _pin(root, token)
    return json.loads(root.evaluate(_SHOWN_JS))


def test_greedy_tokens_and_shown_weights_equal_pythons(page, sentence_model):
    page, _, _ = page
    table = []
    for prompt in PROMPTS:
        in_page = _generate_in_page(page, prompt)
        python = _python_greedy(sentence_model, prompt)
        with torch.no_grad():
            logits = sentence_model(torch.tensor([python]))
        top2 = logits[0, len(prompt) - 1:-1].topk(2, dim=-1).values
        weights = torch.stack(sentence_model.last_weights)[:, 0].numpy()  # (layers, H, L, L), uncached pass
        root = page.locator(".mha-lm .mha-attn")
        gap = 0.0
        # Every head whole: its thumbnail clicked, every cell of its matrix read (in one round trip).
        for layer, head, cells in json.loads(root.evaluate(_MATRICES_JS)):
            assert len(cells) == len(in_page) ** 2
            shown = np.array([c[2] for c in cells]).reshape(len(in_page), len(in_page))
            gap = max(gap, float(np.abs(shown - weights[layer, head]).max()))
        # The bars of every head for pinned tokens, from and to (on the first prompt: the same code draws
        # them for every prompt, and the matrices above hold every weight).
        for direction in ("from", "to") if prompt == PROMPTS[0] else ():
            for layer in range(weights.shape[0]):
                for token in (len(prompt) - 1, len(in_page) - 1):
                    for panel in _shown(page, root, token, direction, layer):
                        matrix = weights[panel["layer"], panel["head"]]
                        expected = matrix[token] if direction == "from" else matrix[:, token]
                        gap = max(gap, float(np.abs(np.array(panel["weights"]) - expected).max()))
        table.append((prompt, in_page == python, sentences.decode(in_page), gap,
                      float((top2[:, 0] - top2[:, 1]).min())))
    print("\nprompt | greedy tokens equal | text | max |weight difference| | smallest top-2 logit margin")
    for row in table:
        print(f"{row[0]!r} | {row[1]} | {row[2]!r} | {row[3]:.2e} | {row[4]:.3f}")
    assert all(row[1] for row in table), f"the page's greedy tokens differ from Python's: {table}"
    assert all(row[3] < TOLERANCE for row in table), f"the page shows other weights than the model's: {table}"


def test_a_view_shows_the_given_weights_for_the_pinned_token(page, example_weights):
    page, _, _ = page
    root = page.locator(".mha-attn").filter(has_text="A view of given weights")
    worst = 0.0
    for direction in ("from", "to"):
        for layer in range(2):
            for token in range(7):
                shown = _shown(page, root, token, direction, layer)
                assert [(p["layer"], p["head"]) for p in shown] == [(layer, h) for h in range(3)]
                for panel in shown:
                    matrix = example_weights[layer, panel["head"]]
                    expected = matrix[token] if direction == "from" else matrix[:, token]
                    worst = max(worst, float(np.abs(np.array(panel["weights"]) - expected).max()))
                    best = int(np.argmax(expected))
                    assert f"token {best} " in panel["text"].split(": ", 1)[1].split(",")[0], (
                        "the text alternative does not name the largest weight first")
    assert worst < TOLERANCE
    removed = root.locator(".mha-attn-head[data-layer='1'][data-head='2'] .mha-attn-head-name")
    assert "removed" in removed.text_content()


def test_the_page_needs_no_network_and_runs_no_hostile_token(page):
    page, tried, errors = page
    assert not tried, f"requests that tried to leave the machine: {tried}"
    assert not errors, f"console errors: {errors}"
    assert page.evaluate("window.__pwned") is None, "a token's markup ran"
    root = page.locator(".mha-attn").filter(has_text="A view of given weights")
    assert root.locator(".mha-attn-token").nth(2).text_content() == HOSTILE
    assert root.locator(".mha-attn-token").nth(1).text_content() == "\u2423cat"  # a leading space shown


def _tab_through(page, start, steps=40):
    """Focus ``start``, then press Tab: the data-control (or class) of each element reached."""
    start.focus()
    reached = []
    for _ in range(steps):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("""() => { const a = document.activeElement;
            return a.dataset.control || (a.classList.contains('mha-attn-token') ? 'token' : a.tagName); }"""))
    return reached


def test_the_keyboard_reaches_every_control_and_moves_along_the_tokens(page):
    page, _, _ = page
    lm = page.locator(".mha-lm")
    reached = _tab_through(page, lm.locator("[data-control=prompt]"), steps=9)
    expected = ["mode", "temperature", "seed", "count", "generate", "layer", "head", "direction", "token"]
    assert reached == expected, f"Tab from the prompt reached {reached}"
    page.keyboard.press("Home")
    assert lm.locator(".mha-attn-token[aria-current=true]").get_attribute("data-index") == "0"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    focused = page.evaluate("document.activeElement.dataset.index")
    assert focused == "2" and lm.locator(".mha-attn-token[aria-current=true]").get_attribute("data-index") == "2"
    summary = lm.locator(".mha-attn-summary").text_content()
    assert re.match(r"Token 2 \S+( pinned)?; layer \d head \d (attends most to|most attended by) token \d", summary), summary
    # The whole model by keyboard: a prompt typed, sampling chosen, Enter generates.
    lm.locator("[data-control=prompt]").focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("two ")
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")  # the select's next option: sampling
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")  # in the prompt's field: submits
    page.wait_for_function("() => document.querySelector('.mha-lm-output').dataset.text?.startsWith('two ')")
    assert lm.locator(".mha-lm-output").text_content().startswith("Sampled (T = 0.8, seed 0): two ")
    root = page.locator(".mha-attn").filter(has_text="A view of given weights")
    reached = _tab_through(page, root.locator("[data-control=input]"), steps=4)
    assert reached == ["layer", "head", "direction", "token"], reached


def test_sampling_is_seeded_and_a_bad_prompt_is_named(page):
    page, _, _ = page
    lm = page.locator(".mha-lm")
    texts = []
    for seed in (3, 3, 4):
        lm.locator("[data-control=prompt]").fill("the ")
        lm.locator("[data-control=mode]").select_option("sample")
        lm.locator("[data-control=seed]").fill(str(seed))
        lm.locator("[data-control=generate]").click()
        texts.append(lm.locator(".mha-lm-output").get_attribute("data-text"))
    assert texts[0] == texts[1] and texts[0] != texts[2], texts
    lm.locator("[data-control=prompt]").fill("The Cat")
    lm.locator("[data-control=generate]").click()
    alert = lm.locator("[role=alert]").text_content()
    assert "outside the model's alphabet" in alert and '"T"' in alert and '"C"' in alert


def test_erf_in_the_page_is_pythons_to_1e_12(page):
    import math

    page, _, _ = page
    xs = [float(x) for x in np.linspace(-7, 7, 281)] + [1e-8, -2.9999, 3.0001, 5.9, 6.1]
    values = page.evaluate("xs => xs.map(x => window.mhaSentenceModel.erf(x))", xs)
    worst = max(abs(v - math.erf(x)) for x, v in zip(xs, values))
    assert worst < 1e-12, worst


@pytest.mark.parametrize("docname", BUILT_CHAPTERS)
def test_the_built_chapter_has_working_views(browser, docname):
    path = SITE / f"{docname}.html"
    if not path.exists():
        pytest.skip(f"no {path.relative_to(ROOT)}: run `make book`")
    script = views._asset(views.VIEW_JS)  # as a view inlines it
    assert script in path.read_text(), (
        f"{path.relative_to(ROOT)} carries another version of book/_static/attention_view.js: its notebook "
        "ran (and was cached) before the script changed; rebuild it (rm -rf _build/.jupyter_cache; make book)")
    context, page, tried, errors = open_offline(browser, path.as_uri())
    try:
        page.wait_for_selector(".mha-attn .mha-attn-head")
        assert not errors, errors
        roots = page.locator(".mha-attn[data-mounted]")
        assert roots.count() >= 1
        for i in range(roots.count()):
            root = roots.nth(i)
            root.scroll_into_view_if_needed()
            tokens = root.locator(".mha-attn-token")
            tokens.nth(tokens.count() // 2).click()
            assert root.locator(".mha-attn-head").count() >= 1
            assert root.locator(".mha-attn-top").first.text_content().strip()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"views-{docname.replace('/', '__')}.png"), full_page=True)
        if AXE.exists():
            page.add_script_tag(content=AXE.read_text())
            violations = page.evaluate("""async tags => (await axe.run(document.querySelectorAll('.mha-attn, .mha-lm, .mha-table'),
                {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})).violations.map(
                v => `${v.id} (${v.impact}): ${v.help} ${v.nodes[0].target}`)""", AXE_TAGS)
            assert not violations, violations
    finally:
        context.close()


def test_the_built_chapter_8_writes_pythons_tokens_and_shows_the_induction_models_weights(browser, sentence_model):
    path = SITE / "book" / "08_language_model.html"
    if not path.exists():
        pytest.skip(f"no {path.relative_to(ROOT)}: run `make book`")
    from lab import induction
    from solutions.layer import MultiHeadAttention

    context, page, tried, errors = open_offline(browser, path.as_uri())
    try:
        page.wait_for_selector(".mha-lm .mha-attn-head")
        in_page = json.loads(page.locator(".mha-lm-output").get_attribute("data-ids"))  # the page's own first run
        assert in_page == _python_greedy(sentence_model, "the "), "the chapter's model wrote other tokens than Python"
        model = induction.load_model(0, MultiHeadAttention, ref.sinusoidal_positions)
        sequence = induction.repeated_batch(64, induction.TEST_PERIOD, seed=0)[:1]  # the chapter's figure's sequence
        root = page.locator(".mha-attn[data-mounted]").filter(has_text="The seed-0 model on the sequence above")
        worst = 0.0
        labels = root.locator("[data-control=input] option").all_text_contents()
        assert labels[0] == "all heads" and len(labels) == 3, labels
        for choice, label in enumerate(labels):  # "without the induction head L1 H2": that head removed
            root.locator("[data-control=input]").select_option(str(choice))
            removed = [(int(l), int(h)) for l, h in re.findall(r"L(\d) H(\d)", label)]
            with torch.no_grad():
                model(sequence, head_mask=induction.head_mask_without(removed, 2, 4))
                weights = torch.stack(model.last_weights)[:, 0].numpy()
            for token in (3, 12, 20):
                for layer in range(2):
                    for panel in _shown(page, root, token, "from", layer):
                        expected = weights[panel["layer"], panel["head"], token]
                        worst = max(worst, float(np.abs(np.array(panel["weights"]) - expected).max()))
        assert worst < TOLERANCE, worst
        assert not tried and not errors, (tried, errors)
    finally:
        context.close()


# JupyterLab's way with a trusted HTML output (@jupyterlab/rendermime, evalInnerHTMLScriptTags):
# the HTML set as innerHTML of an output node, each <script> replaced by a fresh copy so that it
# runs (once the node is in the page); the node attached when the output area shows it, here a
# moment later. Run twice, as a learner re-runs a cell: the second output must be drawn too.
_NOTEBOOK_OUTPUT_JS = """async html => {
  const host = document.createElement('div');
  host.innerHTML = html;
  for (const script of [...host.getElementsByTagName('script')]) {
    const copy = document.createElement('script');
    for (const attr of script.attributes) copy.setAttribute(attr.name, attr.value);
    copy.textContent = script.textContent;
    script.parentNode.replaceChild(copy, script);
  }
  await new Promise(done => setTimeout(done, 50));
  document.body.appendChild(host);
  await new Promise(done => setTimeout(done, 1500));
  return host.querySelectorAll('.mha-attn-head').length;
}"""


def test_a_view_is_drawn_as_a_notebook_front_end_inserts_it(browser):
    context = browser.new_context(offline=True)
    page = context.new_page()
    try:
        page.set_content('<!DOCTYPE html><html lang="en"><head><title>notebook</title></head><body></body></html>')
        view = views.show_attention(np.full((2, 3, 3), 1 / 3), "abc")._repr_html_()
        assert page.evaluate(_NOTEBOOK_OUTPUT_JS, view) == 2
        assert page.evaluate(_NOTEBOOK_OUTPUT_JS, view) == 2, "a re-run cell's view was not drawn"
        lm = views.show_sentence_model("two ", 5)._repr_html_()
        assert page.evaluate(_NOTEBOOK_OUTPUT_JS, lm) == 4
    finally:
        context.close()


def _mulberry32(seed):
    """The page's generator (sentence_model.js), in Python: uniform floats in [0, 1)."""
    state = seed & 0xFFFFFFFF

    def imul(a, b):
        return (a * b) & 0xFFFFFFFF

    def draw():
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        x = imul(state ^ (state >> 15), 1 | state)
        x = ((x + imul(x ^ (x >> 7), 61 | x)) & 0xFFFFFFFF) ^ x
        return ((x ^ (x >> 14)) & 0xFFFFFFFF) / 4294967296

    return draw


def _sample_as_the_page_does(model, prompt, count, temperature, seed):
    """The page's sampling rule on torch's logits (float64): p ~ exp((logit - max) / T), the first
    token whose running sum passes u * total, u from the page's generator."""
    draw, ids = _mulberry32(seed), sentences.encode(prompt).tolist()
    model = model.double()
    try:
        for _ in range(count):
            with torch.no_grad():
                logits = model(torch.tensor([ids]))[0, -1]
            probs = torch.exp((logits - logits.max()) / temperature).tolist()
            u = draw() * sum(probs)
            for token, p in enumerate(probs):
                u -= p
                if u < 0:
                    break
            ids.append(token)
    finally:
        model.float()
    return ids


def test_sampling_in_the_page_draws_the_models_distribution_with_its_seed(page, sentence_model):
    """Sampled text cannot equal torch.multinomial's (another generator); it equals, token for
    token, the page's rule applied in Python to torch's logits with the page's generator."""
    page, _, _ = page
    lm = page.locator(".mha-lm")
    for prompt, temperature, seed in [("the ", 0.8, 0), ("two birds ", 1.3, 7), ("a ", 0.5, 123456789)]:
        lm.locator("[data-control=prompt]").fill(prompt)
        lm.locator("[data-control=mode]").select_option("sample")
        lm.locator("[data-control=temperature]").fill(str(temperature))
        lm.locator("[data-control=seed]").fill(str(seed))
        lm.locator("[data-control=count]").fill("40")
        lm.locator("[data-control=generate]").click()
        in_page = json.loads(lm.locator(".mha-lm-output").get_attribute("data-ids"))
        expected = _sample_as_the_page_does(sentence_model, prompt, 40, temperature, seed)
        assert in_page == expected, (prompt, sentences.decode(in_page), sentences.decode(expected))


# ---------------------------------------------------------------- what learners reach for next


def _generate(lm, prompt, mode="greedy", temperature=None, seed=None, count=None):
    """Fill the form as a learner types (None: leave the field as it is) and press Generate."""
    lm.locator("[data-control=prompt]").fill(prompt)
    lm.locator("[data-control=mode]").select_option(mode)
    for name, value in (("temperature", temperature), ("seed", seed), ("count", count)):
        if value is not None:
            lm.locator(f"[data-control={name}]").fill(str(value))
    before = lm.evaluate("root => root.querySelector('.mha-lm-output').textContent")
    lm.locator("[data-control=generate]").click()
    return before


def _output(lm):
    return lm.locator(".mha-lm-output").text_content()


def test_the_form_forgives_and_names_every_problem(page):
    page, _, errors = page
    lm = page.locator(".mha-lm")
    # Values a browser's step/min validation refused (nothing happened): the page takes them.
    for temperature in ("0.33", "0.07"):
        _generate(lm, "the ", "sample", temperature, 5, 20)
        assert _output(lm).startswith(f"Sampled (T = {temperature}, seed 5): the "), _output(lm)
    _generate(lm, "the ", "greedy", "10", "1.5", 20)  # greedy: the sampling fields do not apply
    assert _output(lm).startswith("Greedy: the "), _output(lm)
    # Empty fields take the default their label states, and the output says so.
    _generate(lm, "two ", "sample", "", "", "")
    assert _output(lm).startswith("Sampled (T = 0.8, the default, seed 0, the default): two "), _output(lm)
    assert len(lm.locator(".mha-lm-output").get_attribute("data-text")) == len("two ") + NEW_TOKENS
    assert "empty: 0.8" in lm.locator("label", has=page.locator("[data-control=temperature]")).text_content()
    # What a field cannot hold is named by the page, in its words, all problems at once.
    _generate(lm, "the ", "sample", "-1", "1.5", "0")
    alert = lm.locator("[role=alert]").text_content()
    assert "Temperature -1 is out of range" in alert and "Seed 1.5 is not a whole number" in alert, alert
    assert "New characters 0 is out of range: a whole number from 1 to 127" in alert, alert
    # A character outside the alphabet: named, and the alphabet listed; the stale view is gone.
    _generate(lm, "The Cat", "greedy", count=20)
    alert = lm.locator("[role=alert]").text_content()
    assert '"T", "C"' in alert and 'these 24: " .abcdefghiklmnoprstuwxy"' in alert, alert
    assert lm.locator(".mha-lm-output").get_attribute("data-text") is None
    assert lm.locator(".mha-attn-head").count() == 0 and lm.locator(".mha-lm-next tr").count() == 0
    # The view's choices survive a new Generate (and the error between).
    _generate(lm, "the ", "greedy", count=20)
    lm.locator("[data-control=layer]").select_option("1")
    lm.locator("[data-control=head]").select_option("2")
    lm.locator("[data-control=direction][value=to]").check()
    _generate(lm, "The", "greedy")
    _generate(lm, "a ", "greedy", count=20)
    assert lm.locator("[data-control=layer]").input_value() == "1"
    assert lm.locator("[data-control=head]").input_value() == "2"
    assert lm.locator("[data-control=direction][value=to]").is_checked()
    assert not errors, errors


def test_a_pinned_token_stays_pinned_while_the_mouse_moves(page):
    page, _, _ = page
    lm = page.locator(".mha-lm")
    _generate(lm, "the ", "greedy", count=NEW_TOKENS)
    root = lm.locator(".mha-attn")
    tokens = root.locator(".mha-attn-token")
    tokens.nth(5).click()
    for i in (6, 20, 55):  # on the way down to the bars, the mouse crosses other tokens
        tokens.nth(i).hover()
    root.locator(".mha-attn-head .mha-attn-cell").nth(5).hover()
    assert root.locator(".mha-attn-token[aria-pressed=true]").get_attribute("data-index") == "5"
    assert root.locator(".mha-attn-summary").text_content().startswith("Token 5 ")
    tokens.nth(5).click()  # a second click releases
    assert root.locator(".mha-attn-token[aria-pressed=true]").count() == 0
    tokens.nth(9).hover()  # released, the mouse still chooses nothing by passing over
    assert root.locator(".mha-attn-summary").text_content().startswith("Token 5 ")
    tokens.nth(9).click()
    assert root.locator(".mha-attn-summary").text_content().startswith("Token 9 ")
    page.keyboard.press("Escape")
    assert root.locator(".mha-attn-token[aria-pressed=true]").count() == 0


NEXT_PROMPTS = ["the ", "two dogs ", "a small cat near the ", "the old foxes with a bird ", "a girl"]
TEMPERATURES = [0.5, 1.0, 1.7]


def test_next_token_probabilities_equal_pythons(page, sentence_model):
    page, _, _ = page
    lm = page.locator(".mha-lm")
    table, worst = [], 0.0
    lm.locator("[data-control=seed]").fill("11")
    lm.locator("[data-control=count]").fill("12")
    lm.locator("[data-control=mode]").select_option("sample")
    for prompt in NEXT_PROMPTS:
        for temperature in TEMPERATURES:
            lm.locator("[data-control=prompt]").fill(prompt)
            lm.locator("[data-control=temperature]").fill(str(temperature))
            lm.locator("[data-control=generate]").click()
            ids = json.loads(lm.locator(".mha-lm-output").get_attribute("data-ids"))
            step = len(prompt) + 2  # a generated step: its next character was drawn at T
            _pin(lm.locator(".mha-attn"), step)
            shown = json.loads(lm.evaluate("""root => JSON.stringify([...root.querySelectorAll('.mha-lm-next tr[data-id]')]
                .map(r => [Number(r.dataset.id), Number(r.dataset.p1), Number(r.dataset.pt)]))"""))
            python = views.next_tokens(sentence_model, ids, step, temperature).rows
            assert [s[0] for s in shown] == [p[0] for p in python], (prompt, temperature, shown, python)
            gap = max(max(abs(s[1] - p[2]), abs(s[2] - p[3])) for s, p in zip(shown, python))
            worst = max(worst, gap)
            chosen = lm.locator(".mha-lm-next table").get_attribute("data-chosen")
            assert chosen == str(ids[step + 1]) and "sampled: " in lm.locator(".mha-lm-next caption").text_content()
            table.append((prompt, temperature, sentences.ALPHABET[python[0][0]], python[0][2], python[0][3], gap))
    print("\nprompt | T | top next | p at T = 1 (Python) | p at T (Python) | max |page - Python| over the top 5")
    for row in table:
        print(f"{row[0]!r} | {row[1]} | {row[2]!r} | {row[3]:.6f} | {row[4]:.6f} | {row[5]:.1e}")
    assert worst < 1e-5, table


def test_the_keyboard_alone_pins_a_cell_reads_its_weight_and_takes_its_score_apart(page, sentence_model):
    page, _, _ = page
    lm = page.locator(".mha-lm")
    _generate(lm, "two cats ", "greedy", count=10)
    lm.locator("[data-control=layer]").select_option("1")
    lm.locator("[data-control=head]").select_option("2")
    ids = json.loads(lm.locator(".mha-lm-output").get_attribute("data-ids"))
    last = len(ids) - 1
    # Tab from the direction radios to the matrix: the tokens, the thumbnails, then the matrix's cell.
    lm.locator("[data-control=direction][value=from]").check()
    lm.locator("[data-control=direction][value=from]").focus()
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('role')") == "gridcell":
            break
    cell = page.evaluate("[document.activeElement.dataset.q, document.activeElement.dataset.k]")
    assert cell == [str(last), str(last)], cell  # the selected query's own key
    for key in ("ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowUp"):
        page.keyboard.press(key)
    query, key = last - 1, last - 3
    label = page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert label.startswith(f"query {query} ") and f", key {key} " in label, label
    page.keyboard.press("Enter")
    readout = lm.locator("[data-part=readout]")
    weight = float(readout.get_attribute("data-weight"))
    assert f"query {query} " in readout.text_content() and f"weight {weight:.5f}" in readout.text_content()
    assert lm.locator(".mha-attn-token[aria-pressed=true]").get_attribute("data-index") == str(query)
    steps = json.loads(lm.locator("[data-part=steps]").get_attribute("data-steps"))
    python = views.score_steps(sentence_model, ids, 1, 2, query, key)
    gaps = {name: abs(steps[name] - python[name]) for name in ("qk", "scaled")}
    gaps["scores"] = max(abs(a - b) for a, b in zip(steps["scores"], python["scores"]))
    gaps["weights"] = max(abs(a - b) for a, b in zip(steps["weights"], python["weights"]))
    gaps["shown weight"] = abs(weight - python["weight_in_model"])
    print(f"\nlayer 1 head 2, query {query}, key {key}: page q.k {steps['qk']:.6f} (Python {python['qk']:.6f}), "
          f"/sqrt({steps['dk']}) {steps['scaled']:.6f} ({python['scaled']:.6f}), weight {steps['weights'][key]:.6f} "
          f"({python['weight']:.6f}); largest differences {gaps}")
    assert steps["dk"] == python["dk"] == 12 and len(steps["scores"]) == query + 1
    assert max(gaps.values()) < 1e-5, gaps
    assert abs(python["weight"] - python["weight_in_model"]) < 1e-9  # the steps are the layer's own
    assert lm.locator("[data-part=steps] li").nth(1).text_content().startswith("\u00f7 \u221a12 = 3.4641")
    page.keyboard.press("Escape")
    assert lm.locator(".mha-attn-token[aria-pressed=true]").count() == 0
    assert lm.locator("[data-part=steps] li").count() == 0


def test_every_weight_can_be_read_as_text_and_the_scale_is_stated(page, example_weights):
    page, _, _ = page
    root = page.locator(".mha-attn").filter(has_text="A view of given weights")
    root.locator("[data-control=input]").select_option("0")
    root.locator("[data-control=layer]").select_option("1")
    root.locator("[data-control=head]").select_option("all")
    root.locator("[data-control=direction][value=from]").check()
    assert "A full box is weight 1." in root.locator("[data-part=scale]").text_content()
    root.locator("[data-control=direction][value=to]").check()
    assert "a column need not" in root.locator("[data-part=scale]").text_content()
    _pin(root, 3)
    # A short live summary: the selected head only, whatever the number of heads drawn.
    summary = root.locator(".mha-attn-summary").text_content()
    assert len(summary) < 120 and summary.count("head") == 1, summary
    # Thumbnails: every layer and head, each a button named for its head; the matrix's cells as text.
    thumbs = root.locator(".mha-attn-thumb")
    assert thumbs.count() == 6
    thumbs.nth(4).click()  # layer 1, head 1
    cells = root.locator("[role=gridcell]")
    assert cells.count() == 49
    for q, k in ((3, 0), (6, 2)):
        label = root.locator(f"[role=gridcell][data-q='{q}'][data-k='{k}']").get_attribute("aria-label")
        assert label.endswith(f": {example_weights[1, 1, q, k]:.3f}"), label
    root.locator(".mha-attn-table summary").click()
    rows = root.locator(".mha-attn-table tr")
    rows.nth(7).wait_for()  # drawn when the details open (its toggle event comes after the click)
    assert rows.count() == 8
    for q in range(7):
        shown = [float(t) for t in rows.nth(q + 1).locator("td").all_text_contents()]
        assert np.abs(np.array(shown) - example_weights[1, 1, q]).max() <= 5e-4
    root.locator(".mha-attn-table summary").click()


def test_whitespace_tokens_are_visible_labels_apart_and_odd_weights_on_their_own_scale(page):
    page, _, _ = page
    root = page.locator(".mha-attn").filter(has_text="Scores, not weights")
    assert root.locator(".mha-attn-token").all_text_contents() == ["a", "\u21b5", "\u21e5", "long-label",
                                                                    "another-long", "\u2423", "b"]
    assert root.locator(".mha-attn-token").nth(1).get_attribute("aria-label") == "token 1: newline"
    assert "not probabilities" in root.locator("[data-part=scale]").text_content()
    _pin(root, 6)
    # The negative weight is drawn below the zero line, not clipped to nothing.
    negative = root.locator(".mha-attn-cell[data-key='0'] .mha-attn-bar")
    assert "mha-attn-negative" in negative.get_attribute("class")
    assert float(negative.evaluate("b => b.getBoundingClientRect().height")) > 3
    # No label runs into the next one: each stays inside its own cell.
    boxes = root.locator(".mha-attn-head").first.evaluate("""p => [...p.querySelectorAll('.mha-attn-char')].map(c => {
        const r = c.getBoundingClientRect(), cell = c.parentElement.getBoundingClientRect();
        return [r.left, r.right, cell.left, cell.right]; })""")
    assert all(b[0] >= b[2] - 0.5 and b[1] <= b[3] + 0.5 for b in boxes), boxes
    assert all(a[1] <= b[0] for a, b in zip(boxes, boxes[1:]) if abs(a[0] - b[0]) > 1), boxes


def _columns(root):
    """For every token: the horizontal centre of its button and of its bar cell in the first head."""
    return root.evaluate("""r => { const centre = e => { const b = e.getBoundingClientRect();
        return [Math.round(b.left + b.width / 2), Math.round(b.top)]; };
      return [[...r.querySelectorAll('.mha-attn-token')].map(centre),
              [...r.querySelector('.mha-attn-head').querySelectorAll('.mha-attn-cell')].map(centre)]; }""")


def test_tokens_and_bars_share_columns_at_375_px_and_200_percent(browser, test_page):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, options in (("375px", {"viewport": {"width": 375, "height": 800}}),
                          ("zoom200", {"viewport": {"width": 640, "height": 900}, "device_scale_factor": 2})):
        context, page, tried, errors = open_offline(browser, test_page.as_uri(), **options)
        try:
            page.wait_for_selector(".mha-lm .mha-attn-head")
            for title in ("Sixty-four numbered tokens", "A view of given weights", "Attention of each step"):
                root = page.locator(".mha-attn[data-mounted]").filter(has_text=title).last
                buttons, cells = _columns(root)
                assert [b[0] for b in buttons] == [c[0] for c in cells], (name, title, buttons, cells)
                # A row of bars breaks where the row of tokens breaks.
                assert len({b[1] for b in buttons}) == len({c[1] for c in cells}), (name, title)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= options["viewport"]["width"], f"{name}: the page scrolls sideways ({width} px)"
            page.locator(".mha-attn").filter(has_text="Sixty-four").first.screenshot(
                path=str(SCREENSHOTS / f"views-{name}-numbered.png"))
            page.locator(".mha-lm").screenshot(path=str(SCREENSHOTS / f"views-{name}-sentence-model.png"))
            assert not tried and not errors, (tried, errors)
        finally:
            context.close()


def _radio_centre_contrast(page, root):
    """How far the centre of the unchecked radio is from the box around it (0-255, max over RGB)."""
    radio = root.locator("[data-control=direction]:not(:checked)").first
    box = radio.bounding_box()
    shot = page.screenshot(clip={"x": box["x"] - 6, "y": box["y"], "width": box["width"] + 6, "height": box["height"]})
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(shot)).convert("RGB")
    width, height = image.size
    centre, outside = image.getpixel((width - width // 2 + 2, height // 2)), image.getpixel((1, height // 2))
    return max(abs(a - b) for a, b in zip(centre, outside))


def test_dark_mode_is_drawn_for_the_dark_and_axe_finds_nothing_light_or_dark(page):
    """On the module's page (no second load): the book's dark theme switched on and off."""
    page, tried, errors = page
    root = page.locator(".mha-attn").filter(has_text="A view of given weights")
    try:
        for scheme in ("dark", "light"):
            page.emulate_media(color_scheme=scheme)
            page.evaluate("s => document.documentElement.dataset.theme = s", scheme)
            root.scroll_into_view_if_needed()
            contrast = _radio_centre_contrast(page, root)
            assert contrast < 60, f"{scheme}: the unchecked radio's centre differs from its box by {contrast}: a disc"
    finally:
        page.emulate_media(color_scheme="light")
        page.evaluate("() => delete document.documentElement.dataset.theme")
    if not AXE.exists():
        pytest.skip(f"no {AXE.relative_to(ROOT)}: run `npm ci` (make axe)")
    lm = page.locator(".mha-lm")
    _generate(lm, "the ", "sample", count=10)  # a small matrix: axe's time grows with the cells
    _pin(lm.locator(".mha-attn"), 6)
    lm.locator("[data-control=head]").select_option("1")
    lm.locator("[role=gridcell][data-q='6'][data-k='2']").click()  # the score's steps, shown
    lm.locator(".mha-attn-table").evaluate("details => { details.open = true; }")  # a table opened
    lm.locator(".mha-attn-table tr").nth(1).wait_for()
    page.add_script_tag(content=AXE.read_text())
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        for scheme in ("dark", "light"):
            page.emulate_media(color_scheme=scheme)
            page.evaluate("s => document.documentElement.dataset.theme = s", scheme)
            # Every part of the page, the 64 x 64 matrix apart (the same cells as the small one, 4,096 times).
            violations = page.evaluate("""async tags => (await axe.run({exclude: [
                    ['[aria-label="Sixty-four numbered tokens"] .mha-attn-matrix']]},
                {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})).violations.map(
                v => `${v.id} (${v.impact}): ${v.help} ${v.nodes[0].target}`)""", AXE_TAGS)
            page.screenshot(path=str(SCREENSHOTS / f"views-{scheme}.png"), full_page=True)
            assert not violations, (scheme, violations)
    finally:
        page.emulate_media(color_scheme="light")
        page.evaluate("() => delete document.documentElement.dataset.theme")
    assert not tried and not errors, (tried, errors)
