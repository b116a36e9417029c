"""The chapter figures: each helper returns a closed Figure that shows exactly the data given."""
import matplotlib

matplotlib.use("Agg")  # before pyplot is imported by the helpers: no display needed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from lab import plots  # noqa: E402
from solutions.masking import causal_mask  # noqa: E402


def test_plot_masks_draws_each_mask_as_given_and_closes_the_figure():
    masks = {"square": causal_mask(4), "kv cache": causal_mask(2, 5)}
    fig = plots.plot_masks(masks)
    assert [ax.get_title() for ax in fig.axes] == list(masks)
    for ax, mask in zip(fig.axes, masks.values()):
        # The image holds the mask itself: True (may attend) is the dark colour, index 1.
        np.testing.assert_array_equal(ax.images[0].get_array(), mask)
    assert not plt.get_fignums(), "helpers must close their figures so notebooks show them once"


def test_plot_masks_rejects_a_float_mask():
    with pytest.raises(ValueError, match="boolean"):
        plots.plot_masks({"float": np.ones((2, 3))})


def test_plot_weights_annotates_every_cell_and_rejects_a_batch():
    w = np.array([[0.25, 0.75, 0.0], [1.0, 0.0, 0.0]])
    fig = plots.plot_weights(w, key_labels=["a", "b", "c"])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["0.25", "0.75", "0.00", "1.00", "0.00", "0.00"]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="one"):
        plots.plot_weights(np.zeros((2, 2, 3)))


def test_plot_scaling_plots_the_measured_curves():
    dims = np.array([4, 16, 64])
    fig = plots.plot_scaling(
        dims, dims * 1.01,
        {"unscaled": [0.4, 0.7, 0.9], "scaled": [0.25, 0.25, 0.25]},
        {"unscaled": [0.3, 0.2, 0.1], "scaled": [0.3, 0.3, 0.3]},
    )
    ax_var, ax_max, ax_jac = fig.axes
    np.testing.assert_allclose(ax_var.lines[0].get_ydata(), dims * 1.01)
    np.testing.assert_allclose(ax_max.lines[0].get_ydata(), [0.4, 0.7, 0.9])
    np.testing.assert_allclose(ax_jac.lines[1].get_ydata(), [0.3, 0.3, 0.3])
