"""Chapter 8's generation with and without the KV cache: the same tokens, and how much faster.

Two measurements, greedy, batch 1, one thread, medians of ``--repeats`` runs taking turns:

* the chapter's sentence model (``lab/weights/sentences.pt``), 124 new tokens after a 4-character
  prompt: its whole trained context (128 positions), what chapter 8 measures too;
* the same shape of model with random weights at longer lengths (positions past the trained
  context: the time does not depend on what the weights say), 128, 512 and 1024 new tokens.

Targets (exit status 1 on a miss): the same tokens with and without the cache everywhere; the
cache faster at every length; and at 1024 tokens at least 5 times faster (a recomputed step grows
with the length, a cached one barely: chapter 7).

    OMP_NUM_THREADS=1 .venv/bin/python bench/generation.py [--repeats 3]
"""
import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("MHA_BACKEND", "solutions")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import torch  # noqa: E402

import train_sentences  # noqa: E402
from lab import language_model as lm, sentences  # noqa: E402
from solutions.language_model import generate  # noqa: E402

TARGET_LONG = 5.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rows, ok = [], True
    model = train_sentences.build()
    model.load_state_dict(torch.load(train_sentences.WEIGHTS, weights_only=True))
    prompt = sentences.encode("the ")[None]
    rows.append(("sentence model (trained)", 124, lm.time_generate(generate, model.eval(), prompt, 124, args.repeats)))
    untrained = train_sentences.build().eval()
    for n in (128, 512, 1024):
        rows.append(("same shape, random weights", n, lm.time_generate(generate, untrained, prompt, n, args.repeats)))
    print(f"{'model':28s} {'new tokens':>10s} {'cache (s)':>10s} {'recompute (s)':>14s} {'speed-up':>9s} same tokens")
    for name, n, r in rows:
        speedup = r["recompute"] / r["cache"]
        print(f"{name:28s} {n:10d} {r['cache']:10.3f} {r['recompute']:14.3f} {speedup:9.1f} {r['same_tokens']}")
        ok &= r["same_tokens"] and speedup > 1
    long_speedup = rows[-1][2]["recompute"] / rows[-1][2]["cache"]
    if long_speedup < TARGET_LONG:
        print(f"MISSED: at 1024 tokens the cache is {long_speedup:.1f} times faster (target {TARGET_LONG})")
        ok = False
    print("all targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
