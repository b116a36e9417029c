"""Figures for the chapters: each function takes arrays computed in the notebook and returns
a ``matplotlib.figure.Figure``.

The figures are built with ``pyplot`` (so that Jupyter knows how to display them) and closed
before they are returned: the notebook shows the returned figure exactly once, and scripts and
tests run under the non-interactive Agg backend without opening windows.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

# Masked = light grey, may attend = dark blue: the same two colours in every mask figure.
MASK_CMAP = ListedColormap(["#e8e8e8", "#1f4e79"])


def _finish(fig):
    fig.tight_layout()
    plt.close(fig)
    return fig


def _label_axes(ax, shape, query_labels=None, key_labels=None):
    """Tick every query (row) and key (column); tokens if given, indices otherwise."""
    num_queries, num_keys = shape
    ax.set_xticks(range(num_keys), key_labels if key_labels is not None else range(num_keys))
    ax.set_yticks(range(num_queries), query_labels if query_labels is not None else range(num_queries))
    ax.set_xlabel("key")
    ax.set_ylabel("query")


def plot_weights(weights, query_labels=None, key_labels=None, title="attention weights", annotate=True):
    """Heatmap of one ``(Lq, Lk)`` matrix of attention weights, each cell annotated with its value."""
    weights = np.asarray(weights)
    if weights.ndim != 2:
        raise ValueError(f"plot_weights wants one (Lq, Lk) matrix, got shape {weights.shape}")
    fig, ax = plt.subplots(figsize=(0.6 * weights.shape[1] + 2.2, 0.5 * weights.shape[0] + 1.4))
    image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0)
    _label_axes(ax, weights.shape, query_labels, key_labels)
    if annotate:
        for (i, j), w in np.ndenumerate(weights):
            # Dark text on the bright end of viridis, light text on the dark end.
            ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=8,
                    color="black" if w > 0.6 else "white")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return _finish(fig)


def plot_masks(masks, query_labels=None, key_labels=None):
    """Boolean masks side by side, one panel per ``{title: (Lq, Lk) array}`` entry.

    Dark cells may attend (True), light cells are masked (False).
    """
    fig, axes = plt.subplots(1, len(masks), figsize=(3.0 * len(masks), 3.0), squeeze=False)
    for ax, (title, mask) in zip(axes[0], masks.items()):
        mask = np.asarray(mask)
        if mask.ndim != 2 or mask.dtype != bool:
            raise ValueError(f"mask {title!r} must be a 2-D boolean array, got {mask.dtype} {mask.shape}")
        ax.imshow(mask, cmap=MASK_CMAP, vmin=0, vmax=1)
        _label_axes(ax, mask.shape, query_labels, key_labels)
        # Grid lines between cells make single masked entries easy to count.
        ax.set_xticks(np.arange(-0.5, mask.shape[1]), minor=True)
        ax.set_yticks(np.arange(-0.5, mask.shape[0]), minor=True)
        ax.grid(which="minor", color="white", linewidth=1)
        ax.tick_params(which="minor", length=0)
        ax.set_title(title, fontsize=10)
    return _finish(fig)


def plot_scaling(dims, dot_variance, max_weight, jacobian_norm):
    """Why attention divides by sqrt(d_k), in three panels against ``d_k``.

    Args:
        dims: the key dimensions ``d_k`` measured, shape ``(n,)``.
        dot_variance: measured variance of ``q . k`` for unit-variance ``q, k``, ``(n,)``.
        max_weight: ``{"unscaled": (n,), "scaled": (n,)}``, the mean largest softmax weight.
        jacobian_norm: ``{"unscaled": (n,), "scaled": (n,)}``, the mean Frobenius norm of the
            softmax Jacobian (how much gradient reaches the scores).
    """
    dims = np.asarray(dims)
    fig, (ax_var, ax_max, ax_jac) = plt.subplots(1, 3, figsize=(12, 3.6))

    ax_var.loglog(dims, dot_variance, "o", label="measured Var(q·k)")
    ax_var.loglog(dims, dims, "--", color="grey", label="d_k")
    ax_var.set_title("variance of a dot product")
    ax_var.legend()

    styles = {"unscaled": dict(color="#c0392b", marker="o"), "scaled": dict(color="#1f4e79", marker="s")}
    for name, style in styles.items():
        label = "q·k" if name == "unscaled" else "q·k / sqrt(d_k)"
        ax_max.semilogx(dims, max_weight[name], label=label, **style)
        ax_jac.semilogx(dims, jacobian_norm[name], label=label, **style)
    ax_max.set_ylim(0, 1.05)
    ax_max.set_title("largest softmax weight")
    ax_jac.set_ylim(bottom=0)
    ax_jac.set_title("softmax Jacobian norm (gradient)")
    for ax in (ax_var, ax_max, ax_jac):
        ax.set_xlabel("d_k")
        ax.set_xticks(dims, [str(d) for d in dims], minor=False)
        ax.minorticks_off()
    ax_max.legend()
    return _finish(fig)


# --- Chapters 3 and 4: heads ------------------------------------------------------------------


def plot_head_split(panels, width=10):
    """Integer tensors whose entries encode ``width * position + feature``, side by side.

    ``panels`` maps a title to a 2-D ``(rows, features)`` array. Each cell is coloured by the
    position its value encodes (``value // width``) and printed as ``p,f``, so a panel whose
    rows mix positions shows it at a glance.
    """
    panels = {title: np.asarray(a) for title, a in panels.items()}
    positions = max(int(a.max()) // width for a in panels.values()) + 1
    cmap = plt.get_cmap("tab10", positions)
    widths = [a.shape[1] for a in panels.values()]
    rows = max(a.shape[0] for a in panels.values())
    fig, axes = plt.subplots(1, len(panels), figsize=(0.55 * sum(widths) + 1.2 * len(panels), 0.5 * rows + 1.6),
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    for ax, (title, a) in zip(axes[0], panels.items()):
        ax.imshow(a // width, cmap=cmap, vmin=-0.5, vmax=positions - 0.5)
        for (i, j), value in np.ndenumerate(a):
            ax.text(j, i, f"{value // width},{value % width}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(a.shape[1]))
        ax.set_yticks(range(a.shape[0]))
        ax.set_xlabel("feature index")
        ax.set_ylabel("row")
        ax.set_title(title, fontsize=10)
    return _finish(fig)


def plot_head_weights(weights, titles=None, query_labels=None, key_labels=None):
    """One heatmap per head of a ``(H, Lq, Lk)`` array of attention weights, on one colour scale."""
    weights = np.asarray(weights)
    if weights.ndim != 3:
        raise ValueError(f"plot_head_weights wants (H, Lq, Lk) weights, got shape {weights.shape}")
    titles = titles if titles is not None else [f"head {h}" for h in range(weights.shape[0])]
    num_heads, num_queries, num_keys = weights.shape
    fig, axes = plt.subplots(1, num_heads, figsize=(num_heads * (0.45 * num_keys + 1.2) + 1.0, 0.45 * num_queries + 1.6),
                             squeeze=False, layout="constrained")
    for ax, w, title in zip(axes[0], weights, titles):
        image = ax.imshow(w, cmap="viridis", vmin=0.0, vmax=1.0)
        _label_axes(ax, w.shape, query_labels, key_labels)
        ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=list(axes[0]), fraction=0.046 / num_heads, pad=0.02)
    plt.close(fig)  # constrained layout, not _finish's tight_layout: it leaves room for the shared colour bar
    return fig


# Chapter 6: one colour and marker per removal order, the same in every pruning figure.
PRUNING_STYLES = {
    "static": dict(color="#1f4e79", marker="o", label="importance, static"),
    "iterative": dict(color="#2e86c1", marker="s", linestyle="--", label="importance, iterative"),
    "per-layer static": dict(color="#7d3c98", marker="^", linestyle=":", label="normalised per layer, static"),
    "per-layer iterative": dict(color="#bb8fce", marker="D", linestyle="-.", markersize=3,
                                label="normalised per layer, iterative"),
    "reverse": dict(color="#c0392b", marker="v", label="reverse (most important first)"),
}


def _pruning_panel(ax, curves, names, band_label=None):
    """One model's curves on ``ax``: the random orders' mean and central 90 %, then ``names``."""
    random = 100 * np.asarray(curves["random"])
    removed = np.arange(random.shape[1])
    low, high = np.quantile(random, 0.05, axis=0), np.quantile(random, 0.95, axis=0)
    ax.fill_between(removed, low, high, color="grey", alpha=0.25, label=band_label)
    ax.plot(removed, random.mean(0), color="grey", marker=".", label="random: mean")
    for name in names:
        style = dict(PRUNING_STYLES[name])
        ax.plot(removed, 100 * np.asarray(curves[name]), markersize=style.pop("markersize", 4), **style)
    ax.set(xlim=(0, removed[-1]), ylim=(0, 100))


def plot_pruning_curves(curves, names, quarter=None):
    """Test accuracy (%) against heads removed, for one model: ``curves[name]`` of shape ``(K + 1,)``
    for each of ``names``, and ``curves["random"]`` ``(num_orders, K + 1)`` drawn as its mean and
    the band of its central 90 %. A dotted line marks ``quarter`` heads removed."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    num_orders = len(curves["random"])
    _pruning_panel(ax, curves, names, band_label=f"{num_orders} random orders: central 90 %")
    if quarter is not None:
        ax.axvline(quarter, color="black", linewidth=0.8, linestyle=":")
    removed = np.arange(len(curves["random"][0]))
    ax.set(xlabel=f"heads removed (of {removed[-1]})", ylabel="test accuracy (%)",
           title="accuracy as heads are removed", xticks=removed)
    ax.legend(fontsize=8, loc="lower left")
    return _finish(fig)


def plot_pruning_seeds(results, names, holds=None):
    """One small panel per model, ``results = {seed: curves}`` as for ``plot_pruning_curves``.

    ``holds``, if given, maps a seed to a boolean array over ``k = 1 .. K - 1``: the points where
    the ordering fails are marked with a cross at the bottom of that seed's panel.
    """
    seeds = list(results)
    columns = min(3, len(seeds))
    rows = -(-len(seeds) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 2.9 * rows), sharex=True, sharey=True,
                             squeeze=False)
    for ax, seed in zip(axes.flat, seeds):
        _pruning_panel(ax, results[seed], names, band_label="random: central 90 %")
        title = f"seed {seed}"
        if holds is not None:
            failed = np.flatnonzero(~np.asarray(holds[seed])) + 1  # k = 1 .. K - 1
            ax.plot(failed, np.full(len(failed), 3.0), "x", color="black", markersize=6,
                    label="ordering fails here")
            title += f": holds at {len(holds[seed]) - len(failed)} of {len(holds[seed])} points"
        ax.set_title(title, fontsize=10)
    for ax in axes.flat[len(seeds):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("heads removed")
    for ax in axes[:, 0]:
        ax.set_ylabel("test accuracy (%)")
    handles, labels = axes.flat[0].get_legend_handles_labels()  # an empty cross series still has a handle
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1 if rows > 1 else 0.18, 1, 1))
    plt.close(fig)
    return fig
