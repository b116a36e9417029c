"""The contract graded as written: every requirement a stub's docstring or CONTRACT.md states,
and the checks that grade it.

``TABLE`` maps each exercise's stated requirements, each quoted from its docstring (or
CONTRACT.md: ``"contract: ..."``), to the checks that cover it: a case by name, a property a
case carries (``prop``), or a part of the output a driver returns for a case (``key``: the
reference's own output on that case, so a part that is no longer returned fails here). Looked
up in the grader's cases, so that the test fails when a covering case disappears or is renamed,
when a quote is no longer in the text, and when a case covers no stated requirement (a check
with no requirement). ``UNCHECKED`` lists the requirements no case checks (reported as gaps),
each quoted too.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import numpy as np
import pytest

from autograder import scoring
from autograder.grading.exercises import EXERCISES
from autograder.spec import MODULE_OF

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = "contract: "


def case(name):
    return ("case", name)


def prop(name, on):
    return ("property", name, on)


def key(name, on):
    return ("key", name, on)


def cases(*names):
    return [case(n) for n in names]


TABLE = {
    "softmax": {
        "no overflow for logits as large as 1e4": cases("logits of ±1e4, float64", "logits of ±100, float32",
                                                         "one row near 1e4, one near 0", "rows spanning -1e4 to 1e4"),
        "the result is non-negative and sums to one along ``axis``": [
            prop("rows_sum_to_one", "2-D (L, N) float64, last axis"), case("axis=0 of a 2-D array"),
            case("axis=1 of a 3-D array")],
        "array of any shape": cases("one row (1-D input)", "2-D (L, N) float64, last axis", "3-D float64, last axis"),
        "An array of the same shape and float dtype as ``x``": cases("3-D float32, last axis"),
        CONTRACT + "Exercises never modify their inputs in place.": [prop("inputs_unchanged", "3-D float64, last axis")],
    },
    "scaled_dot_product_attention": {
        "``weights = masked_softmax(q @ k^T / sqrt(d_k), mask)`` over the key axis": cases(
            "3-D (B, L, d), no mask, float64", "4-D (B, H, L, d), Lq = Lk, d_k = d_v", "4-D, scores up to ~2e4, float64",
            "3-D, scores up to ±128, float32"),
        "``out = weights @ v``": cases("3-D, d_k != d_v"),
        "``out (..., Lq, d_v)`` and ``weights (..., Lq, Lk)``": cases(
            "3-D, Lq < Lk", "4-D (B, H, Lq, d_k), Lq < Lk, d_k != d_v, no mask"),
        "broadcastable to ``(..., Lq, Lk)``": cases("4-D float32, padding mask (B, 1, 1, Lk)", "4-D, causal mask (Lq, Lk)",
                                                    "4-D, mask (B, H, Lq, Lk) with fully masked rows"),
        "A fully masked query row gets zero weights.": [
            case("3-D (B, L, d), mask (B, L, L) with fully masked rows"),
            prop("masked_exactly_zero", "4-D, mask (B, H, Lq, Lk) with fully masked rows"),
            prop("rows_sum_to_one", "4-D, mask (B, H, Lq, Lk) with fully masked rows")],
        "in the float dtype of ``q``": cases("3-D (B, L, d), float32", "3-D, scores up to ±128, float32"),
        CONTRACT + "Exercises never modify their inputs in place.": [prop("inputs_unchanged", "4-D, causal mask (Lq, Lk)")],
    },
    "padding_mask": {
        "True where the key index is below the valid length.": cases(
            "(B,) lengths between 1 and Lk - 1", "(B,) lengths, one of them 0 and one Lk", "(B,) lengths, a single key"),
        "Boolean array ``(B, 1, Lk)`` for ``(B,)`` lengths": cases("(B,) lengths between 1 and Lk - 1"),
        "``(B, Lq, Lk)`` for ``(B, Lq)``": cases("(B, Lq) lengths between 1 and Lk - 1",
                                                 "(B, Lq) lengths, one of them 0 and one Lk"),
        "valid_lens: integer array": cases("(B,) lengths in int32"),
        CONTRACT + "Exercises never modify their inputs in place.": [prop("inputs_unchanged", "(B,) lengths in int32")],
    },
    "causal_mask": {
        "Query ``i`` may see key ``j`` iff ``j <= i + (Lk - Lq)``": cases("Lq < Lk", "Lq > Lk", "one query against Lk keys",
                                                                         "square (L, L), num_keys given"),
        "``Lk``; defaults to ``Lq``.": cases("square (L, L), num_keys defaulted"),
        "Boolean array ``(Lq, Lk)``.": cases("square (L, L), num_keys given", "Lq < Lk"),
    },
    "masked_softmax": {
        "Softmax over the last axis that ignores masked entries": cases(
            "2-D (L, L) scores and mask, float64", "(B, H, Lq, Lk) scores and mask, float64"),
        "masked entries exactly 0": [prop("masked_exactly_zero", "2-D (L, L) scores and mask, float64")],
        "every other row sums to 1": [prop("rows_sum_to_one", "2-D (L, L) scores and mask, float64")],
        "a fully masked row is all zeros": cases("2-D (L, L), a fully masked row",
                                                 "float64, (B, H, Lq, Lk) with fully masked rows"),
        "``None`` means no mask.": cases("2-D (L, L), mask None"),
        "broadcastable to ``scores``": cases("float64, padding mask (B, 1, 1, Lk)", "float64, causal mask (Lq, Lk)"),
        "no overflow for scores as large as 1e4, masked ones included": cases(
            "scores of ±1e4, masked ones at 3e4, float64", "scores of ±100, masked ones at 300, float32"),
        "Weights of the shape and dtype of ``scores``": cases("2-D (L, L), float32"),
        CONTRACT + "Exercises never modify their inputs in place.": [prop("inputs_unchanged", "2-D (L, L), float32")],
    },
    "split_heads": {
        "head ``h`` holds features ``h*d:(h+1)*d``": cases(
            "float64, (B, L, H*d) = (2, 5, 4*5)", "float32, 2 heads of 6", "head size 1", "more heads than positions",
            "one head, float64"),
        "Any number of leading axes": cases("two leading axes (B, C, L, H*d)", "no leading axis: (L, H*d)"),
        "raise ``ValueError`` when it does not divide the last axis": cases("last axis not divisible by num_heads"),
        "same dtype as ``x``": cases("one head, float32", "float32, 2 heads of 6"),
        "``x`` is left unchanged.": [prop("inputs_unchanged", "float64, (B, L, H*d) = (2, 5, 4*5)")],
    },
    "merge_heads": {
        "the inverse of ``split_heads``: head ``h`` fills features ``h*d:(h+1)*d``": cases(
            "float64, (B, H, L, d) = (2, 4, 5, 3)", "float32, 2 heads of 6", "head size 1", "more heads than positions",
            "one head, float64"),
        "Any number of leading axes": cases("two leading axes (B, C, H, L, d)", "no leading axis: (H, L, d)"),
        "same dtype as ``x``": cases("one head, float32", "float32, 2 heads of 6"),
        "which is left unchanged": [prop("inputs_unchanged", "float64, (B, H, L, d) = (2, 4, 5, 3)")],
    },
    "multi_head_attention": {
        "Project, split into heads, attend, merge, project": cases(
            "self-attention, 3 heads, float64", "self-attention, one head", "distinct query, key and value arrays"),
        "key: ``(B, Lk, E_k)``; value: ``(B, Lk, E_v)``": cases("E_k, E_v != E_q", "Lq != Lk"),
        "``W_v (E_v, H*d_v)``": cases("d_k != d_v"),
        "``W_o (H*d_v, E_out)``": cases("self-attention, 3 heads, float64", "d_k != d_v"),
        "(a missing bias means no bias)": cases("self-attention, no biases"),
        "``(Lq, Lk)`` or ``(B, Lq, Lk)`` masks are\n            shared by all heads": cases(
            "cross-attention, float32, causal mask (Lq, Lk)", "self-attention, mask (B, L, L) with fully masked rows",
            "self-attention, padding mask (B, 1, L)"),
        "a 4-D mask broadcasts against ``(B, H, Lq, Lk)``": cases("cross-attention, 4-D mask per head (B, H, Lq, Lk)"),
        "``out (B, Lq, E_out)``, ``weights (B, H, Lq, Lk)``": [
            prop("rows_sum_to_one", "cross-attention, 4-D mask per head (B, H, Lq, Lk)")],
        CONTRACT + "A query row whose keys are all masked gets **all-zero weights and a zero attention output**": [
            prop("masked_exactly_zero", "self-attention, mask (B, L, L) with fully masked rows")],
        CONTRACT + "NumPy exercises accept float32 and float64 and return the input's float dtype.": cases(
            "self-attention, float32", "cross-attention, float32, causal mask (Lq, Lk)"),
        CONTRACT + "Exercises never modify their inputs in place.": [
            prop("inputs_unchanged", "distinct query, key and value arrays")],
    },
    "parameter_count": {
        "``key_dim``\n    and ``value_dim`` are *per head*": cases("query_dim, num_heads, key_dim; the rest defaulted",
                                                                "one head, the rest defaulted"),
        "``value_dim`` defaults to ``key_dim``": cases("value_dim given", "value_dim and output_dim given"),
        "``output_dim`` to\n    ``query_dim``": cases("output_dim given", "output_dim given, bias=False"),
        CONTRACT + "bias=True)": cases("bias=False", "all six arguments positional"),
        "An ``int``.": [key("result_type", "value_dim given")],
    },
    "MultiHeadAttention": {
        "with submodules ``W_q W_k W_v W_o`` (``nn.Linear``: ``W_q: E -> E``, ``W_k: kdim -> E``,\n    "
        "``W_v: vdim -> E``, ``W_o: E -> E``)": [key("param_shapes", "kdim, vdim != E"),
                                                 key("param_shapes", "E = kdim = vdim, Lq = Lk, no mask")],
        "(``nn.Linear``: ``W_q: E -> E``": [
            prop("projections_are_linear", "E = kdim = vdim, Lq = Lk, no mask: W_q..W_o are nn.Linear")],
        "attributes ``num_heads`` and\n    ``head_dim = embed_dim // num_heads``": [
            key("num_heads", "E = kdim = vdim, Lq = Lk, no mask"), key("head_dim", "E = kdim = vdim, Lq = Lk, no mask")],
        "bias=True": cases("bias=False"),
        "query ``(B, Lq, E)``, key ``(B, Lk, kdim)``, value ``(B, Lk, vdim)``": cases("kdim, vdim != E", "Lq < Lk"),
        "``(Lq, Lk)`` / ``(B, Lq, Lk)`` shared by the heads or 4-D against\n    ``(B, H, Lq, Lk)``": cases(
            "causal mask (L, L)", "mask (B, L, L) with fully masked rows", "4-D mask per head (B, H, L, L)",
            "kdim, vdim != E, Lq < Lk, causal mask (Lq, Lk), head_mask"),
        "``head_mask (H,)`` multiplies each head's output before ``W_o``": cases(
            "head_mask (1, 0, 0.5)", "kdim, vdim != E, Lq < Lk, causal mask (Lq, Lk), head_mask"),
        "``weights (B, H, Lq, Lk)`` (before\n    dropout)": [prop("rows_sum_to_one", "E = kdim = vdim, Lq = Lk, no mask"),
                                                     key("weights_train",
                                                           "dropout=0.5: eval mode, weights before dropout, training mode")],
        "Dropout acts on the attention weights in training mode only.": [
            prop("dropout_in_training", "dropout=0.5: eval mode, weights before dropout, training mode")],
        "Fully masked\n    query rows give zero weights, never NaN.": [
            prop("masked_exactly_zero", "mask (B, L, L) with fully masked rows")],
        "gradients reach the inputs and every weight": [
            key("grads", "gradients w.r.t. query, key, value and W_q..W_o (float64)")],
        "builds a layer with identical outputs from a\n    ``torch.nn.MultiheadAttention(..., batch_first=True)``": cases(
            "from_torch, packed in-projection (kdim = vdim = E)",
            "from_torch, kdim and vdim, Lq < Lk, no bias, padding mask (B, 1, Lk)"),
        CONTRACT + "`out (B, Lq, E)`": cases("float32", "E = kdim = vdim, Lq = Lk, no mask"),
        CONTRACT + "Exercises never modify their inputs in place.": [
            prop("inputs_unchanged", "E = kdim = vdim, Lq = Lk, no mask")],
    },
    "attention_entropy": {
        "Entropy in nats of each query's attention distribution": cases(
            "2-D weights (Lq, Lk)", "float64 softmax weights", "uniform rows (entropy log(Lk))"),
        "with ``0 log 0 = 0``": cases("2-D weights with zeros", "one-hot rows have entropy 0", "float32 with zeros"),
        "a\n    fully masked, all-zero row has entropy 0": cases("zeros at masked keys and fully masked rows (0 log 0 = 0)"),
        "same float dtype as ``weights``": cases("float32 stays float32", "float32 with zeros"),
        CONTRACT + "Exercises never modify their inputs in place.": [prop("inputs_unchanged", "float64 softmax weights")],
    },
    "head_importance": {
        "accumulate its absolute value weighted by the batch size": cases(
            "lab model, normalize=False, batches of 2 and 1", "lab model, one example per batch (as in the lab), "
            "normalize=False"),
        "it starts at ones, or at ``head_mask`` when given": cases(
            "lab model, head_mask with two heads removed, batches of 2 and 1"),
        "a removed head's importance is 0": cases("lab model, head_mask with two heads removed, batches of 2 and 1"),
        "each layer's row is divided by its L2 norm": cases(
            "lab model (committed weights), normalize=True, batches of 2 and 1",
            "a random model of 2 layers x 5 heads, batches of 2 and 1"),
        "a layer whose heads\n    are all removed stays 0": cases(
            "lab model, head_mask removing every head of the last layer, one batch of 2"),
        "The model's parameters and mode (``model.training``) must be\n    left as they were.": [
            key("model parameters unchanged", "lab model, normalize=False, batches of 2 and 1"),
            key("model mode unchanged (training=True)", "a random model left in training mode, normalize=False")],
        "Tensor ``(num_layers, num_heads)``, float32, no grad.": [
            key("result requires grad", "lab model, normalize=False, batches of 2 and 1")],
        CONTRACT + "Exercises never modify their inputs in place.": [
            key("the caller's head_mask left as it was", "lab model, head_mask with two heads removed, batches of 2 and 1")],
    },
    "prune_heads": {
        "the matching output rows of\n    ``W_q W_k W_v`` (weights and biases) and input columns of ``W_o``": [
            key("param_shapes", "float64 layer, 6 heads of 4: prune [3, 5]"),
            case("cross-attention (kdim 10, vdim 14, Lq 3, Lk 7), no biases: prune [0, 2, 5]")],
        "update\n    ``num_heads``": [key("num_heads", "float64 layer, 6 heads of 4: prune [3, 5]")],
        "the layer records\n    the removed ones in ``layer.pruned_heads``": [
            key("pruned_heads (sorted)", "prune [5], then [3, 5] (original numbering)")],
        "repeated\n    calls work and already-removed heads are ignored": cases(
            "prune [5], then [3, 5] (original numbering)", "prune [2], then [2, 5] (2 is already gone), then [0]",
            "5 heads of 3: prune [4], then [3], then [0, 1]", "prune nothing"),
        "the layer's output equals\n    the unpruned layer's output with those heads masked": [
            key("the output after pruning heads [3, 5]", "float64 layer, 6 heads of 4: prune [3, 5]")],
        "The layer keeps its\n    dtype.": [key("param_dtypes", "float32 layer, 6 heads of 4: prune [3, 5]")],
        "The same ``layer``.": [key("prune_heads returned the same layer", "float64 layer, 6 heads of 4: prune [3, 5]")],
    },
    "chunked_attention": {
        "Equal to the plain computation.": cases(
            "Lq = Lk = 8, d_k = d_v, chunk_size 4", "Lq = Lk = 8, d_k != d_v, chunk_size 4",
            "Lq 4 < Lk 8, d_k = d_v, chunk_size 4", "chunk_size 16 larger than Lk 6", "3-D inputs (B, L, d), causal, Lq 6, Lk 9"),
        "an online\n    softmax": cases("float32, scores of about a hundred, Lq 4, Lk 10",
                                     "every score about -2000, Lq 4, Lk 10, chunk_size 3"),
        "``Lk`` need not be a multiple of it": cases("Lq 5, Lk 11, chunk_size 4 (does not divide Lk)"),
        "causal: apply the end-aligned causal mask": cases(
            "Lq = Lk = 8, d_k = d_v, causal, chunk_size 4", "causal, Lq < Lk, chunk_size 2", "chunk_size 1, causal, Lq 5, Lk 6"),
        "their output is zero, never NaN": cases("causal, Lq 8 > Lk 5, chunk_size 2"),
        "in the dtype of ``q``": cases("Lq = Lk = 8, d_k = d_v, float32, chunk_size 4"),
        "The inputs are not modified.": [prop("inputs_unchanged", "Lq = Lk = 8, d_k = d_v, chunk_size 4")],
        "never holding the full ``(Lq, Lk)`` score matrix": [
            prop("never_holds_all_scores", "Lq 64 < Lk 512, d_k = d_v, chunk_size 16 (memory measured)")],
    },
    "repeat_kv": {
        "each key/value head repeated ``n_rep`` times\n    *consecutively*": cases(
            "3 kv heads, n_rep 2", "multi-query: 1 kv head, n_rep 4", "4 kv heads, n_rep 2, one position"),
        "``(B, Hkv, L, d) -> (B, Hkv * n_rep, L, d)``": cases("n_rep 1 returns the same values"),
        "in the dtype of ``x``": cases("2 kv heads, n_rep 3, float32"),
        CONTRACT + "Exercises never modify their inputs in place.": [prop("inputs_unchanged", "3 kv heads, n_rep 2")],
    },
    "GroupedQueryAttention": {
        "Submodules ``W_q: E -> H*d``, ``W_k: E -> Hkv*d``,\n    ``W_v: E -> Hkv*d``, ``W_o: H*d -> E``": [
            key("param_shapes", "6 query heads, 2 kv heads, no mask")],
        "attributes ``num_heads``,\n    ``num_kv_heads``, ``head_dim = E // H``": [
            key("num_kv_heads", "6 query heads, 2 kv heads, no mask"), key("head_dim", "6 query heads, 2 kv heads, no mask")],
        "MHA when equal": cases("multi-head (num_kv_heads = num_heads), no mask", "multi-head (num_kv_heads = num_heads), causal"),
        "multi-query attention when 1": cases("multi-query (num_kv_heads = 1), causal, float32"),
        "sharing ``num_kv_heads`` key/value heads": cases("6 query heads, 2 kv heads, no mask", "6 query heads, 2 kv heads, causal"),
        "bias=True": cases("3 kv heads, bias=False, causal"),
        "``W_o: H*d -> E``\n    (``nn.Linear``)": [
            prop("projections_are_linear", "multi-head (num_kv_heads = num_heads), no mask: W_q..W_o are nn.Linear")],
        "``mask`` boolean\n    broadcastable to ``(B, H, Lq, Lk)``": cases(
            "boolean mask (B, 1, Lq, Lk) with a fully masked row", "decoding: 2 new tokens, padding mask and causal"),
        "the new keys and values are appended to it first and the queries\n    attend to everything cached": cases(
            "decoding: 3 new tokens after 7 cached, causal (end-aligned)",
            "decoding: 1 new token after 7 cached, causal, float32"),
        "Query rows with no allowed key give a zero output, never NaN.": cases(
            "boolean mask (B, 1, Lq, Lk) with a fully masked row"),
    },
    "KVCache": {
        "``update(k, v)`` appends\n    ``k (B, Hkv, L_new, d)`` and ``v (B, Hkv, L_new, d_v)`` along the sequence axis and returns\n"
        "    all cached ``(keys, values)``": [
            key("keys, update 1", "d_v = d_k: a prompt of 3 positions, then 1, 1"),
            key("values, update 3", "a prompt of 4 positions, then 1, 1"),
            case("a prompt of 6 positions, then 1, 1, 2"), case("a single update of 7 positions"),
            case("one position at a time, float32")],
        "``len(cache)`` is the number of cached positions": [
            key("len, empty", "a single update of 7 positions"), key("len, update 1", "a single update of 7 positions")],
        "Decoding one token at a time with a cache equals the full causal pass.": cases(
            "d_v = d_k: decoding 4 positions after a prompt of 2", "decoding 8 positions after a prompt of 3",
            "decoding from the first token, float32"),
    },
    "sinusoidal_positions": {
        "``PE[t, 2i] = sin(p / base^(2i/dim))`` and\n    ``PE[t, 2i+1] = cos(p / base^(2i/dim))``": cases(
            "5 to 7 positions from 0, dim 8", "8 to 11 positions from 0, dim 14 to 20", "35 to 44 positions from 0, dim 32"),
        "offset: the first position": cases("one position after a cache, dim 4", "4 to 6 positions after a cache, dim 12"),
        "base: the base of the wavelengths": cases("3 positions after a cache, base 50 to 199, dim 6",
                                                   "4 positions from 0, base 8 to 12, dim 10"),
        "Tensor ``(L, dim)``, float32.": cases("5 to 7 positions from 0, dim 8"),
        "the number of features, even (``ValueError`` otherwise)": cases("an odd dim (7 to 13)"),
    },
    "apply_rope": {
        "``out = cat([x1 cos - x2 sin, x2 cos + x1 sin], -1)``": cases(
            "(L, d), d = 8, from position 0", "(B, L, d), from position 0", "(B, H, L, d), from position 0",
            "(B, H, L, d), d = 16, 28 to 32 positions"),
        "offset: the position of ``x[..., 0, :]``": cases("one new position after a cache",
                                                         "3 new positions after a cache, float32"),
        "base: the base of the wavelengths": cases("(B, H, L, d), base 300 to 899"),
        "Compute the angles in\n        float64": cases("one position at 2500 to 3499, float64"),
        "Tensor of the shape and dtype of ``x``": cases("(B, H, L, d), float32, from position 0"),
        "``x`` is not modified.": [prop("inputs_unchanged", "(B, H, L, d), from position 0")],
        "``d`` even (``ValueError`` otherwise)": cases("(B, H, L, d), an odd d"),
    },
    "generate": {
        "the ``argmax`` when ``temperature == 0`` (greedy)": cases(
            "greedy, without the cache, B = 1", "greedy, with the cache, B = 1", "greedy, with the cache, B = 3",
            "greedy, without the cache, B = 2"),
        "else ``torch.multinomial(softmax(logits / temperature), 1, generator=generator)``, one call\n    per step": cases(
            "sampled at temperature 1, with the cache", "sampled at temperature 0.6, without the cache",
            "sampled at temperature 1.8, with the cache"),
        "With ``use_cache``, run the whole prompt once with fresh caches, then only each new token\n    ``(B, 1)``": [
            key("with use_cache: one call on the whole prompt with fresh caches, then one new token per call",
                "greedy, with the cache, B = 1")],
        "Without, run the\n    whole sequence so far at every step.": [
            key("without use_cache: no caches, the whole sequence at every call", "greedy, without the cache, B = 1")],
        "``L >= 1``": cases("greedy, with the cache, a prompt of one token"),
        "0 returns the prompt": cases("zero new tokens"),
        "prompt: ``(B, L)`` int64 token ids, ``L >= 1``; not modified.": [
            key("the prompt left as it was", "greedy, with the cache, B = 3")],
        "model: as above; not modified": [
            key("model parameters unchanged", "greedy, with the cache, B = 1"),
            key("model parameters unchanged", "sampled at temperature 1, with the cache")],
        "``(B, L + max_new_tokens)`` int64: the prompt, then the new tokens.": cases("greedy, with the cache, B = 3"),
    },
    "induction_score": {
        "key ``i - period + 1``": cases("(L, L), period L / 2", "(B, H, L, L), period L / 2", "(B, H, L, L), period 3",
                                        "(B, H, L, L), period 2"),
        "averaged over the queries that have an earlier copy": cases("(B, H, L, L), period 1", "(B, H, L, L), period L - 1"),
        "e.g. ``(B, H, L, L)``": cases("(H, L, L), period 3", "(L, L), period L / 2"),
        "Tensor ``(...)``, the dtype of ``weights``": cases("(B, H, L, L), float32"),
        "``1 <= period < L`` (``ValueError``\n            otherwise)": cases("(B, H, L, L), period L",
                                                                     "(B, H, L, L), period 0"),
        CONTRACT + "Exercises never modify their inputs in place.": [prop("inputs_unchanged", "(B, H, L, L), period 3")],
    },
}

# Stated, but no case checks it.
UNCHECKED = {
    # A precondition on the caller: neither the stub nor CONTRACT.md says what prune_heads must do
    # when asked to remove every head (no exception is named), so no case asks it to; grading
    # one behaviour would add a requirement the learner was never given.
    "prune_heads": ["At least one head\n    must remain."],
}


@functools.cache
def docstring(exercise_id: str) -> str:
    """The stub's docstring of ``exercise_id`` and its module's, read from the file (never run)."""
    tree = ast.parse((ROOT / "mha_exercises" / f"{MODULE_OF[exercise_id]}.py").read_text())
    node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == exercise_id)
    return (ast.get_docstring(node, clean=False) or "") + "\n" + (ast.get_docstring(tree, clean=False) or "")


def _flat(text: str) -> str:
    return " ".join(text.split())


def stated(exercise_id: str, requirement: str) -> bool:
    if requirement.startswith(CONTRACT):
        return _flat(requirement[len(CONTRACT):]) in _flat((ROOT / "CONTRACT.md").read_text())
    return _flat(requirement) in _flat(docstring(exercise_id))


@functools.cache
def drawn(exercise_id: str) -> dict:
    """The graded cases by name; an intervention's copy (scoring.PROBE) bears its case's name
    but is never graded, so no requirement is checked by it."""
    cases_ = EXERCISES[exercise_id].cases(np.random.default_rng(0))
    return {c.name: c for c in cases_ if scoring.PROBE not in (c.features or {})}


def test_the_table_covers_every_exercise():
    assert set(TABLE) == set(EXERCISES)
    assert set(UNCHECKED) <= set(EXERCISES)


@pytest.mark.parametrize("exercise_id", list(TABLE))
def test_every_stated_requirement_is_quoted_and_checked(exercise_id):
    found = drawn(exercise_id)
    for requirement, refs in TABLE[exercise_id].items():
        assert stated(exercise_id, requirement), f"{exercise_id}: {requirement!r} is no longer stated"
        assert refs, f"{exercise_id}: {requirement!r} names no check (list it in UNCHECKED)"
        for ref in refs:
            name = ref[-1]
            assert name in found, f"{exercise_id}: the case {name!r} covering {requirement!r} is gone"
            if ref[0] == "property":
                assert ref[1] in found[name].properties, f"{exercise_id}: {name!r} no longer checks {ref[1]}"
    for requirement in UNCHECKED.get(exercise_id, []):
        assert stated(exercise_id, requirement), f"{exercise_id}: {requirement!r} is no longer stated"


@pytest.mark.parametrize("exercise_id", list(TABLE))
def test_every_check_has_a_stated_requirement(exercise_id):
    """Each case and each property the exercise's cases check is named for some requirement."""
    named = {ref[-1] for refs in TABLE[exercise_id].values() for ref in refs}
    found = drawn(exercise_id)
    assert set(found) <= named, f"{exercise_id}: cases with no stated requirement: {sorted(set(found) - named)}"
    properties = {p for c in found.values() for p in c.properties}
    covered = {ref[1] for refs in TABLE[exercise_id].values() for ref in refs if ref[0] == "property"}
    assert properties <= covered, f"{exercise_id}: property checks with no stated requirement: {properties - covered}"


KEYED = sorted({(e, ref[1], ref[2]) for e, rows in TABLE.items() for refs in rows.values() for ref in refs
                if ref[0] == "key"})


@pytest.mark.parametrize("exercise_id", sorted({e for e, _, _ in KEYED}))
def test_the_parts_a_requirement_is_checked_by_are_returned(exercise_id):
    """A driver's part named in the table is in its output on that case (the reference's run:
    the judge compares the learner's part with it)."""
    from autograder.grading import judge

    for _, part, name in [k for k in KEYED if k[0] == exercise_id]:
        output = judge.reference_output(drawn(exercise_id)[name])
        assert isinstance(output, dict) and part in output, (exercise_id, name, part, sorted(output))
        if re.match(r"model (parameters|mode) unchanged|the prompt left|the caller's head_mask|prune_heads returned",
                    part):
            assert output[part] is True, (exercise_id, name, part)  # what a learner's run must match
