"""The sinusoidal time embedding of a DDPM/DDIM study (the fairseq formula reused for diffusion steps):
exp(-i * log(10000) / (half_dim - 1)), cat((sin, cos), -1).

Source: https://github.com/B-LED-LUE/DDPM_DDIM_MNIST-study, Time_Embedding.py `TimeEmbedding.forward`
(the part before the MLP; commit not recorded).
Licence: none stated in the repository (reproduced for testing with attribution).
Adapter: t = offset .. offset + length - 1 (the steps), base in place of 10000, the MLP dropped.
"""
import math

import torch

OUTSIDE = {
    "exercise": "sinusoidal_positions",
    "source": "B-LED-LUE/DDPM_DDIM_MNIST-study Time_Embedding.py",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "[sin | cos] halves instead of interleaved, and frequencies with (dim/2 - 1) in the exponent instead of dim.",
    "named": [r"\[sin\b.*\|.*cos|halves|not interleaved|another order|column", r"half_dim - 1|dim/2 - 1|d/2 - 1|exponent"],
    "false": [r"(fails|wrong) (with|on|at) .*offset|offset (is )?ignored", r"is float64|dtype"],
}


def _time_embedding(t, dim, base=10000.0):
    half_dim = dim // 2
    x = math.log(base) / (half_dim - 1)
    x = torch.exp(torch.arange(half_dim, device=t.device) * -x)
    x = t[:, None] * x[None, :]
    x = torch.cat((x.sin(), x.cos()), dim=-1)
    return x


def sinusoidal_positions(length, dim, offset=0, base=10000.0):
    return _time_embedding(torch.arange(offset, offset + length), dim, base)
