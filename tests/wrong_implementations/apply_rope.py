"""`apply_rope` (PyTorch): classic bugs and correct alternatives."""
import torch


def _angles(length, dim, offset, base, dtype=torch.float64):
    pos = torch.arange(offset, offset + length, dtype=dtype)[:, None]
    return pos * base ** (-torch.arange(0, dim, 2, dtype=dtype) / dim)  # (L, d/2)


def gptj_interleaved(x, offset=0, base=10000.0):
    # GPT-J / the RoFormer paper: adjacent pairs (2i, 2i+1)
    a = _angles(x.shape[-2], x.shape[-1], offset, base)
    cos, sin = a.cos().to(x.dtype), a.sin().to(x.dtype)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


def rotate_half_wrong_sign(x, offset=0, base=10000.0):
    a = _angles(x.shape[-2], x.shape[-1], offset, base)
    emb = torch.cat([a, a], dim=-1)
    half = x.shape[-1] // 2
    rotated = torch.cat([x[..., half:], -x[..., :half]], dim=-1)  # should be [-x2, x1]
    return x * emb.cos().to(x.dtype) + rotated * emb.sin().to(x.dtype)


def forgets_offset(x, offset=0, base=10000.0):
    a = _angles(x.shape[-2], x.shape[-1], 0, base)
    emb = torch.cat([a, a], dim=-1)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * emb.cos().to(x.dtype) + rotated * emb.sin().to(x.dtype)


def llama_hf_freqs_interleaved(x, offset=0, base=10000.0):
    # cos/sin tables built for adjacent pairs (repeat_interleave), used with rotate_half
    a = _angles(x.shape[-2], x.shape[-1], offset, base).repeat_interleave(2, dim=-1)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * a.cos().to(x.dtype) + rotated * a.sin().to(x.dtype)


def float32_tables(x, offset=0, base=10000.0):
    # inv_freq and positions in float32, as most implementations keep them
    a = _angles(x.shape[-2], x.shape[-1], offset, base, dtype=torch.float32)
    emb = torch.cat([a, a], dim=-1)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * emb.cos().to(x.dtype) + rotated * emb.sin().to(x.dtype)


def rotate_half_hf(x, offset=0, base=10000.0):
    """Correct: Hugging Face's rotate_half with cat([angles, angles])."""
    if x.shape[-1] % 2:
        raise ValueError(f"head dim must be even, got {x.shape[-1]}")
    a = _angles(x.shape[-2], x.shape[-1], offset, base)
    emb = torch.cat([a, a], dim=-1)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * emb.cos().to(x.dtype) + rotated * emb.sin().to(x.dtype)


def complex_numbers(x, offset=0, base=10000.0):
    """Correct: pairs (i, i + d/2) as complex numbers, multiplied by e^(i angle)."""
    if x.shape[-1] % 2 != 0:
        raise ValueError("apply_rope needs an even last axis")
    half = x.shape[-1] // 2
    a = _angles(x.shape[-2], x.shape[-1], offset, base)
    z = torch.complex(x[..., :half].double(), x[..., half:].double()) * torch.polar(torch.ones_like(a), a)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


def unchecked_complex(x, offset=0, base=10000.0):
    # right on every even d; an odd one fails in the broadcast (RuntimeError), not with a ValueError
    half = x.shape[-1] // 2
    a = _angles(x.shape[-2], x.shape[-1], offset, base)
    z = torch.complex(x[..., :half].double(), x[..., half:2 * half].double())
    z = z * torch.polar(torch.ones_like(a), a)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


WRONG = {
    gptj_interleaved: "pairs adjacent features",
    rotate_half_wrong_sign: "turns the wrong way",
    forgets_offset: "ignores the offset",
    llama_hf_freqs_interleaved: "laid out for adjacent pairs",
    float32_tables: "computed in float32",
    unchecked_complex: "where it must raise ValueError",
}
CORRECT = [rotate_half_hf, complex_numbers]
