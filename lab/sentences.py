"""Chapter 8's text: English-like sentences from a small grammar, generated here (no download,
no licence to track), one character per token.

The grammar has what makes text need attention: a verb agrees in number with its subject,
across a prepositional phrase whose noun may have the other number ("the cat near the dogs
sleeps."), and ``a`` takes a singular noun, ``two`` a plural one. :func:`is_valid` says whether a
sentence belongs to the grammar, so the model's samples can be checked, not only read.
"""
from __future__ import annotations

import numpy as np
import torch

NOUNS = {"cat": "cats", "dog": "dogs", "bird": "birds", "fox": "foxes", "girl": "girls", "boy": "boys"}
INTRANSITIVE = {"sleeps": "sleep", "runs": "run", "sings": "sing", "waits": "wait"}  # singular: plural
TRANSITIVE = {"sees": "see", "likes": "like", "chases": "chase", "helps": "help"}
ADJECTIVES = ("small", "old", "red", "happy")
PREPOSITIONS = ("near", "behind", "with")
DETERMINERS = {"sg": ("the", "a"), "pl": ("the", "two")}

ALPHABET = " ." + "".join(sorted(set("".join([*NOUNS, *NOUNS.values(), *INTRANSITIVE, *INTRANSITIVE.values(),
                                                *TRANSITIVE, *TRANSITIVE.values(), *ADJECTIVES,
                                                *PREPOSITIONS, "the", "a", "two"])) - {" ", "."}))
VOCAB_SIZE = len(ALPHABET)
_INDEX = {c: i for i, c in enumerate(ALPHABET)}


def _noun_phrase(rng, number):
    words = [rng.choice(DETERMINERS[number])]
    if rng.random() < 0.3:
        words.append(rng.choice(ADJECTIVES))
    noun = rng.choice(list(NOUNS))
    words.append(noun if number == "sg" else NOUNS[noun])
    return words


def sentence(rng):
    """One sentence, e.g. ``"the old cat near two dogs chases a bird."``."""
    number = "sg" if rng.random() < 0.5 else "pl"
    words = _noun_phrase(rng, number)
    if rng.random() < 0.4:  # a prepositional phrase between the subject and its verb
        words += [rng.choice(PREPOSITIONS), *_noun_phrase(rng, "sg" if rng.random() < 0.5 else "pl")]
    if rng.random() < 0.5:
        verb = rng.choice(list(INTRANSITIVE))
        words.append(verb if number == "sg" else INTRANSITIVE[verb])
    else:
        verb = rng.choice(list(TRANSITIVE))
        obj = _noun_phrase(rng, "sg" if rng.random() < 0.5 else "pl")
        words += [verb if number == "sg" else TRANSITIVE[verb], *obj]
    return " ".join(words) + "."


def text(num_sentences, seed):
    """``num_sentences`` sentences drawn with ``seed``, separated by spaces."""
    rng = np.random.default_rng(seed)
    return " ".join(sentence(rng) for _ in range(num_sentences))


def unseen_text(num_sentences, seed, seen):
    """``num_sentences`` sentences drawn with ``seed``, skipping every sentence in ``seen`` (a set,
    e.g. the training sentences): a held-out text the model never saw word for word. The grammar is
    small, so a plain second draw repeats many training sentences (about 4 in 10 of them)."""
    rng = np.random.default_rng(seed)
    drawn = []
    while len(drawn) < num_sentences:
        candidate = sentence(rng)
        if candidate not in seen:
            drawn.append(candidate)
    return " ".join(drawn)


def sentence_set(num_sentences, seed):
    """The distinct sentences of ``text(num_sentences, seed)``: what a model trained on it saw."""
    rng = np.random.default_rng(seed)
    return {sentence(rng) for _ in range(num_sentences)}


def encode(s):
    """A string of the alphabet -> ``(len(s),)`` int64 token ids."""
    unknown = sorted(set(s) - set(_INDEX))
    if unknown:
        raise ValueError(f"characters outside the alphabet {ALPHABET!r}: {unknown}")
    return torch.tensor([_INDEX[c] for c in s], dtype=torch.int64)


def decode(ids):
    return "".join(ALPHABET[int(i)] for i in ids)


def _parse_np(words, i):
    """The number ("sg"/"pl") of the noun phrase at ``words[i:]`` and where it ends, or None."""
    if i >= len(words):
        return None
    det = words[i]
    i += 1
    if i < len(words) and words[i] in ADJECTIVES:
        i += 1
    if i >= len(words):
        return None
    noun = words[i]
    number = "sg" if noun in NOUNS else "pl" if noun in NOUNS.values() else None
    if number is None or det not in DETERMINERS[number]:
        return None
    return number, i + 1


def is_valid(s):
    """Whether ``s`` (one sentence, ending with ".") is a sentence of the grammar."""
    if not s.endswith(".") or "." in s[:-1]:
        return False
    words = s[:-1].split(" ")
    subject = _parse_np(words, 0)
    if subject is None:
        return False
    number, i = subject
    if i < len(words) and words[i] in PREPOSITIONS:
        inner = _parse_np(words, i + 1)
        if inner is None:
            return False
        i = inner[1]
    if i >= len(words):
        return False
    verb = words[i]
    forms = {**{k: ("sg", False) for k in INTRANSITIVE}, **{v: ("pl", False) for v in INTRANSITIVE.values()},
             **{k: ("sg", True) for k in TRANSITIVE}, **{v: ("pl", True) for v in TRANSITIVE.values()}}
    if verb not in forms or forms[verb][0] != number:
        return False
    if not forms[verb][1]:
        return i + 1 == len(words)
    obj = _parse_np(words, i + 1)
    return obj is not None and obj[1] == len(words)


def complete_sentences(s):
    """The whole sentences of a generated string: split after each ".", the unfinished tail dropped."""
    parts = [p.strip() + "." for p in s.split(".")[:-1]]
    return [p for p in parts if p != "."]


def batches(data, batch_size, context, generator, steps):
    """``steps`` batches ``(B, context + 1)`` of random windows of the token stream ``data``."""
    for _ in range(steps):
        starts = torch.randint(0, len(data) - context - 1, (batch_size,), generator=generator)
        yield torch.stack([data[s:s + context + 1] for s in starts.tolist()])


def _np_log_prob(words, i):
    """log P of the noun phrase at ``words[i:]`` given its number, and where it ends."""
    logp = np.log(0.5)  # the determiner: one of two for either number
    i += 1
    if words[i] in ADJECTIVES:
        logp += np.log(0.3) - np.log(len(ADJECTIVES))
        i += 1
    else:
        logp += np.log(0.7)
    return logp - np.log(len(NOUNS)), i + 1


def log_prob(s):
    """The log-probability (nats) that :func:`sentence` draws ``s``, a valid sentence.

    Every sentence has one derivation (the words say every choice), so this is the sum of the
    log-probabilities of the choices that made it."""
    if not is_valid(s):
        raise ValueError(f"not a sentence of the grammar: {s!r}")
    words = s[:-1].split(" ")
    logp = np.log(0.5)  # the subject's number
    np_logp, i = _np_log_prob(words, 0)
    logp += np_logp
    if words[i] in PREPOSITIONS:
        inner, i = _np_log_prob(words, i + 1)
        logp += np.log(0.4) - np.log(len(PREPOSITIONS)) + np.log(0.5) + inner
    else:
        logp += np.log(0.6)
    if i + 1 == len(words):
        return logp + np.log(0.5) - np.log(len(INTRANSITIVE))
    obj, _ = _np_log_prob(words, i + 1)
    return logp + np.log(0.5) - np.log(len(TRANSITIVE)) + np.log(0.5) + obj


def entropy_rate(num_sentences=20000, seed=3):
    """The grammar's entropy in nats per character (its separating space included), estimated
    on ``num_sentences`` sentences: no model of this text can have a lower mean loss."""
    rng = np.random.default_rng(seed)
    drawn = [sentence(rng) for _ in range(num_sentences)]
    return float(-sum(log_prob(s) for s in drawn) / sum(len(s) + 1 for s in drawn))


def agrees_with_the_wrong_noun(s):
    """Whether ``s`` is out of the grammar only by its verb's number, and that verb agrees with the
    noun of a prepositional phrase between it and its subject instead ("the cat near the dogs run.").

    The verb is compared with the phrase's noun: "two dogs behind two foxes sings." is out by its
    verb alone, but that verb agrees with neither noun, so it is not this kind of mistake."""
    if is_valid(s) or not s.endswith("."):
        return False
    words = s[:-1].split(" ")
    subject = _parse_np(words, 0)
    if subject is None or subject[1] >= len(words) or words[subject[1]] not in PREPOSITIONS:
        return False
    inner = _parse_np(words, subject[1] + 1)
    if inner is None or inner[1] >= len(words):
        return False
    (subject_number, _), (phrase_number, i) = subject, inner
    verb = words[i]
    swap = {**INTRANSITIVE, **TRANSITIVE}
    swap.update({plural: singular for singular, plural in list(swap.items())})
    if verb not in swap:
        return False
    verb_number = "sg" if verb in INTRANSITIVE or verb in TRANSITIVE else "pl"
    flipped = " ".join(words[:i] + [swap[verb]] + words[i + 1:]) + "."
    return verb_number == phrase_number != subject_number and is_valid(flipped)
