"""lab/views.py and the exported sentence model, without a browser (tests/test_views_browser.py
runs them in Chromium)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from lab import views

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import export_sentence_model  # noqa: E402


def _layers(data, i=0) -> np.ndarray:
    """An input's weights as the page reads them: rows padded back to L with the zeros left out."""
    length = len(data["inputs"][i]["tokens"])
    return np.array([[[row + [0.0] * (length - len(row)) for row in m] for m in heads] for heads in data["inputs"][i]["layers"]])


def _data(rendered) -> dict:
    found = re.search(r'<script type="application/json" class="mha-attn-data">(.*?)</script>', rendered.html, re.S)
    assert found, "no data element in the view"
    return json.loads(found[1])


def test_the_committed_export_is_the_committed_weights_exactly():
    assert export_sentence_model.OUT.read_text() == export_sentence_model.export(), (
        "book/_static/sentence_model.json is stale: run scripts/export_sentence_model.py")
    state = torch.load(export_sentence_model.WEIGHTS, weights_only=True)
    exported = export_sentence_model.read()
    assert exported.keys() == state.keys()
    for name, tensor in state.items():
        assert np.array_equal(exported[name], tensor.numpy()), f"{name} differs from the .pt file"


@pytest.mark.parametrize("shape, layers, heads", [((5, 5), 1, 1), ((3, 5, 5), 1, 3)])
def test_every_accepted_shape_becomes_layers_of_heads(shape, layers, heads):
    weights = torch.softmax(torch.randn(shape, dtype=torch.float64), dim=-1)
    data = _data(views.show_attention(weights, "abcde"))
    layers_out = _layers(data)
    assert layers_out.shape == (layers, heads, 5, 5)
    assert np.abs(layers_out - weights.numpy().reshape(layers, heads, 5, 5)).max() <= 0.5 * 10 ** -views.DECIMALS
    assert data["inputs"][0]["tokens"] == list("abcde")
    assert "scale" not in data["inputs"][0]  # probabilities: the bars' box is weight 0 to 1


def test_a_batch_needs_item_and_a_list_of_layers_is_layers():
    batch = torch.softmax(torch.randn(2, 4, 5, 5, dtype=torch.float64), dim=-1)  # (B, H, L, L), as a layer returns
    with pytest.raises(ValueError, match=r"\(2, 4, 5, 5\) are a batch \(B, H, L, L\): pass item="):
        views.show_attention(batch, "abcde")
    one = _layers(_data(views.show_attention(batch, "abcde", item=1)))
    assert one.shape == (1, 4, 5, 5) and np.abs(one[0] - batch[1].numpy()).max() <= 5e-6
    last_weights = [batch, batch.flip(0)]  # a model's last_weights: one (B, H, L, L) per layer
    layers = _layers(_data(views.show_attention(last_weights, "abcde", item=0)))
    assert layers.shape == (2, 4, 5, 5) and np.abs(layers[1] - batch[1].numpy()).max() <= 5e-6
    with pytest.raises(ValueError, match="item=2, but the batch has 2 items"):
        views.show_attention(batch, "abcde", item=2)
    with pytest.raises(ValueError, match=r"item=0 selects from a batch"):
        views.show_attention(batch[0], "abcde", item=0)


@pytest.mark.parametrize("weights, said", [
    (np.full((3, 3), 2 / 3), "3 rows do not sum to 1"),
    (np.array([[1.5, -0.5, 0.0]] * 3), "3 weights are negative, 3 weights are above 1"),
])
def test_weights_that_are_not_probabilities_are_warned_of_and_drawn_on_their_own_scale(weights, said):
    with pytest.warns(UserWarning, match=f"not probabilities \\({said}\\)"):
        data = _data(views.show_attention(weights, "abc"))
    scale = data["inputs"][0]["scale"]
    assert scale["lo"] == min(0.0, weights.min()) and scale["hi"] == max(1.0, weights.max())
    assert said in scale["note"]


@pytest.mark.parametrize("weights, tokens, words", [
    (np.ones((2, 3, 4, 5, 5)), "abcde", "(2, 3, 4, 5, 5)"),
    (np.ones((2, 4, 5)), "abcd", "not square"),
    (np.ones((2, 5, 5)), "abcd", "4 tokens for weights over 5 positions"),
    (np.where(np.eye(5) > 0, np.nan, 0.2), "abcde", "NaN or infinite values, the first at index (0, 0, 0, 0)"),
    (np.ones((1, 600, 600)), ["x"] * 600, "at most 512"),
])
def test_bad_weights_are_refused_with_what_is_wrong(weights, tokens, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        views.show_attention(weights, tokens)


def test_removed_heads_must_exist():
    with pytest.raises(ValueError, match=r"removed heads \[\[1, 0\]\]"):
        views.show_attention(np.ones((2, 4, 4)) / 4, "abcd", removed=[(1, 0)])


def test_rows_are_written_without_their_trailing_zeros():
    causal = np.tril(np.full((3, 3), 0.5))
    causal[2] = [0.25, 0.0, 0.75]
    causal[0, 0] = 1.0
    data = _data(views.show_attention(causal, "abc"))
    assert data["inputs"][0]["layers"] == [[[[1.0], [0.5, 0.5], [0.25, 0.0, 0.75]]]]
    assert np.array_equal(_layers(data)[0, 0], causal)


def test_hostile_tokens_cannot_close_the_script_or_inject_markup():
    hostile = ["</script><script>alert(1)</script>", "<img src=x onerror=alert(2)>", "&amp;", "a"]
    rendered = views.show_attention(np.full((4, 4), 0.25), hostile, title="<b>title</b>")
    data_part = rendered.html.split('class="mha-attn-data">', 1)[1].split("</script>", 1)[0]
    assert "</" not in data_part, "a token could end the data element early"
    assert _data(rendered)["inputs"][0]["tokens"] == hostile  # kept as the learner's text, shown as text
    assert "<img" not in rendered.html.replace(data_part, "")


def test_the_sentence_model_view_refuses_a_prompt_it_cannot_encode():
    with pytest.raises(ValueError, match=r"outside the model's alphabet.*'X'"):
        views.show_sentence_model("the X")
    with pytest.raises(ValueError, match="128 positions"):
        views.show_sentence_model("the ", count=125)
    assert "46,552 parameters" in repr(views.show_sentence_model("two ", 10))


def test_next_tokens_and_score_steps_are_the_models_own_numbers():
    """In float64 on the learner's model: next_tokens is softmax(logits / T), score_steps's weight
    is the one the layer itself gave (the page is compared with these in test_views_browser.py)."""
    import train_sentences

    torch.manual_seed(0)
    model = train_sentences.build().eval()  # untrained weights: the rule, not the training, is tested
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    rows = views.next_tokens(model, ids, step=5, temperature=0.5, k=4).rows
    with torch.no_grad():
        logits = model.double()(torch.tensor([ids[:6]]))[0, 5]
    model.float()
    p1, pt = torch.softmax(logits, -1), torch.softmax(logits / 0.5, -1)
    assert [r[0] for r in rows] == p1.argsort(descending=True)[:4].tolist()
    assert all(abs(r[2] - float(p1[r[0]])) < 1e-12 and abs(r[3] - float(pt[r[0]])) < 1e-12 for r in rows)
    steps = views.score_steps(model, ids, layer=1, head=3, query=6, key=2)
    assert len(steps["scores"]) == 7 and abs(sum(steps["weights"]) - 1) < 1e-12
    assert abs(steps["scaled"] - steps["qk"] / 12 ** 0.5) < 1e-12
    assert abs(steps["weight"] - steps["weight_in_model"]) < 1e-9
    assert next(model.parameters()).dtype == torch.float32  # the learner's model is left as it was
    with pytest.raises(ValueError, match="need 0 <= key <= query"):
        views.score_steps(model, ids, 0, 0, query=2, key=3)
    with pytest.raises(ValueError, match="temperature=0"):
        views.next_tokens(model, ids, temperature=0)
    assert repr(views.next_tokens(model, "the ca")).startswith("The 5 most likely tokens after position 5 ('the ca')")


def test_a_table_is_html_with_a_header_and_text_with_aligned_columns():
    rendered = views.table(["seed", "loss"], [[0, "0.12"], [10, "<1"]], caption="losses")
    assert '<th scope="col">seed</th>' in rendered.html and "<td>&lt;1</td>" in rendered.html
    assert "<caption>losses</caption>" in rendered.html
    assert repr(rendered).splitlines() == ["losses", "seed | loss", "0    | 0.12", "10   | <1  "]
    with pytest.raises(ValueError, match=r"rows \[1\]"):
        views.table(["a", "b"], [[1, 2], [3]])


def test_too_many_weights_are_refused_before_they_are_copied():
    big = np.broadcast_to(np.float64(0.01), (40, 40, 30, 30))  # 1.44 million weights, no memory of its own
    with pytest.raises(ValueError, match="1,440,000 weights; a view shows at most 1,000,000"):
        views.show_attention(list(big), ["x"] * 30)  # 40 layers of 40 heads
    half = np.full((2, 4, 250, 250), 0.004)  # 500,000 each: one fits, three do not
    assert views.show_inputs([{"label": "a", "weights": list(half), "tokens": ["x"] * 250}])
    with pytest.raises(ValueError, match="1,500,000 weights in one view"):
        views.show_inputs([{"label": n, "weights": list(half), "tokens": ["x"] * 250} for n in "abc"])
