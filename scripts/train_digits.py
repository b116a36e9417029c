"""Train the chapter-6 lab model and write its weights to lab/weights/digits.pt.

Deterministic: a fixed seed, one thread, and every random draw (initialisation, shuffling,
pixel shifts) from seeded generators, so that rerunning this script on the same
machine reproduces the committed weights bitwise (tests/test_pruning_lab.py checks it).

    .venv/bin/python scripts/train_digits.py            # writes the weights
    .venv/bin/python scripts/train_digits.py --check    # trains, compares, writes nothing
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab import digits  # noqa: E402
from solutions.layer import MultiHeadAttention  # noqa: E402  (trained with the reference layer)

SEED = 0
THREADS = 1
EPOCHS = 80
BATCH_SIZE = 64
LR = 3e-3
WEIGHT_DECAY = 0.1


def shift(images, generator):
    """Each image moved by -1, 0 or +1 pixel in each direction (zeros fill in): ``(N, 8, 8)``."""
    padded = torch.nn.functional.pad(images, (1, 1, 1, 1))  # (N, 10, 10)
    windows = padded.unfold(1, 8, 1).unfold(2, 8, 1)  # (N, 3, 3, 8, 8): every 8×8 window
    dy, dx = torch.randint(0, 3, (2, images.shape[0]), generator=generator)
    return windows[torch.arange(images.shape[0]), dy, dx]


def train(epochs=EPOCHS, seed=SEED, threads=THREADS, verbose=False):
    """Train from scratch; returns the model's ``state_dict``."""
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(seed)
        generator = torch.Generator().manual_seed(seed)
        images, y = digits.load_images("train")  # (N, 8, 8)
        model = digits.DigitsTransformer(MultiHeadAttention)
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
        steps = epochs * -(-len(y) // BATCH_SIZE)
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=LR, total_steps=steps)
        model.train()
        for epoch in range(epochs):
            order = torch.randperm(len(y), generator=generator)
            for i in range(0, len(y), BATCH_SIZE):
                index = order[i:i + BATCH_SIZE]
                batch = digits.to_patches(shift(images[index], generator))  # (B, 9, 16)
                loss = digits.loss_fn(model(batch), y[index])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
            if verbose and (epoch + 1) % 10 == 0:
                model.eval()
                val = digits.accuracy(model, *digits.load_split("val"))
                model.train()
                print(f"epoch {epoch + 1:3d}  loss {loss.item():.4f}  val accuracy {val:.4f}")
        return model.eval().state_dict()
    finally:
        torch.set_num_threads(previous_threads)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed weights, write nothing")
    args = parser.parse_args()
    start = time.perf_counter()
    state = train(verbose=True)
    print(f"trained in {time.perf_counter() - start:.1f} s")
    model = digits.DigitsTransformer(MultiHeadAttention)
    model.load_state_dict(state)
    for split in ("val", "test"):
        print(f"{split} accuracy {digits.accuracy(model.eval(), *digits.load_split(split)):.4f}")
    if args.check:
        committed = torch.load(digits.WEIGHTS, weights_only=True)
        same = committed.keys() == state.keys() and all(torch.equal(committed[k], state[k]) for k in state)
        print("bitwise identical to the committed weights" if same else "DIFFERENT from the committed weights")
        return 0 if same else 1
    digits.WEIGHTS.parent.mkdir(exist_ok=True)
    torch.save(state, digits.WEIGHTS)
    print(f"wrote {digits.WEIGHTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
