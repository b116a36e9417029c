"""Chapter 6 lab: handwritten digits read by a small transformer whose heads we can switch off.

The data are scikit-learn's bundled ``load_digits`` (1,797 real 8×8 images, no download). Each
image becomes a sequence of 9 overlapping patches of 4×4 pixels; a learned class token in front
of them gathers what the classifier reads. The model is a pre-norm transformer encoder of
``num_layers`` blocks (4 of 4 heads, ``CONFIG``), each with a ``MultiHeadAttention`` of the chapter-4 contract (by default
*your* layer, through ``mha_exercises.backend.load``), and ``forward(x, head_mask=None)`` takes
a ``(num_layers, num_heads)`` mask: 0 switches a head off, as if it had been pruned.

The trained weights are committed in ``weights/``: ``digits.pt`` (seed 0, the chapter's model
and the grader's) and ``digits_seed<N>.pt`` (seeds 1-5, the same recipe), made by
``scripts/train_digits.py --seed N``. Training is deterministic on one machine, not across CPUs
(float32 sums round differently), so ``weights/provenance.json`` records the torch version and
CPU behind each file. ``bench/pruning.py --write`` stores the lab's curves on every seed in
``weights/pruning_curves.json``, which chapter 6 reads.
"""
import functools
import importlib.util
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

WEIGHTS = Path(__file__).parent / "weights" / "digits.pt"  # seed 0: the chapter's model, and the grader's
# The seeds trained with the same recipe, to show how much the lab's results scatter across training runs.
SEEDS = tuple(range(6))
PROVENANCE = WEIGHTS.parent / "provenance.json"  # per weights file: seed, torch version, CPU, accuracies
# The lab's curves on every seed, written by `bench/pruning.py --write` (chapter 6 reads them).
RESULTS = WEIGHTS.parent / "pruning_curves.json"

PATCH, STRIDE = 4, 2  # 4×4 patches every 2 pixels: an 8×8 image is 3×3 = 9 overlapping patches
NUM_PATCHES = ((8 - PATCH) // STRIDE + 1) ** 2
PATCH_DIM = PATCH * PATCH
NUM_CLASSES = 10
# A fixed split of the 1,797 images, drawn once with this seed: 60 % / 15 % / 25 %.
SPLIT_SEED = 0
SPLIT_SIZES = {"train": 1077, "val": 270, "test": 450}
# The lab model's shape: 4 layers of 4 heads (16 heads), d_model 64, as the weights were trained.
CONFIG = dict(num_layers=4, num_heads=4, d_model=64, d_ff=128,
              patch_dim=PATCH_DIM, num_patches=NUM_PATCHES, num_classes=NUM_CLASSES)


def to_patches(images):
    """``(N, 8, 8)`` images -> ``(N, 9, 16)`` patches, row by row, each patch's pixels row by row."""
    images = torch.as_tensor(images)
    p = images.unfold(1, PATCH, STRIDE).unfold(2, PATCH, STRIDE)  # (N, 3, 3, PATCH, PATCH)
    return p.reshape(images.shape[0], NUM_PATCHES, PATCH_DIM)


@functools.lru_cache(maxsize=1)
def _digits():
    """scikit-learn's bundled digits file, read directly: ``images (1797, 8, 8)``, ``target``.

    The same numbers as ``sklearn.datasets.load_digits()`` (a test checks it), without importing
    scikit-learn, which would cost the grader over a second per run.
    """
    spec = importlib.util.find_spec("sklearn")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the digits lab needs scikit-learn (pip install -r requirements.txt)")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    table = np.loadtxt(path, delimiter=",")  # 1,797 rows: 64 pixels, then the label
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)


def load_images(split):
    """One part of the fixed split: ``images (N, 8, 8)`` float32 in [0, 1], ``y (N,)`` int64."""
    if split not in SPLIT_SIZES:
        raise ValueError(f"split must be one of {list(SPLIT_SIZES)}, got {split!r}")
    all_images, target = _digits()
    order = np.random.default_rng(SPLIT_SEED).permutation(len(target))
    start = 0
    for name, size in SPLIT_SIZES.items():
        if name == split:
            index = order[start:start + size]
            break
        start += size
    images = all_images[index].astype(np.float32) / 16.0  # pixel values are 0..16
    return torch.from_numpy(images), torch.from_numpy(target[index])


def load_split(split):
    """One part of the fixed split as the model reads it: ``x (N, 9, 16)``, ``y (N,)``."""
    images, y = load_images(split)
    return to_patches(images), y


def batches(x, y, batch_size=256):
    """``(x, y)`` cut into consecutive batches (the last one may be smaller)."""
    return [(x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, len(y), batch_size)]


def default_attention_class():
    """The chapter-4 layer of the active backend: yours, or the reference in the book build."""
    from mha_exercises.backend import load

    return load("layer").MultiHeadAttention


class Block(nn.Module):
    """Pre-norm encoder block: ``x + attn(LN(x))`` then ``x + MLP(LN(x))``."""

    def __init__(self, attention_class, d_model, num_heads, d_ff):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = attention_class(d_model, num_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x, head_mask=None, class_token_only=False):
        h = self.norm1(x)
        if class_token_only:  # the last block is read at the class token only: skip the other queries
            x, query = x[:, :1], h[:, :1]  # (B, 1, d_model)
        else:
            query = h
        x = x + self.attn(query, h, h, head_mask=head_mask)[0]
        return x + self.mlp(self.norm2(x))


class DigitsTransformer(nn.Module):
    """Patches -> class logits. ``forward(x (B, 9, 16), head_mask (L, H) or None) -> (B, 10)``."""

    def __init__(self, attention_class=None, num_layers=CONFIG["num_layers"], num_heads=CONFIG["num_heads"],
                 d_model=CONFIG["d_model"], d_ff=CONFIG["d_ff"]):
        super().__init__()
        attention_class = attention_class or default_attention_class()
        self.num_layers, self.num_heads = num_layers, num_heads
        self.embed = nn.Linear(PATCH_DIM, d_model)
        self.cls = nn.Parameter(torch.zeros(1, 1, d_model))
        self.pos = nn.Parameter(0.02 * torch.randn(1, NUM_PATCHES + 1, d_model))
        self.blocks = nn.ModuleList(Block(attention_class, d_model, num_heads, d_ff) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, NUM_CLASSES)

    @property
    def attention_layers(self):
        return [block.attn for block in self.blocks]

    def forward(self, x, head_mask=None):
        h = self.tokens(x)
        for i in range(self.num_layers):
            h = self.layer(i, h, None if head_mask is None else head_mask[i])
        return self.classify(h)

    # The forward pass in three steps, so that pruning curves can reuse the first layers' states.
    def tokens(self, x):
        """``(B, 9, 16)`` patches -> ``(B, 10, d_model)``: the class token, then the embedded patches."""
        tokens = self.embed(x)  # (B, 9, d_model)
        cls = self.cls.expand(x.shape[0], -1, -1)  # (B, 1, d_model)
        return torch.cat([cls, tokens], dim=1) + self.pos  # (B, 10, d_model)

    def layer(self, i, h, head_mask=None):
        """Block ``i``; the last one is read at the class token only and returns ``(B, 1, d_model)``."""
        return self.blocks[i](h, head_mask, class_token_only=i == self.num_layers - 1)

    def classify(self, h):
        return self.head(self.norm(h[:, 0]))  # the class token's final state -> (B, 10)


def weights_path(seed=0):
    """The committed weights of training seed ``seed``: ``digits.pt`` for 0, ``digits_seed<N>.pt`` else."""
    return WEIGHTS if seed == 0 else WEIGHTS.with_name(f"digits_seed{seed}.pt")


def load_model(attention_class=None, path=WEIGHTS):
    """The trained lab model, in eval mode, with the committed weights (of seed 0 by default)."""
    model = DigitsTransformer(attention_class)
    model.load_state_dict(torch.load(path, weights_only=True))
    return model.eval()


def loss_fn(logits, y):
    """The training loss, and the loss whose gradient measures head importance."""
    return F.cross_entropy(logits, y)


@torch.no_grad()
def accuracy(model, x, y, head_mask=None):
    """Fraction of ``x`` classified correctly, with the heads of ``head_mask`` switched off."""
    return (model(x, head_mask=head_mask).argmax(-1) == y).float().mean().item()


def mask_without(removed, num_layers, num_heads):
    """A ``(num_layers, num_heads)`` head mask of ones with zeros at the ``(layer, head)`` pairs removed."""
    mask = torch.ones(num_layers, num_heads)
    for layer, head in removed:
        mask[layer, head] = 0.0
    return mask
