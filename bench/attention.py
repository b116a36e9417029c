"""Benchmark of chapter 7: the course's attention against PyTorch's, chunked against plain
attention, KV-cache decoding against recomputing the whole pass.

    .venv/bin/python bench/attention.py          # full run: prints a table, exits 1 on a miss

Targets (checked at the end):

* the course's ``MultiHeadAttention`` (forward + backward) within 1.3x the time of
  ``torch.nn.MultiheadAttention`` at B=8, L=256, E=256, H=8;
* chunked attention at L=8192 peaks at <= 1/8 of the memory of plain attention, and takes
  <= 2x its time (and gives the same output);
* decoding 256 tokens with a KV cache is faster than recomputing the full causal pass for
  every new token (and gives the same outputs).

Printed without a target, as the chapter states them: what autograd keeps for the backward
pass of plain and chunked attention at L=4096 (the chunked loop's saving is a forward-only
one), and the time of one decoding step at positions 256 and 2048, cached and recomputed.

The measuring functions are in ``lab/measure.py`` (its docstring says how times and
peak memory are measured); the chapter calls the same functions with smaller sizes
(``book/07_beyond.ipynb``). This script runs them at full size against the reference
solutions (``MHA_BACKEND=solutions`` unless set), single-threaded.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from mha_exercises.backend import load  # noqa: E402
from lab.measure import (attention_time, decode_step_times, peak_memory, saved_for_backward_mib,  # noqa: E402
                         time_decoding, time_layers)

LAYER_RATIO_TARGET = 1.3  # course layer / torch.nn.MultiheadAttention, forward + backward
MEMORY_FRACTION_TARGET = 1 / 8  # chunked peak / plain peak at L=8192
CHUNKED_TIME_TARGET = 2.0  # chunked time / plain time at L=8192


# --- the full run -----------------------------------------------------------------------------

def main():
    torch.set_num_threads(1)
    lengths = [64, 128, 256, 512]
    layer = time_layers(load("layer").MultiHeadAttention, lengths)
    plain, chunked = peak_memory("plain", 8192), peak_memory("chunked", 8192)
    plain["seconds"], chunked["seconds"] = attention_time("plain", 8192), attention_time("chunked", 8192)
    decoding = time_decoding(256)
    saved = {kind: saved_for_backward_mib(kind, 4096) for kind in ("plain", "chunked")}
    positions = [256, 2048]
    steps = decode_step_times(positions, embed_dim=256, repeats=3)

    rows, misses = [], []

    def row(what, value, target=None, ok=None):
        rows.append((what, value, target or "", "" if ok is None else ("ok" if ok else "MISSED")))
        if ok is False:
            misses.append(what)

    for i, length in enumerate(lengths):
        course, ref, fused = layer["course"][i], layer["torch"][i], layer["fused"][i]
        ratio = course / ref
        at_target = length == 256
        row(f"layer fwd+bwd, L={length}: course / nn.MultiheadAttention / fused SDPA (ms)",
            f"{course * 1e3:.1f} / {ref * 1e3:.1f} / {fused * 1e3:.1f}")
        row(f"  course / nn.MultiheadAttention, L={length}", f"{ratio:.2f}x",
            f"<= {LAYER_RATIO_TARGET}x" if at_target else None, ratio <= LAYER_RATIO_TARGET if at_target else None)
        row(f"  course / fused SDPA, L={length}", f"{course / fused:.2f}x")
    fraction = chunked["peak_mib"] / plain["peak_mib"]
    slowdown = chunked["seconds"] / plain["seconds"]
    same = abs(chunked["checksum"] - plain["checksum"]) <= 1e-3 * max(1.0, abs(plain["checksum"]))
    row("L=8192 peak extra memory: plain / chunked (MiB)", f"{plain['peak_mib']:.0f} / {chunked['peak_mib']:.0f}")
    row("  chunked / plain memory", f"1/{1 / fraction:.1f}", "<= 1/8", fraction <= MEMORY_FRACTION_TARGET)
    row("L=8192 time: plain / chunked (ms)", f"{plain['seconds'] * 1e3:.0f} / {chunked['seconds'] * 1e3:.0f}")
    row("  chunked / plain time", f"{slowdown:.2f}x", f"<= {CHUNKED_TIME_TARGET}x", slowdown <= CHUNKED_TIME_TARGET)
    row("  chunked output == plain output (checksum)", "yes" if same else "no", "yes", same)
    speedup = decoding["recompute"] / decoding["cache"]
    row("decode 256 tokens: KV cache / recompute (ms per token)",
        f"{decoding['cache'] / 256 * 1e3:.2f} / {decoding['recompute'] / 256 * 1e3:.2f}")
    row("  KV-cache speed-up", f"{speedup:.1f}x", "> 1x", speedup > 1)
    row("  max |cache - recompute|", f"{decoding['max_diff']:.1e}", "<= 1e-5", decoding["max_diff"] <= 1e-5)
    row("L=4096 kept for backward: plain / chunked (MiB)", f"{saved['plain']:.0f} / {saved['chunked']:.0f}")
    for i, t in enumerate(positions):
        row(f"decoding step at t={t}: cached / recomputed (ms)",
            f"{steps['cache'][i] * 1e3:.2f} / {steps['recompute'][i] * 1e3:.1f}")

    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'value':>22}  {'target':>8}  result")
    for what, value, target, result in rows:
        print(f"{what:<{width}}  {value:>22}  {target:>8}  {result}")
    print(f"(B=8, E=256, H=8 for the layer; float32, 1 thread, medians; peak memory = VmHWM - VmRSS "
          f"of a fresh process with MALLOC_MMAP_THRESHOLD_ fixed; torch {torch.__version__})")
    if misses:
        print("MISSED: " + "; ".join(misses))
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MHA_BACKEND", "solutions")  # run as a script, it measures the reference
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    sys.exit(main())
