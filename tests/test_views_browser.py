"""The views of lab/views.py in Chromium (Playwright, Debian's /usr/bin/chromium, as
tests/test_browser.py drives it), on a page made here from the same files the book inlines, opened
from disk in a context with the network off (Playwright's ``offline``, and every http(s) request
aborted and recorded):

- the sentence model in the page writes, greedily, the tokens Python's ``generate`` writes, for
  five prompts; and the weights shown when a token is focused are the model's (an uncached
  forward pass in torch) to 1e-4, from and to the token, every layer and head;
- a view of given weights shows those weights for a hovered token, on every head of every layer;
- axe-core finds no violation (any impact) of WCAG 2.1 A/AA on the page;
- Tab alone reaches every control, and the arrow keys move along the tokens;
- a hostile token is shown as text, and nothing of it runs.

The same checks on the built chapters (chapters 3, 5 and 8 in _build/html, `make book`) run when
that build exists. Screenshots go to _build/screenshots/views-*.png.
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
_SHOWN_JS = """root => [...root.querySelectorAll('.mha-attn-head')].map(panel => ({
  layer: Number(panel.dataset.layer), head: Number(panel.dataset.head),
  weights: [...panel.querySelectorAll('.mha-attn-cell')].map(c => Number(c.dataset.weight)),
  text: panel.querySelector('.mha-attn-top').textContent}))"""


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


@pytest.fixture(scope="module")
def test_page(example_weights):
    tokens = ["the", " cat", HOSTILE, " dog", ".", " a", "end"]
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>views</title></head><body><main>',
        "<h1>The course's views</h1>",
        views.show_sentence_model("the ", NEW_TOKENS)._repr_html_(),
        views.show_inputs([{"label": "given weights", "weights": example_weights, "tokens": tokens, "removed": [(1, 2)]},
                           {"label": "the same, first layer only", "weights": example_weights[0], "tokens": tokens}],
                          title="A view of given weights")._repr_html_(),
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


def open_offline(browser, url):
    """A page with the network off; the list of requests that tried to leave the machine; errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
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


def _shown(page, root, token, direction, layer):
    root.locator(f"[data-control=direction][value={direction}]").check()
    root.locator("[data-control=layer]").select_option(str(layer))
    root.locator(".mha-attn-token").nth(token).hover()
    return root.evaluate(_SHOWN_JS)


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
        for token in (0, len(prompt) - 1, len(prompt) + NEW_TOKENS // 2, len(in_page) - 1):
            for direction in ("from", "to"):
                for layer in range(weights.shape[0]):
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


def test_a_view_shows_the_given_weights_for_the_hovered_token(page, example_weights):
    page, _, _ = page
    root = page.locator(".mha-attn").filter(has_text="A view of given weights")
    worst = 0.0
    for token in range(7):
        for direction in ("from", "to"):
            for layer in range(2):
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


def test_axe_finds_no_violation(page):
    page, _, _ = page
    if not AXE.exists():
        pytest.skip(f"no {AXE.relative_to(ROOT)}: run `npm ci` (make axe)")
    page.add_script_tag(content=AXE.read_text())
    violations = page.evaluate("""async tags => (await axe.run(document, {runOnly: {type: 'tag', values: tags},
        resultTypes: ['violations']})).violations.map(v => `${v.id} (${v.impact}): ${v.help} ${v.nodes[0].target}`)""",
                               AXE_TAGS)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "views-test-page.png"), full_page=True)
    assert not violations, violations


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
    assert lm.locator(".mha-attn-token[aria-pressed=true]").get_attribute("data-index") == "0"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    focused = page.evaluate("document.activeElement.dataset.index")
    assert focused == "2" and lm.locator(".mha-attn-token[aria-pressed=true]").get_attribute("data-index") == "2"
    summary = lm.locator(".mha-attn-summary").text_content()
    assert re.match(r"layer \d, weights (from|to) token 2 ", summary) and "head 3" in summary, summary
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
    script = (ROOT / "book" / "_static" / "attention_view.js").read_text()
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
            tokens.nth(tokens.count() // 2).hover()
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
