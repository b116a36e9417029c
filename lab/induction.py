"""Chapter 8's induction-head lab: two-layer attention-only models trained on random tokens whose
segments repeat, then taken apart (Elhage et al. 2021; Olsson et al. 2022).

Training sequences (:func:`training_batch`): a segment of ``P`` random tokens repeated to fill
``LENGTH`` positions (the last copy cut short); ``P`` is drawn per sequence, so no head can find
the earlier copy by position alone. Test sequences (:func:`repeated_batch`): ``[seg, seg]`` with a
fixed period. On the first copy nothing can be predicted (chance is ``log(VOCAB)`` nats); on the
second, a model that looks up "what came after this token last time" predicts every token
but the first.

The weights of the seeds ``SEEDS`` are committed (``weights/induction_seed<N>.pt``, made by
``scripts/train_induction.py``); ``weights/induction_results.json`` holds what
:func:`analyse` finds on each (``bench``-style record, recomputed by the script), which the
chapter recomputes from the weights at build time.
"""
from __future__ import annotations

import math
from pathlib import Path

import torch

from . import language_model as lm

VOCAB = 32
LENGTH = 40
MIN_PERIOD, MAX_PERIOD = 5, 20
# Attention only (no MLP), and a learned table of positions as GPT-2 has: a previous-token head
# then needs only to match two rows of the table.
CONFIG = dict(vocab_size=VOCAB, d_model=32, num_heads=4, num_layers=2, d_ff=0, learned_positions=LENGTH)
# A head counts as a previous-token (induction) head when its score is above this cut, chosen by
# hand: most heads of the trained models score under 0.2 or over 0.6, a few in between
# (induction_results.json has every head's score), so the cut decides about those few.
THRESHOLD = 0.3
SEEDS = tuple(range(10))
WEIGHTS_DIR = Path(__file__).parent / "weights"
CHANCE = math.log(VOCAB)
TEST_PERIOD = 12


def weights_path(seed):
    return WEIGHTS_DIR / f"induction_seed{seed}.pt"


def training_batch(batch_size, generator):
    """``(B, LENGTH)``: a segment of random tokens repeated to fill the length, its length drawn
    per sequence."""
    tokens = torch.randint(0, VOCAB, (batch_size, LENGTH), generator=generator)
    periods = torch.randint(MIN_PERIOD, MAX_PERIOD + 1, (batch_size,), generator=generator)
    for row, period in enumerate(periods.tolist()):
        tokens[row] = tokens[row, torch.arange(LENGTH) % period]
    return tokens


def repeated_batch(batch_size, period=TEST_PERIOD, seed=0):
    """``(B, 2 * period)``: random segments, each followed by itself."""
    generator = torch.Generator().manual_seed(seed)
    segment = torch.randint(0, VOCAB, (batch_size, period), generator=generator)
    return torch.cat([segment, segment], dim=1)


def build(attention_class=None, positions=None, **kwargs):
    return lm.CausalLM(**CONFIG, attention_class=attention_class, positions=positions, **kwargs)


def load_model(seed=0, attention_class=None, positions=None, **kwargs):
    model = build(attention_class, positions, **kwargs)
    model.load_state_dict(torch.load(weights_path(seed), weights_only=True))
    return model.eval()


def previous_token_score(weights):
    """``(...)``: the mean weight each query ``i >= 1`` puts on key ``i - 1``."""
    length = weights.shape[-1]
    queries = torch.arange(1, length)
    return weights[..., queries, queries - 1].mean(dim=-1)


@torch.no_grad()
def repeat_losses(model, tokens, period, head_mask=None):
    """Mean next-token loss on the first copy and on the second copy (its first token excluded:
    it follows a random token, nothing announces that the repeat begins), the loss of that first
    token alone, and the mean entropy (nats) of the predictions on the second copy."""
    logits = model(tokens, head_mask=head_mask)
    per_position = lm.per_position_loss(logits, tokens)  # predicts t + 1 from t
    log_probs = logits[:, period:-1].log_softmax(dim=-1)  # the predictions that per_position[period:] scores
    return {"first": per_position[:period - 1].mean().item(), "repeat": per_position[period:].mean().item(),
            # the repeat's first token, which follows a random one, and how spread the repeat's predictions are
            "repeat_first": per_position[period - 1].item(),
            "repeat_entropy": -(log_probs.exp() * log_probs).sum(dim=-1).mean().item()}


@torch.no_grad()
def attention_patterns(model, tokens):
    """Each layer's weights ``(B, H, L, L)`` on ``tokens``, stacked: ``(num_layers, B, H, L, L)``."""
    model(tokens)
    return torch.stack(model.last_weights)


def head_mask_without(heads, num_layers, num_heads):
    mask = torch.ones(num_layers, num_heads)
    for layer, head in heads:
        mask[layer, head] = 0.0
    return mask


@torch.no_grad()
def analyse(model, induction_score, period=TEST_PERIOD, batch_size=64, seed=0, threshold=THRESHOLD):
    """What the chapter reports for one model, on ``batch_size`` test sequences of ``period``.

    The previous-token head is layer 0's head with the highest previous-token score, the
    induction head layer 1's with the highest ``induction_score``; the previous-token heads and
    the induction heads (plural) are those of layer 0 and layer 1 whose score is above
    ``threshold``. Losses on the repeat: with every head; without the top pair; without the best
    other pair (one head of each layer, neither of the top pair: the largest loss of them); without
    every previous-token and induction head (the circuit); without every other head."""
    tokens = repeated_batch(batch_size, period, seed)
    weights = attention_patterns(model, tokens)  # (layers, B, H, L, L)
    previous = previous_token_score(weights).mean(dim=1)  # (layers, H)
    induction = induction_score(weights, period).mean(dim=1)  # (layers, H)
    prev_head = (0, int(previous[0].argmax()))
    ind_head = (1, int(induction[1].argmax()))
    layers, heads = model.num_layers, model.num_heads
    circuit = ([(0, h) for h in range(heads) if previous[0, h] > threshold]
               + [(1, h) for h in range(heads) if induction[1, h] > threshold])
    rest = [(layer, h) for layer in range(layers) for h in range(heads) if (layer, h) not in circuit]

    def without(removed):
        return repeat_losses(model, tokens, period, head_mask_without(removed, layers, heads))["repeat"]

    full = repeat_losses(model, tokens, period)
    without_circuit = repeat_losses(model, tokens, period, head_mask_without(circuit, layers, heads))
    others = {f"{h0},{h1}": without([(0, h0), (1, h1)]) for h0 in range(heads) for h1 in range(heads)
              if (0, h0) != prev_head and (1, h1) != ind_head}
    return {
        "previous_token_head": prev_head, "induction_head": ind_head,
        "previous_token_scores": previous.tolist(), "induction_scores": induction.tolist(),
        "previous_token_score": float(previous[prev_head]), "induction_score": float(induction[ind_head]),
        "circuit": circuit, "rest": rest,
        "loss_first_copy": full["first"], "loss_repeat": full["repeat"],
        "loss_repeat_without_pair": without([prev_head, ind_head]),
        "loss_repeat_without_other_pairs": others,
        "loss_repeat_without_other_pairs_max": max(others.values()),
        "loss_repeat_first_token": full["repeat_first"],
        "loss_repeat_without_circuit": without_circuit["repeat"],
        "entropy_repeat_without_circuit": without_circuit["repeat_entropy"],
        "loss_repeat_without_rest": without(rest) if rest else full["repeat"],
        "chance": CHANCE,
    }
