"""`causal_mask`: classic bugs and correct alternatives."""
import numpy as np


def hides_diagonal(num_queries, num_keys=None):
    num_keys = num_keys or num_queries
    return np.tril(np.ones((num_queries, num_keys), dtype=bool), k=num_keys - num_queries - 1)


def start_aligned(num_queries, num_keys=None):
    num_keys = num_keys or num_queries
    return np.tril(np.ones((num_queries, num_keys), dtype=bool))


def triu(num_queries, num_keys=None):
    num_keys = num_keys or num_queries
    return np.triu(np.ones((num_queries, num_keys), dtype=bool))


def one_ahead(num_queries, num_keys=None):
    num_keys = num_keys or num_queries
    return np.tril(np.ones((num_queries, num_keys), dtype=bool), k=num_keys - num_queries + 1)


def float_tril(num_queries, num_keys=None):
    num_keys = num_keys or num_queries
    return np.tril(np.ones((num_queries, num_keys)), k=num_keys - num_queries)


def tril_offset(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    return np.tril(np.ones((num_queries, num_keys), dtype=bool), k=num_keys - num_queries)


def loops(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    mask = np.zeros((num_queries, num_keys), dtype=bool)
    for i in range(num_queries):
        for j in range(num_keys):
            mask[i, j] = j - (num_keys - num_queries) <= i
    return mask


WRONG = {
    hides_diagonal: "it hides the diagonal",
    start_aligned: "aligned to the start of the keys",
    triu: "your mask is transposed",
    one_ahead: "see the next key",
    float_tril: "expected a boolean mask",
}
CORRECT = [tril_offset, loops]
