"""Chapter 7's speed and memory measurements: the course layer against PyTorch's, chunked
against plain attention, KV-cache decoding against recomputing the whole pass.

``book/07_beyond.ipynb`` calls these functions at sizes that run in seconds, and
``bench/attention.py`` at full size, where it checks its targets. Every function measures
the active backend (``MHA_BACKEND``, see ``backend.py``): your code, or the reference.

Times are medians of several repeats, single-threaded (the machine may be shared; medians keep
one slow repeat from moving the result). Peak memory is measured in a fresh subprocess per
variant (``python -m lab.measure --memory-child ...``): reset the kernel's peak-RSS
mark (``/proc/self/clear_refs``), run the attention once, read the peak (``VmHWM``) and
subtract the resident size just before the call. PyTorch's CPU allocator hands large blocks
back to the system when they are freed (with glibc's mmap threshold fixed, see
``peak_memory``), so the RSS follows the tensors alive. Linux only.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from mha_exercises.backend import backend, load

# The directory holding this package (and, in the course repository, ``solutions``): put on the
# memory child's path so that it imports the same code as this process.
_IMPORT_ROOT = Path(__file__).resolve().parents[1]


def median_time(fn, repeats=7, warmup=2):
    """Median wall time of ``fn()`` in seconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --- 1. the layer: course vs torch.nn.MultiheadAttention vs the fused kernel -----------------

def fused_forward(layer, x):
    """The course layer's projections around ``F.scaled_dot_product_attention`` (no weights)."""
    B, L, E = x.shape
    H = layer.num_heads
    q, k, v = (w(x).view(B, L, H, E // H).transpose(1, 2) for w in (layer.W_q, layer.W_k, layer.W_v))  # (B, H, L, d)
    heads = F.scaled_dot_product_attention(q, k, v)  # (B, H, L, d)
    return layer.W_o(heads.transpose(1, 2).reshape(B, L, E))  # (B, L, E)


def time_layers(layer_cls, lengths, batch=8, embed_dim=256, num_heads=8, repeats=7):
    """Forward + backward time (s) per sequence length of three implementations of the same layer.

    Returns ``{"course": [...], "torch": [...], "fused": [...]}``. ``torch`` is
    ``nn.MultiheadAttention`` called like the course layer, returning per-head weights
    (``need_weights=True, average_attn_weights=False``); ``fused`` skips the weights and runs
    ``F.scaled_dot_product_attention``.
    """
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
    course = layer_cls.from_torch(ref)
    variants = {
        "course": lambda x: course(x, x, x)[0],
        "torch": lambda x: ref(x, x, x, need_weights=True, average_attn_weights=False)[0],
        "fused": lambda x: fused_forward(course, x),
    }
    times = {name: [] for name in variants}
    for length in lengths:
        x = torch.randn(batch, length, embed_dim, requires_grad=True)
        samples = {name: [] for name in variants}
        # Interleaved: a burst of load from other processes hits every variant alike.
        for repeat in range(repeats + 1):
            for name, forward in variants.items():
                start = time.perf_counter()
                forward(x).sum().backward()
                if repeat:  # the first round is warm-up
                    samples[name].append(time.perf_counter() - start)
        for name in variants:
            times[name].append(statistics.median(samples[name]))
    return times


# --- 2. chunked vs plain attention: peak memory and time ------------------------------------

def _rss_kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _plain_attention(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)  # (..., L, L): all of it
    return weights @ v


def _attention_call(kind, length, chunk_size, head_dim):
    """A no-argument function running plain or chunked attention on seeded inputs."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, length, head_dim) for _ in range(3))  # (B, H, L, d)
    chunked = load("efficient").chunked_attention
    small = [t[..., :64, :] for t in (q, k, v)]  # load every kernel once before measuring
    _plain_attention(*small), chunked(*small, 16)
    if kind == "plain":
        return lambda: _plain_attention(q, k, v)
    return lambda: chunked(q, k, v, chunk_size)


def _memory_child(kind, length, chunk_size, head_dim):
    """Runs in the subprocess: the peak extra memory (MiB) of one attention call."""
    run = _attention_call(kind, length, chunk_size, head_dim)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak-RSS mark (Linux >= 4.0)
    before = _rss_kib("VmRSS")
    out = run()
    peak = _rss_kib("VmHWM")
    return {"peak_mib": (peak - before) / 1024, "checksum": out.double().sum().item()}


def peak_memory(kind, length, chunk_size=256, head_dim=64):
    """``{"peak_mib", "checksum"}`` of one attention call, measured in a fresh process.

    ``kind`` is ``"plain"`` (the full score matrix) or ``"chunked"`` (``chunked_attention``
    of the active backend, ``MHA_BACKEND``), on ``(1, 1, length, head_dim)`` float32 inputs.
    ``MALLOC_MMAP_THRESHOLD_`` fixes glibc's threshold: without it, freeing one large block
    raises the threshold, later blocks of that size come from the heap and stay resident
    after they are freed, and the RSS overstates what is alive (by 40 MiB here). It slows
    the allocations, so times are measured separately (``attention_time``).
    """
    args = [sys.executable, "-m", "lab.measure", "--memory-child", kind, str(length), str(chunk_size),
            str(head_dim)]
    python_path = os.pathsep.join(filter(None, [str(_IMPORT_ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "65536", "MHA_BACKEND": backend(),
           "PYTHONPATH": python_path}
    done = subprocess.run(args, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def attention_time(kind, length, chunk_size=256, head_dim=64, repeats=5):
    """Median seconds of one plain or chunked attention call (in this process)."""
    return median_time(_attention_call(kind, length, chunk_size, head_dim), repeats=repeats, warmup=1)


def attention_times(length, chunk_size=256, head_dim=64, repeats=5):
    """Seconds of every repeat of plain and chunked attention, ``{"plain": [...], "chunked": [...]}``.

    The two take turns (one warm-up round first), so that repeat ``i`` of each saw the same
    load on a shared machine and ``chunked[i] / plain[i]`` is a fair ratio; their spread is the
    run-to-run scatter.
    """
    calls = {kind: _attention_call(kind, length, chunk_size, head_dim) for kind in ("plain", "chunked")}
    samples = {kind: [] for kind in calls}
    for repeat in range(repeats + 1):
        for kind, call in calls.items():
            start = time.perf_counter()
            call()
            if repeat:
                samples[kind].append(time.perf_counter() - start)
    return samples


def saved_for_backward_mib(kind, length, chunk_size=256, head_dim=64):
    """MiB of the tensors autograd keeps for the backward pass of one plain or chunked call.

    Counted exactly with ``torch.autograd.graph.saved_tensors_hooks`` (each storage once), on
    ``(1, 1, length, head_dim)`` float32 inputs that require gradients. This is what a training
    step holds between forward and backward, whatever the forward pass frees on the way.
    """
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, length, head_dim, requires_grad=True) for _ in range(3))
    storages = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    chunked = load("efficient").chunked_attention
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        out = _plain_attention(q, k, v) if kind == "plain" else chunked(q, k, v, chunk_size)
    del out
    return sum(storages.values()) / 2**20


# --- 3. decoding with a KV cache vs recomputing the whole pass ------------------------------

@torch.no_grad()
def decode(layer, prompt, num_tokens, use_cache):
    """Generates ``num_tokens`` vectors one at a time, each new input being the last output
    (a toy autoregressive loop). Returns ``(outputs (B, num_tokens, E), seconds per step)``."""
    cache = load("efficient").KVCache() if use_cache else None
    sequence, step_input, outputs, seconds = prompt, prompt, [], []
    for _ in range(num_tokens):
        start = time.perf_counter()
        if use_cache:  # only the new token goes through the layer; its past is in the cache
            out = layer(step_input, causal=True, cache=cache)[:, -1:]  # (B, 1, E)
        else:  # the whole sequence again, every time
            out = layer(sequence, causal=True)[:, -1:]  # (B, 1, E)
        seconds.append(time.perf_counter() - start)
        outputs.append(out)
        sequence, step_input = torch.cat([sequence, out], dim=1), out
    return torch.cat(outputs, dim=1), seconds


@torch.no_grad()
def decode_step_times(positions, embed_dim=128, num_heads=8, num_kv_heads=2, repeats=5):
    """Seconds of one decoding step at each position ``t`` in ``positions``, with a KV cache
    holding the ``t - 1`` earlier tokens and by recomputing the causal pass over all ``t``.

    Returns ``{"cache": [...], "recompute": [...]}``, the fastest of ``repeats`` (after one
    warm-up; on a shared machine noise only ever adds time, and a step of a fraction of a
    millisecond is easily doubled by it), the two taking turns, and ``{"spread_cache": [...], "spread_recompute": [...]}``: the slowest
    repeat over the fastest, per position, the run-to-run scatter. The cache is filled once per position and copied before every timed
    step (the copy is not timed), so that each step appends to a cache of exactly ``t - 1``.
    """
    torch.manual_seed(0)
    layer = load("efficient").GroupedQueryAttention(embed_dim, num_heads, num_kv_heads).eval()
    KVCache = load("efficient").KVCache
    times = {"cache": [], "recompute": []}
    for t in positions:
        x = torch.randn(1, t, embed_dim)
        filled = KVCache()
        layer(x[:, :t - 1], causal=True, cache=filled)  # the prompt: t - 1 cached positions
        samples = {"cache": [], "recompute": []}
        for repeat in range(repeats + 1):
            cache = copy.deepcopy(filled)
            start = time.perf_counter()
            layer(x[:, t - 1:], causal=True, cache=cache)  # one new token against the cache
            cached = time.perf_counter() - start
            start = time.perf_counter()
            layer(x, causal=True)  # the whole sequence again
            recompute = time.perf_counter() - start
            if repeat:
                samples["cache"].append(cached)
                samples["recompute"].append(recompute)
        for name in samples:
            times[name].append(min(samples[name]))
            times.setdefault(f"spread_{name}", []).append(max(samples[name]) / min(samples[name]))
    return times


def time_decoding(num_tokens=256, embed_dim=256, num_heads=8, num_kv_heads=2, batch=1, repeats=3):
    """Median seconds to decode ``num_tokens`` with and without a KV cache (``"cache"``,
    ``"recompute"``), the median seconds of each step (``"steps_cache"``, ``"steps_recompute"``)
    and the largest difference between the two outputs (``"max_diff"``)."""
    torch.manual_seed(0)
    layer = load("efficient").GroupedQueryAttention(embed_dim, num_heads, num_kv_heads).eval()
    prompt = torch.randn(batch, 1, embed_dim)
    results = {}
    for use_cache in (True, False):
        runs = [decode(layer, prompt, num_tokens, use_cache) for _ in range(repeats)]
        name = "cache" if use_cache else "recompute"
        results[name] = statistics.median(sum(s) for _, s in runs)
        results[f"steps_{name}"] = [statistics.median(step) for step in zip(*(s for _, s in runs))]
        results["out_cache" if use_cache else "out_recompute"] = runs[0][0]
    results["max_diff"] = (results.pop("out_cache") - results.pop("out_recompute")).abs().max().item()
    return results


def _main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m lab.measure",
                                     description="The child process of peak_memory(): prints one JSON line.")
    parser.add_argument("--memory-child", nargs=4, required=True, metavar=("KIND", "LENGTH", "CHUNK_SIZE", "HEAD_DIM"),
                        help='KIND is "plain" or "chunked"')
    kind, length, chunk_size, head_dim = parser.parse_args(argv).memory_child
    torch.set_num_threads(1)
    print(json.dumps(_memory_child(kind, int(length), int(chunk_size), int(head_dim))))


if __name__ == "__main__":
    _main()
