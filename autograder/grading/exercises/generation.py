"""Checks of chapter 8's ``generate`` (``language_model.py``, PyTorch). The chapter's other
checks: ``positions.py``, ``induction.py``."""
from __future__ import annotations

import math

import numpy as np
import torch

from ...scoring import INERT, PROBE
from ...spec import Case, Exercise
from .cases import randn

def _lm_state(rng, vocab, width, layers, positions):
    """The harness model's weights, float64, scaled so that logits are of order one to three: the
    greedy choice is clear and sampling still has choices."""
    state = {"embed": randn(rng, (vocab, width)), "pos": randn(rng, (positions, width)),
             "unembed": randn(rng, (width, vocab), scale=2.0 / math.sqrt(width))}
    for i in range(layers):
        state[f"qkv{i}"] = randn(rng, (width, 3 * width), scale=1.5 / math.sqrt(width))
        state[f"out{i}"] = randn(rng, (width, width), scale=1.0 / math.sqrt(width))
    return state


def _decoding(temperature):
    return ("greedy (temperature 0)" if not temperature else "sampled at temperature 1" if temperature == 1
            else "sampled at a temperature other than 1")


def generate_cases(rng):
    V, E, H, layers, P = int(rng.integers(9, 14)), 12, 3, 1, 64

    def case(name, prompt, new, temperature=0.0, use_cache=True, rung=1, state=None, seed=None, of=None):
        batch, length = prompt.shape
        # Computed from the inputs: every argument of the call is one feature's, so a pair (or an
        # intervention) differs in what it names alone.
        features = {"decoding": _decoding(temperature),
                    "cache": "with the cache" if use_cache else "without the cache",
                    "batch": "B = 1" if batch == 1 else "B > 1",
                    "prompt": "a prompt of one token" if length == 1 else "a prompt of several tokens",
                    "new tokens": "zero new tokens" if new == 0 else "new tokens"}
        if new == 0:  # the model is never called: it passes whatever the decoding loop does
            features[INERT] = True
        if of:
            features[PROBE] = list(of)
        inputs = dict(state=_lm_state(rng, V, E, layers, P) if state is None else state, num_heads=H,
                      prompt=prompt, max_new_tokens=int(new), temperature=float(temperature), use_cache=use_cache,
                      seed=(int(rng.integers(0, 2**31)) if seed is None else seed) if temperature else None,
                      sizes={"B": batch, "L + max_new_tokens": length + new})
        return Case(name=name, driver="generate_run", inputs=inputs, rung=rung, rtol=0.0, atol=0.0,
                    features=features)

    def probed(name, batch, length, new, temperature=0.0, use_cache=True, rung=1):
        """The case, then its interventions: a copy with one argument changed toward the simplest
        case (the same weights, prompt rows and seed), run only to word a cause."""
        main = case(name, rng.integers(0, V, (batch, length)).astype(np.int64), new, temperature, use_cache, rung)
        given = main.inputs
        same = dict(state=given["state"], seed=given["seed"], rung=rung)
        out = [main]
        if temperature:
            out.append(case(name, given["prompt"], new, 1.0 if temperature != 1 else 0.0, use_cache,
                            of=(name, "decoding"), **same))
        # A sampled case's other copies would sample fewer or other draws, and may pass by chance:
        # only its decoding is changed.
        if use_cache and not temperature:
            out.append(case(name, given["prompt"], new, temperature, False, of=(name, "cache"), **same))
        if batch > 1 and not temperature:
            out.append(case(name, given["prompt"][:1], new, temperature, use_cache, of=(name, "batch"), **same))
        return out

    return [
        *probed("greedy, without the cache, B = 1", 1, int(rng.integers(3, 6)), 3, use_cache=False, rung=0),
        *probed("greedy, with the cache, B = 1", 1, int(rng.integers(3, 6)), 4, rung=0),
        *probed("greedy, with the cache, B = 3", 3, int(rng.integers(4, 7)), 4),
        *probed("greedy, with the cache, a prompt of one token", 2, 1, 5),
        *probed("greedy, without the cache, B = 2", 2, int(rng.integers(2, 5)), 4, use_cache=False),
        *probed("zero new tokens", 2, 4, 0),
        *probed("sampled at temperature 1, with the cache", 3, int(rng.integers(2, 5)), 5, temperature=1.0, rung=2),
        *probed("sampled at temperature 0.6, without the cache", 2, 3, 4, temperature=0.6, use_cache=False, rung=2),
        *probed("sampled at temperature 1.8, with the cache", 4, 2, 5, temperature=1.8, rung=2),
    ]


def _generate(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True, *, new_only=False,
              position=-1, temp="divide", use_generator=True, feed="new", always_greedy=False, softmax_dim=-1,
              count=0, cache_ignored=False, always_sample=False):
    """The reference with one step changed; each bug below sets one knob (two or three for a
    published loop copied as it stands). ``cache_ignored``: no caches, the whole sequence at
    every step, always sampled; ``always_sample``: sampled at temperature 1 whatever the temperature."""
    temperature = 1.0 if always_sample else temperature
    if cache_ignored:  # nanoGPT's loop: the model on the whole sequence at each step, never before the first
        for _ in range(max_new_tokens):
            probs = torch.softmax(model(prompt)[:, -1, :] / temperature, dim=-1)
            prompt = torch.cat([prompt, torch.multinomial(probs, 1, generator=generator if use_generator else None)], 1)
        return prompt
    tokens = prompt
    caches = model.new_caches() if use_cache else None
    logits = model(tokens, caches=caches)
    for _ in range(max_new_tokens + count):
        last = logits[:, position, :]
        if temperature == 0 or always_greedy:
            next_token = last.argmax(dim=-1, keepdim=True)
        else:
            scaled = last / temperature if temp == "divide" else last * temperature if temp == "multiply" else last
            probs = torch.softmax(scaled, dim=softmax_dim)
            next_token = torch.multinomial(probs, 1, generator=generator if use_generator else None)
        tokens = torch.cat([tokens, next_token], dim=1)
        if feed == "all":  # the whole sequence, into the caches too
            logits = model(tokens, caches=caches)
        elif feed == "new_without_cache":
            logits = model(next_token, caches=caches)
        else:
            logits = model(next_token, caches=caches) if use_cache else model(tokens)
    return tokens[:, prompt.shape[1]:] if new_only else tokens


def _generate_bug(name, **knobs):
    def bug(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
        return _generate(model, prompt, max_new_tokens, temperature, generator, use_cache, **knobs)

    bug.__name__ = bug.__qualname__ = name
    return bug


GENERATE = Exercise(
    id="generate",
    cases=generate_cases,
    ladder=(("greedy decoding, one sequence", ""),
            ("batches, a one-token prompt, zero new tokens", "every row of the batch decoded at once; the "
             "prompt returned unchanged when nothing is added"),
            ("sampling with a generator", "softmax(logits / temperature) over the vocabulary, "
             "torch.multinomial(probs, 1, generator=generator) once per step")),
    hints={"with the cache": "call the model on the prompt once, with caches = model.new_caches(), then on the new "
                             "token only",
           "without the cache": "without caches the model sees only what you give it: call model(tokens) on the "
                                "whole sequence at every step",
           "B > 1": "decode every row of the batch at once: each step's next token is (B, 1)",
           "a prompt of one token": "the prompt may be a single token: (B, 1)",
           "zero new tokens": "with max_new_tokens = 0, return the prompt unchanged",
           "sampled at temperature 1": "sample torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, "
                                       "generator=generator), once per step",
           "sampled at a temperature other than 1": "divide the logits by the temperature before the softmax"},
    bugs={
        "your generate returns only the new tokens: return the prompt followed by them":
            _generate_bug("new_only", new_only=True),
        "your next token comes from the logits of the first position: it is predicted at the last one "
        "(logits[:, -1])": _generate_bug("first_position", position=0),
        "your temperature multiplies the logits: divide them by it (a low temperature sharpens)":
            _generate_bug("temperature_multiplies", temp="multiply"),
        "your sampled tokens match the reference's at temperature 1 whatever the temperature: divide the logits "
        "by it before the softmax (multinomial renormalises probabilities, so dividing them changes nothing)":
            _generate_bug("temperature_ignored", temp="ignored"),
        "your samples ignore the generator they are given: pass generator=generator to torch.multinomial":
            _generate_bug("global_rng", use_generator=False),
        "with the cache you run the whole sequence again at every step: the caches already hold it, so "
        "only the new token goes in (model(next_token, caches=caches))": _generate_bug("feeds_all", feed="all"),
        "without the cache you run only the new token: without caches the model sees only what you "
        "give it, so give it the whole sequence": _generate_bug("no_context", feed="new_without_cache"),
        "your generate decodes greedily even at temperature > 0: sample from softmax(logits / temperature)":
            _generate_bug("always_greedy", always_greedy=True),
        "your softmax runs over the batch axis: it runs over the vocabulary (dim=-1)":
            _generate_bug("softmax_over_batch", softmax_dim=0),
        # karpathy/nanoGPT's GPT.generate (and the many loops copied from it) as it stands: no generator
        # argument, no cache; at temperature 0 it divides by zero and raises, so only its sampled cases match.
        "your sampled tokens match the reference's drawn from torch's global generator instead of the "
        "generator passed in (pass generator=generator to torch.multinomial), and your generate does not use "
        "the cache as asked (one call on the prompt with model.new_caches(), then one new token per call)":
            _generate_bug("nanogpt", use_generator=False, cache_ignored=True),
        "your tokens match sampling at temperature 1 whatever the temperature (never greedy at temperature 0, "
        "never divided by it), from torch's global generator instead of the generator passed in, and your "
        "generate does not use the cache as asked (one call on the prompt with model.new_caches(), then one "
        "new token per call)": _generate_bug("always_sampled", use_generator=False, cache_ignored=True,
                                             always_sample=True),
        "your generate adds one token too many": _generate_bug("one_too_many", count=1),
        "your generate adds one token too few": _generate_bug("one_too_few", count=-1),
    },
)


EXERCISES = (GENERATE,)
