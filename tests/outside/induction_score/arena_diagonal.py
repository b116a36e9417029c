"""ARENA's induction score (chapter 1.2, TransformerLens): the mean of the attention pattern's diagonal
at offset 1 - seq_len, `pattern.diagonal(dim1=-2, dim2=-1, offset=1 - seq_len)` then the mean over positions.

Source: https://github.com/callummcdougall/ARENA_3.0, chapter1_transformer_interp/exercises/part2_intro_to_mech_interp
solutions.py (`induction_attn_detector`: `attention_pattern.diagonal(-seq_len + 1).mean()`;
`induction_score_hook`: `pattern.diagonal(dim1=-2, dim2=-1, offset=1 - seq_len)`; commit not recorded).
Licence: MIT.
Adapter: seq_len = period; batch and head axes kept (no einops reduce over them).
"""
import torch

OUTSIDE = {
    "exercise": "induction_score",
    "source": "callummcdougall/ARENA_3.0 part2_intro_to_mech_interp induction_score_hook",
    "licence": "MIT",
    "verdict": "loses",
    "cause": "the diagonal at offset 1 - period starts at query period - 1 (key 0, ARENA's BOS), so it averages one query more than i = period .. L - 1; and period 0 or L is not refused.",
    "named": [r"period - 1|one (more|extra) (query|position|entry)|from query period - 1|starts? one (query|position) early|includes? query|diagonal"],
    "false": [r"float64|dtype", r"transpos"],
}


def induction_score(weights, period):
    induction_stripe = weights.diagonal(dim1=-2, dim2=-1, offset=1 - period)
    return induction_stripe.mean(dim=-1)
