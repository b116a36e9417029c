"""`num_params_multiHeadAttention` of b<>com's "Software AnatomyNLM" (Transformer_params_calculator.py):
2 * M * d_e * (d_k + d_v) + zeta * (M * (2 * d_k + d_v) + d_e), checked by its authors against Keras's
count_params for query, key, value and output all of width d_e.

Source: b<>com Software AnatomyNLM, Transformer_params_calculator.py (author Majd Saleh, 2023; a public
repository found through the public-code index, repository name not shown; commit not recorded).
Licence: Apache-2.0 (stated in the file).
Adapter: d_e = query_dim, M = num_heads, d_k = key_dim, d_v = value_dim (key_dim when None), zeta = bias;
output_dim has no place in the formula (it assumes the output width is d_e).
"""

OUTSIDE = {
    "exercise": "parameter_count",
    "source": "b<>com Software AnatomyNLM Transformer_params_calculator.py num_params_multiHeadAttention",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"output_dim",
    "cause": "the formula assumes the output width equals the query width (W_o is M*d_v x d_e and b_o has d_e entries): output_dim is not used.",
    "named": [r"output_dim (is )?(ignored|not used|unused|has no effect)|ignor\w+ output_dim|as if output_dim"],
    "false": [r"bias=False (is )?(wrong|ignored)", r"value_dim (is )?(ignored|wrong)"],
}


def num_params_multiHeadAttention(d_k, d_v, d_e, M, zeta):
    return 2 * M * d_e * (d_k + d_v) + zeta * (M * (2 * d_k + d_v) + d_e)


def parameter_count(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    d_v = key_dim if value_dim is None else value_dim
    return num_params_multiHeadAttention(key_dim, d_v, query_dim, num_heads, int(bool(bias)))
