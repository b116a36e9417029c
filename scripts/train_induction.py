"""Train chapter 8's induction-head models: two-layer attention-only transformers on repeated
random segments (lab/induction.py), one per seed, written to lab/weights/induction_seed<N>.pt
with a record of where (lab/weights/provenance.json), then analysed: which heads, how sharp, how
much loss with and without them (lab/weights/induction_results.json).

Deterministic on one machine; across CPUs float32 sums round differently, so ``--check``
retrains a seed and compares what the chapter reports (the heads found, the loss on the repeat)
with the record, within ``TOLERANCE``.

    .venv/bin/python scripts/train_induction.py --seed 0 1 2 3 4 5 6 7 8 9   # trains, writes weights and records
    .venv/bin/python scripts/train_induction.py --analyse            # recomputes the record from the weights
    .venv/bin/python scripts/train_induction.py --seed 3 --check     # retrains seed 3, compares
"""
import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab import induction, language_model as lm, removal  # noqa: E402
from solutions.language_model import induction_score, sinusoidal_positions  # noqa: E402
from solutions.layer import MultiHeadAttention  # noqa: E402  (trained with the reference layer)

RECIPE = dict(steps=1200, batch_size=32, lr=3e-3, weight_decay=0.01)
RESULTS = induction.WEIGHTS_DIR / "induction_results.json"
PROVENANCE = induction.WEIGHTS_DIR / "provenance.json"
TOLERANCE = 0.15  # nats, on the repeat's loss with all heads, without the pair, without the circuit


def build():
    return induction.build(MultiHeadAttention, sinusoidal_positions)


def train(seed, recipe=RECIPE, max_steps=None, verbose=False):
    """Train one seed from scratch; returns the model (eval mode). ``max_steps`` stops early
    (the schedule is still the full one's)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(seed)
        model = build()
        generator = torch.Generator().manual_seed(seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=recipe["weight_decay"])
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, recipe["lr"], total_steps=recipe["steps"],
                                                       pct_start=0.1)
        for step in range(1, (max_steps or recipe["steps"]) + 1):
            batch = induction.training_batch(recipe["batch_size"], generator)
            loss = lm.next_token_loss(model(batch), batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            if verbose and step % 250 == 0:
                print(f"seed {seed} step {step:5d}  loss {loss.item():.3f}", flush=True)
        return model.eval()
    finally:
        torch.set_num_threads(previous)


def summary(r):
    return (f"prev-token head {r['previous_token_head']} ({r['previous_token_score']:.2f}), induction head "
            f"{r['induction_head']} ({r['induction_score']:.2f}); circuit {r['circuit']}; repeat loss "
            f"{r['loss_repeat']:.2f}, without the pair {r['loss_repeat_without_pair']:.2f}, without another pair "
            f"at most {r['loss_repeat_without_other_pairs_max']:.2f}, without the circuit "
            f"{r['loss_repeat_without_circuit']:.2f}, without the rest {r['loss_repeat_without_rest']:.2f} "
            f"(first copy {r['loss_first_copy']:.2f}, chance {r['chance']:.2f})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, nargs="+", default=[0])
    parser.add_argument("--check", action="store_true", help="retrain and compare with the record; write nothing")
    parser.add_argument("--analyse", action="store_true", help="recompute the record from the committed weights")
    args = parser.parse_args(argv)
    results = _read(RESULTS)
    if args.analyse:
        for seed in induction.SEEDS:
            model = induction.load_model(seed, MultiHeadAttention, sinusoidal_positions)
            results[str(seed)] = induction.analyse(model, induction_score)
            print(f"seed {seed}: {summary(results[str(seed)])}")
        RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        return 0
    failed = False
    for seed in args.seed:
        start = time.perf_counter()
        model = train(seed, verbose=True)
        seconds = time.perf_counter() - start
        result = induction.analyse(model, induction_score)
        print(f"seed {seed} ({seconds:.1f} s): {summary(result)}")
        path = induction.weights_path(seed)
        if args.check:
            old = results[str(seed)]
            same_heads = (list(result["previous_token_head"]) == list(old["previous_token_head"])
                          and list(result["induction_head"]) == list(old["induction_head"]))
            gaps = {k: abs(result[k] - old[k]) for k in ("loss_repeat", "loss_repeat_without_pair",
                                                          "loss_repeat_without_circuit")}
            print(f"  recorded: {summary(old)}\n  same heads: {same_heads}; |differences| {gaps}")
            failed |= not same_heads or max(gaps.values()) > TOLERANCE
            continue
        torch.save(model.state_dict(), path)
        # Read again just before writing: seeds may be trained by several processes at once.
        results = {**_read(RESULTS), str(seed): result}
        RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        record = {**_read(PROVENANCE), path.name: {
            "seed": seed, "sha256": removal.sha256(path), **removal.machine(), "threads": 1,
            "config": induction.CONFIG, "recipe": RECIPE, "train_seconds": round(seconds, 1)}}
        PROVENANCE.write_text(json.dumps(record, indent=2) + "\n")
    return 1 if failed else 0


def _read(path):
    return json.loads(path.read_text()) if path.exists() else {}


if __name__ == "__main__":
    sys.exit(main())
