"""Chapter 5 support code: a task on which attention heads must specialise, and its tiny model.

Each example is a row of ``LENGTH`` digits followed by a query token ``?``. One digit is
written in red (marker ``A``), another in blue (marker ``B``), and one digit is the clear
majority. At ``?`` the model answers three questions at once:

* ``"red"``: which digit is red?       (look at one position: a sharp head)
* ``"blue"``: which digit is blue?     (look at another position: another sharp head)
* ``"majority"``: which digit is most frequent?  (average over all digits: a diffuse head)

A head that splits its weight evenly between the red and the blue digit cannot tell them
apart: its output at ``?`` is a weighted mean of *value* vectors, and a value is an affine
function of ``digit embedding + colour embedding``, so the digit part of a red 3 and of a
blue 3 is the same vector. One head per question is the easy solution; whether training
finds it depends on the seed (chapter 5 measures how often), see ``split_problems``.

The questions ignore order, so the model has no positional encoding: attention alone is
permutation-equivariant, and the tokens carry all the information needed.
"""
import numpy as np
import torch
from torch import nn

LENGTH = 12  # digits per example; the query token ``?`` comes after them
NUM_DIGITS = 10
QUERY = NUM_DIGITS  # token id of ``?``
PLAIN, RED, BLUE = 0, 1, 2  # colour ids
TASKS = ("red", "blue", "majority")
MAJORITY_COUNT = 4  # the majority digit appears this often; every other digit at most twice


def make_batch(num_examples, rng):
    """``num_examples`` examples from a ``numpy.random.Generator``.

    Returns ``(tokens, colours, targets)``: ``tokens`` and ``colours`` are int64 tensors
    ``(N, LENGTH + 1)`` (the last position is ``?``), ``targets`` is ``(N, 3)``: the red
    digit, the blue digit and the majority digit, in the order of ``TASKS``.
    """
    n = num_examples
    majority = rng.integers(NUM_DIGITS, size=n)  # (N,)
    # Every digit twice, then LENGTH - MAJORITY_COUNT of those that are not the majority
    # digit, drawn without replacement: random keys, the majority's set to +inf, sorted.
    pool = np.repeat(np.arange(NUM_DIGITS), 2)  # (20,)
    keys = np.where(pool == majority[:, None], np.inf, rng.random((n, pool.size)))  # (N, 20)
    others = pool[np.argsort(keys, axis=1)[:, :LENGTH - MAJORITY_COUNT]]  # (N, L - 4)
    digits = np.concatenate([np.repeat(majority[:, None], MAJORITY_COUNT, axis=1), others], axis=1)
    shuffle = np.argsort(rng.random((n, LENGTH)), axis=1)  # a random order per row
    digits = np.take_along_axis(digits, shuffle, axis=1)  # (N, L)
    red, blue = np.argsort(rng.random((n, LENGTH)), axis=1)[:, :2].T  # two distinct positions
    rows = np.arange(n)
    colours = np.full((n, LENGTH + 1), PLAIN, dtype=np.int64)
    colours[rows, red], colours[rows, blue] = RED, BLUE
    tokens = np.concatenate([digits, np.full((n, 1), QUERY)], axis=1).astype(np.int64)  # (N, L+1)
    targets = np.stack([digits[rows, red], digits[rows, blue], majority], axis=1).astype(np.int64)  # (N, 3)
    return torch.from_numpy(tokens), torch.from_numpy(colours), torch.from_numpy(targets)


def token_labels(tokens, colours):
    """Tick labels for one example: ``"3"``, ``"3ᴬ"`` (red), ``"3ᴮ"`` (blue), ``"?"``."""
    suffix = {PLAIN: "", RED: "ᴬ", BLUE: "ᴮ"}
    return ["?" if t == QUERY else f"{t}{suffix[int(c)]}" for t, c in zip(tokens.tolist(), colours.tolist())]


class HeadsModel(nn.Module):
    """Embeddings, one multi-head self-attention layer (the course's, passed in), three readouts.

    ``attention_cls`` is a ``MultiHeadAttention`` class with the chapter 4 API; the chapter
    passes ``load("layer").MultiHeadAttention``, so a learner's notebook trains *their* layer.
    """

    def __init__(self, attention_cls, embed_dim=24, num_heads=3):
        super().__init__()
        self.digit = nn.Embedding(NUM_DIGITS + 1, embed_dim)  # 10 digits and ``?``
        self.colour = nn.Embedding(3, embed_dim)
        self.attention = attention_cls(embed_dim, num_heads)
        self.readout = nn.ModuleDict({task: nn.Linear(embed_dim, NUM_DIGITS) for task in TASKS})

    def forward(self, tokens, colours, head_mask=None):
        """Returns ``(logits, weights)``: ``{task: (N, 10)}`` read at ``?``, and ``(N, H, L+1, L+1)``."""
        x = self.digit(tokens) + self.colour(colours)  # (N, L+1, E)
        out, weights = self.attention(x, x, x, head_mask=head_mask)  # (N, L+1, E), (N, H, L+1, L+1)
        at_query = out[:, -1]  # (N, E): the answers are read at ``?`` only
        return {task: self.readout[task](at_query) for task in TASKS}, weights


def train(model, steps=300, batch_size=128, lr=3e-2, seed=0):
    """Adam on the summed cross-entropy of the three questions; returns the loss per step."""
    rng = np.random.default_rng(seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        tokens, colours, targets = make_batch(batch_size, rng)
        logits, _ = model(tokens, colours)
        loss = sum(nn.functional.cross_entropy(logits[task], targets[:, i]) for i, task in enumerate(TASKS))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def accuracy(model, tokens, colours, targets, head_mask=None):
    """Accuracy per question, ``{task: float}``, optionally with heads removed by ``head_mask``."""
    logits, _ = model(tokens, colours, head_mask=head_mask)
    return {task: (logits[task].argmax(-1) == targets[:, i]).double().mean().item()
            for i, task in enumerate(TASKS)}


@torch.no_grad()
def ablation_table(model, tokens, colours, targets):
    """Accuracy per question with no head removed (row 0) and with each head removed in turn.

    Returns a NumPy array ``(1 + H, 3)``; row ``1 + h`` has head ``h`` zeroed by ``head_mask``.
    """
    num_heads = model.attention.num_heads
    rows = [accuracy(model, tokens, colours, targets)]
    for h in range(num_heads):
        head_mask = torch.ones(num_heads)
        head_mask[h] = 0.0
        rows.append(accuracy(model, tokens, colours, targets, head_mask=head_mask))
    return np.array([[row[task] for task in TASKS] for row in rows])


def split_problems(table, broken_below=0.5, learned_above=0.95):
    """What keeps an ``ablation_table`` from showing one head per question: a list of
    sentences, empty when every question is learned (row 0 above ``learned_above``) and each
    head, removed, breaks exactly one question (accuracy below ``broken_below``), a different
    one per head."""
    table = np.asarray(table)
    problems = [f"'{task}' not learned ({table[0, q]:.2f})" for q, task in enumerate(TASKS)
                if table[0, q] <= learned_above]
    broken = table[1:] < broken_below  # (H, 3)
    problems += [f"'{task}' survives the removal of any one head" for q, task in enumerate(TASKS)
                 if not broken[:, q].any()]
    problems += [f"head {h} breaks {int(n)} questions" for h, n in enumerate(broken.sum(axis=1)) if n > 1]
    problems += [f"'{task}' is broken by {int(n)} heads" for q, (task, n) in enumerate(zip(TASKS, broken.sum(axis=0)))
                 if n > 1]
    return problems


@torch.no_grad()
def attention_at_query(model, tokens, colours, weights=None):
    """Where each head looks from ``?``, averaged over the examples: ``(H, 3)``.

    Columns in the order of ``TASKS``: the weight on the red digit, on the blue digit, and on
    the *uncoloured* copies of the majority digit (so that a pointer to a coloured digit that
    happens to be the majority does not count as looking at the majority). ``weights``
    ``(N, H, L+1, L+1)`` replaces the model's, e.g. to see what a uniform head would give.
    """
    if weights is None:
        _, weights = model(tokens, colours)
    at_query = weights[:, :, -1, :-1]  # (N, H, L): the ``?`` row, keys without ``?`` itself
    digits, plain = tokens[:, :-1], colours[:, :-1] == PLAIN  # (N, L)
    counts = torch.stack([(digits == d).sum(-1) for d in range(NUM_DIGITS)], dim=-1)  # (N, 10)
    majority = counts.argmax(-1)  # (N,)
    targets = [colours[:, :-1] == RED, colours[:, :-1] == BLUE, (digits == majority[:, None]) & plain]  # (N, L)
    return torch.stack([(at_query * t[:, None]).sum(-1).mean(0) for t in targets], dim=-1).numpy()


# --- figures ----------------------------------------------------------------------------------

def plot_heads(weights, labels, titles=None):
    """One heatmap per head, side by side: ``weights (H, L, L)`` of one example, tokens as ticks."""
    import matplotlib.pyplot as plt

    weights = np.asarray(weights)
    num_heads = weights.shape[0]
    fig, axes = plt.subplots(1, num_heads, figsize=(4.2 * num_heads, 4.4), squeeze=False)
    for h, ax in enumerate(axes[0]):
        image = ax.imshow(weights[h], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(len(labels)), labels, fontsize=8)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_xlabel("key")
        ax.set_ylabel("query")
        ax.set_title(titles[h] if titles else f"head {h}", fontsize=10)
    fig.colorbar(image, ax=list(axes[0]), fraction=0.02, pad=0.02, label="attention weight")
    plt.close(fig)
    return fig


def plot_ablation(table):
    """The ``ablation_table`` as a heatmap: rows = head removed, columns = question, cells = accuracy."""
    import matplotlib.pyplot as plt

    table = np.asarray(table)
    rows = ["none"] + [f"head {h}" for h in range(table.shape[0] - 1)]
    fig, ax = plt.subplots(figsize=(4.6, 0.45 * len(rows) + 1.4))
    ax.imshow(table, cmap="RdYlGn", vmin=0.0, vmax=1.0)
    for (i, j), acc in np.ndenumerate(table):
        ax.text(j, i, f"{acc:.2f}", ha="center", va="center", fontsize=9)
    ax.set_xticks(range(len(TASKS)), TASKS)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("question")
    ax.set_ylabel("head removed")
    ax.set_title("accuracy with one head removed", fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return fig
