"""`repeat_kv` of Meta's LLaMA 2 reference code, on its (bs, slen, n_kv_heads, head_dim) layout, as in
a from-scratch LLaMA 2 repository.

Source: https://github.com/QiGoki/MyLLaMA2, Attention.py `repeat_kv` (the same function as
meta-llama/llama llama/model.py; commit not recorded).
Licence: none stated in MyLLaMA2; Meta's original under the LLaMA 2 Community License.
Adapter: the course's (B, Hkv, L, d) transposed to the original's (B, L, Hkv, d) and back (a layout change).
"""
import torch

OUTSIDE = {
    "exercise": "repeat_kv",
    "source": "QiGoki/MyLLaMA2 Attention.py repeat_kv (Meta LLaMA 2 layout)",
    "licence": "none stated / LLaMA 2 Community License",
    "verdict": "full",
    "cause": "correct once the layout is converted.",
    "named": [],
    "false": [],
}


def _llama2_repeat_kv(x: torch.Tensor, n_rep: int):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (
        x[:, :, :, None, :]
        .expand(bs, slen, n_kv_heads, n_rep, head_dim)
        .reshape(bs, slen, n_kv_heads * n_rep, head_dim)
    )


def repeat_kv(x, n_rep):
    return _llama2_repeat_kv(x.transpose(1, 2), n_rep).transpose(1, 2)
