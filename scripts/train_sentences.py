"""Train chapter 8's sentence model: a character-level causal LM on the grammar of lab/sentences.py,
written to lab/weights/sentences.pt with a record of where (lab/weights/provenance.json) and its
loss curve (lab/weights/sentences_curve.json), which the chapter plots.

Deterministic on one machine (a fixed seed, one thread, every random draw from seeded
generators); across CPUs float32 sums round differently, so ``--check`` retrains and compares
the final losses with the committed record within ``TOLERANCE``, never bits.

    .venv/bin/python scripts/train_sentences.py          # trains, writes the weights and the record
    .venv/bin/python scripts/train_sentences.py --check  # trains, compares, writes nothing
"""
import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab import language_model as lm, removal, sentences  # noqa: E402
from solutions.efficient import GroupedQueryAttention, KVCache  # noqa: E402
from solutions.language_model import sinusoidal_positions  # noqa: E402
from solutions.layer import MultiHeadAttention  # noqa: E402  (trained with the reference layer)

WEIGHTS = Path(__file__).resolve().parents[1] / "lab" / "weights" / "sentences.pt"
CURVE = WEIGHTS.with_name("sentences_curve.json")
PROVENANCE = WEIGHTS.with_name("provenance.json")
CONFIG = dict(vocab_size=sentences.VOCAB_SIZE, d_model=48, num_heads=4, num_layers=2, d_ff=128)
RECIPE = dict(seed=0, steps=1200, batch_size=16, context=128, lr=3e-3, weight_decay=0.01, train_sentences=20000,
              val_sentences=1000, eval_every=100)
DATA_SEEDS = {"train": 1, "val": 2}  # the sentences' seeds, apart from the model's
TOLERANCE = 0.1  # nats: a retraining on another CPU must end this close to the recorded validation loss


def build(**kwargs):
    """The model with the reference classes (the training and the grader never use the learner's)."""
    return lm.CausalLM(**CONFIG, attention_class=MultiHeadAttention, positions=sinusoidal_positions,
                       gqa_class=lambda: GroupedQueryAttention, cache_class=lambda: KVCache, **kwargs)


def data(split):
    n = RECIPE["train_sentences" if split == "train" else "val_sentences"]
    return sentences.encode(sentences.text(n, DATA_SEEDS[split]))


@torch.no_grad()
def evaluate(model, val, context, windows=64):
    """Mean next-token loss on ``windows`` evenly spaced validation windows of ``context + 1``."""
    starts = torch.linspace(0, len(val) - context - 2, windows).long()
    batch = torch.stack([val[s:s + context + 1] for s in starts.tolist()])
    return lm.next_token_loss(model(batch), batch).item()


def train(recipe=RECIPE, verbose=False, max_steps=None):
    """Train from scratch; returns ``(state_dict, curve)`` with the curve's train and val losses.
    ``max_steps`` stops early (the schedule is still the full one's): the retraining test's short run."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(recipe["seed"])
        model = build()
        train_data, val = data("train"), data("val")
        optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=recipe["weight_decay"])
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, recipe["lr"], total_steps=recipe["steps"],
                                                       pct_start=0.1)
        generator = torch.Generator().manual_seed(recipe["seed"])
        curve = {"step": [], "train": [], "val": []}
        running = []
        for step, batch in enumerate(sentences.batches(train_data, recipe["batch_size"], recipe["context"],
                                                       generator, max_steps or recipe["steps"]), start=1):
            loss = lm.next_token_loss(model(batch), batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            running.append(loss.item())
            if step % recipe["eval_every"] == 0 or step == 1:
                model.eval()
                curve["step"].append(step)
                curve["train"].append(sum(running) / len(running))
                curve["val"].append(evaluate(model, val, recipe["context"]))
                model.train()
                running = []
                if verbose:
                    print(f"step {step:5d}  train {curve['train'][-1]:.3f}  val {curve['val'][-1]:.3f}", flush=True)
        return model.eval().state_dict(), curve
    finally:
        torch.set_num_threads(previous)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="retrain and compare with the record; write nothing")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    state, curve = train(verbose=True)
    seconds = time.perf_counter() - start
    print(f"trained in {seconds:.1f} s; final validation loss {curve['val'][-1]:.4f} nats")
    if args.check:
        recorded = json.loads(PROVENANCE.read_text())[WEIGHTS.name]["val_loss"]
        gap = abs(curve["val"][-1] - recorded)
        print(f"recorded {recorded:.4f}; |difference| {gap:.4f} (tolerance {TOLERANCE})")
        return 0 if gap <= TOLERANCE else 1
    torch.save(state, WEIGHTS)
    CURVE.write_text(json.dumps(curve, indent=1) + "\n")
    record = json.loads(PROVENANCE.read_text())
    record[WEIGHTS.name] = {"seed": RECIPE["seed"], "sha256": removal.sha256(WEIGHTS), **removal.machine(),
                            "threads": 1, "config": CONFIG, "recipe": RECIPE, "data_seeds": DATA_SEEDS,
                            "train_seconds": round(seconds, 1), "val_loss": round(curve["val"][-1], 4)}
    PROVENANCE.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {WEIGHTS} ({WEIGHTS.stat().st_size / 1024:.0f} KiB), {CURVE.name} and its provenance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
