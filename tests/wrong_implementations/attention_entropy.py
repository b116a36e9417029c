"""`attention_entropy`: classic bugs and correct alternatives."""
import numpy as np
from scipy.special import xlogy


def bits(weights):
    w = np.where(weights > 0, weights, 1)
    return -(weights * np.log2(w)).sum(-1)


def nan_on_zeros(weights):
    return -np.sum(weights * np.log(weights), axis=-1)


def positive_sum(weights):
    return np.sum(xlogy(weights, weights), axis=-1)


def over_queries(weights):
    return -xlogy(weights, weights).sum(axis=-2)


def with_xlogy(weights):
    return -xlogy(weights, weights).sum(axis=-1)


def masked_log(weights):
    logs = np.log(weights, out=np.zeros_like(weights), where=weights > 0)
    return -(weights * logs).sum(axis=-1)


def epsilon(weights):
    return -(weights * np.log(weights + 1e-12)).sum(axis=-1).astype(weights.dtype)


WRONG = {
    bits: "your output is in bits",
    nan_on_zeros: "NaN where a weight is 0",
    positive_sum: "wrong sign",
    over_queries: "sums over the query axis",
}
CORRECT = [with_xlogy, masked_log, epsilon]
