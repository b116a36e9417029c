"""softmax from SciPy (`scipy.special.softmax`, scipy/special/_logsumexp.py).

Source: https://github.com/scipy/scipy, scipy/special/_logsumexp.py, `softmax(x, axis=None)`
(SciPy 1.11 era; commit not recorded): shift by the max along `axis` with keepdims, exp, divide
by the sum along `axis`.
Licence: BSD-3-Clause (SciPy).
Adapter: the course's default axis=-1 (SciPy's default is None, the whole array).
"""
import numpy as np

OUTSIDE = {
    "exercise": "softmax",
    "source": "scipy/scipy scipy/special/_logsumexp.py softmax",
    "licence": "BSD-3-Clause",
    "verdict": "full",
    "cause": "correct: a per-axis max shift, the sum over the same axis.",
    "named": [],
    "false": [],
}


def _scipy_softmax(x, axis=None):
    x = np.asarray(x)
    x_max = np.amax(x, axis=axis, keepdims=True)
    exp_x_shifted = np.exp(x - x_max)
    return exp_x_shifted / np.sum(exp_x_shifted, axis=axis, keepdims=True)


def softmax(x, axis=-1):
    return _scipy_softmax(x, axis=axis)
