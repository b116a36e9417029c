"""`parameter_count`: classic bugs and correct alternatives."""
import numpy as np


def no_biases(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    value_dim = value_dim or key_dim
    output_dim = output_dim or query_dim
    return 2 * query_dim * num_heads * key_dim + query_dim * num_heads * value_dim + num_heads * value_dim * output_dim


def total_dims(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    value_dim = value_dim or key_dim
    output_dim = output_dim or query_dim
    weights = 2 * query_dim * key_dim + query_dim * value_dim + value_dim * output_dim
    return weights + (2 * key_dim + value_dim + output_dim if bias else 0)


def value_dim_from_query(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    value_dim = value_dim or query_dim
    output_dim = output_dim or query_dim
    n = 2 * (query_dim + bias) * num_heads * key_dim + (query_dim + bias) * num_heads * value_dim
    return n + num_heads * value_dim * output_dim + bias * output_dim


def returns_float(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    value_dim = value_dim or key_dim
    output_dim = output_dim or query_dim
    n = 2 * (query_dim + bias) * num_heads * key_dim + (query_dim + bias) * num_heads * value_dim
    return float(n + num_heads * value_dim * output_dim + bias * output_dim)


def by_shapes(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    value_dim = key_dim if value_dim is None else value_dim
    output_dim = query_dim if output_dim is None else output_dim
    shapes = [(query_dim, num_heads * key_dim), (query_dim, num_heads * key_dim),
              (query_dim, num_heads * value_dim), (num_heads * value_dim, output_dim)]
    if bias:
        shapes += [(num_heads * key_dim,), (num_heads * key_dim,), (num_heads * value_dim,), (output_dim,)]
    return int(sum(np.prod(s) for s in shapes))


def by_torch_modules(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    from torch import nn

    value_dim = key_dim if value_dim is None else value_dim
    output_dim = query_dim if output_dim is None else output_dim
    layers = [nn.Linear(query_dim, num_heads * key_dim, bias=bias), nn.Linear(query_dim, num_heads * key_dim, bias=bias),
              nn.Linear(query_dim, num_heads * value_dim, bias=bias), nn.Linear(num_heads * value_dim, output_dim, bias=bias)]
    return sum(p.numel() for layer in layers for p in layer.parameters())


def no_output_bias(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    value_dim = key_dim if value_dim is None else value_dim
    output_dim = query_dim if output_dim is None else output_dim
    inner_k, inner_v = num_heads * key_dim, num_heads * value_dim
    count = 2 * query_dim * inner_k + query_dim * inner_v + inner_v * output_dim
    return count + (2 * inner_k + inner_v if bias else 0)  # b_q, b_k, b_v but no b_o


WRONG = {
    no_biases: "leaves out the biases",
    total_dims: "they are per head",
    value_dim_from_query: "defaults value_dim to query_dim",
    returns_float: "expected an int",
    no_output_bias: "output projection's bias b_o",
}
CORRECT = [by_shapes, by_torch_modules]
