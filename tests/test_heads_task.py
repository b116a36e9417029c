"""Chapter 5 support code: the red/blue/majority task, its model, and heads that specialise."""
import numpy as np
import pytest
import torch

from lab import heads_task as ht
from solutions.layer import MultiHeadAttention


def test_make_batch_builds_what_the_chapter_says():
    tokens, colours, targets = ht.make_batch(500, np.random.default_rng(0))
    assert tokens.shape == colours.shape == (500, ht.LENGTH + 1) and targets.shape == (500, 3)
    assert (tokens[:, -1] == ht.QUERY).all() and (tokens[:, :-1] < ht.NUM_DIGITS).all()
    assert ((colours == ht.RED).sum(1) == 1).all() and ((colours == ht.BLUE).sum(1) == 1).all()
    assert (colours[:, -1] == ht.PLAIN).all()
    for n in range(500):
        digits = tokens[n, :-1].numpy()
        counts = np.bincount(digits, minlength=ht.NUM_DIGITS)
        red, blue, majority = targets[n].tolist()
        assert counts[majority] == ht.MAJORITY_COUNT and np.delete(counts, majority).max() <= 2
        assert digits[colours[n, :-1].numpy() == ht.RED] == red
        assert digits[colours[n, :-1].numpy() == ht.BLUE] == blue
    # The questions are independent: red and blue digits are not always the majority.
    assert (targets[:, 0] != targets[:, 2]).float().mean() > 0.5


def test_make_batch_is_seeded():
    a, b = ht.make_batch(8, np.random.default_rng(3)), ht.make_batch(8, np.random.default_rng(3))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_token_labels():
    tokens, colours = torch.tensor([3, 5, 3, ht.QUERY]), torch.tensor([ht.RED, ht.PLAIN, ht.BLUE, ht.PLAIN])
    assert ht.token_labels(tokens, colours) == ["3ᴬ", "5", "3ᴮ", "?"]


def test_model_shapes_and_head_mask():
    torch.manual_seed(0)
    model = ht.HeadsModel(MultiHeadAttention, embed_dim=12, num_heads=3)
    tokens, colours, _ = ht.make_batch(4, np.random.default_rng(0))
    logits, weights = model(tokens, colours)
    assert set(logits) == set(ht.TASKS) and all(l.shape == (4, ht.NUM_DIGITS) for l in logits.values())
    assert weights.shape == (4, 3, ht.LENGTH + 1, ht.LENGTH + 1)
    # Removing every head leaves only the readout biases: the same answer for every example.
    silent, _ = model(tokens, colours, head_mask=torch.zeros(3))
    assert torch.allclose(silent["red"], silent["red"][:1].expand(4, -1))


@pytest.fixture(scope="module")
def trained():
    torch.set_num_threads(1)
    torch.manual_seed(2)
    model = ht.HeadsModel(MultiHeadAttention)
    losses = ht.train(model, seed=2)
    return model, losses, ht.make_batch(1000, np.random.default_rng(1234))


def test_training_solves_all_three_questions(trained):
    model, losses, data = trained
    assert losses[-1] < losses[0] / 20
    assert min(ht.accuracy(model, *data).values()) > 0.95


def test_each_head_does_one_job_and_ablating_it_breaks_exactly_that_job(trained):
    model, _, data = trained
    table = ht.ablation_table(model, *data)  # (1 + H, 3)
    looks = ht.attention_at_query(model, *data[:2])  # (H, 3)
    assert table.shape == (4, 3) and looks.shape == (3, 3)
    broken = table[1:] < 0.5  # (H, 3): which question fails without head h
    assert (broken.sum(axis=1) == 1).all() and (broken.sum(axis=0) == 1).all()  # a permutation
    job = broken.argmax(axis=1)  # head h's question
    red_head, blue_head = list(job).index(0), list(job).index(1)
    assert looks[red_head, 0] > 0.9 and looks[blue_head, 1] > 0.9  # sharp: one position
    majority_head = list(job).index(2)
    assert looks[majority_head].max() < 0.5  # diffuse
    assert (table[1:][~broken] > 0.9).all()  # the other questions survive
