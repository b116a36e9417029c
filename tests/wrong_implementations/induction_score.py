"""`induction_score` (PyTorch): classic bugs and correct alternatives."""
import torch


def duplicate_token(weights, period):
    L = weights.shape[-1]
    return torch.stack([weights[..., i, i - period] for i in range(period, L)], dim=-1).mean(-1)


def diagonal_from_period_minus_one(weights, period):
    return weights.diagonal(offset=1 - period, dim1=-2, dim2=-1).mean(-1)


def previous_token(weights, period):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1)[..., period - 1:].mean(-1)


def summed(weights, period):
    return weights.diagonal(offset=1 - period, dim1=-2, dim2=-1)[..., 1:].sum(-1)


def diagonal(weights, period):
    """Correct: the diagonal below the main one by period - 1, without its first entry."""
    if period < 1 or period >= weights.shape[-1]:
        raise ValueError(f"bad period {period}")
    return weights.diagonal(offset=1 - period, dim1=-2, dim2=-1)[..., 1:].mean(-1)


def loop(weights, period):
    """Correct: a loop over the queries."""
    L = weights.shape[-1]
    if not 0 < period < L:
        raise ValueError("period must be in [1, L)")
    total = torch.zeros(weights.shape[:-2], dtype=weights.dtype)
    for i in range(period, L):
        total = total + weights[..., i, i - period + 1]
    return total / (L - period)


def unchecked(weights, period):
    # right for 1 <= period < L; period L averages no query (NaN) instead of a ValueError
    queries = torch.arange(period, weights.shape[-1])
    return weights[..., queries, queries - period + 1].mean(-1)


WRONG = {
    duplicate_token: "earlier copy of the current token",
    diagonal_from_period_minus_one: "includes query period - 1",
    previous_token: "previous-token head",
    summed: "a sum over the queries",
    unchecked: "where it must raise ValueError",
}
CORRECT = [diagonal, loop]
