# Right but slow (issue 32): RoPE as a table of dense rotation matrices, one per position from 0
# to the last one asked for, each built with a few small tensor operations, instead of two
# elementwise products. At positions 2500-3499 it needs about 0.4-0.6 s of CPU, against the
# exercise's 0.5 s budget per case (its case CPU limit is that budget times a margin).

import math


def apply_rope(x, offset=0, base=10000.0):
    length, dim = x.shape[-2], x.shape[-1]
    if dim % 2:
        raise ValueError(f"the last axis of x must be even (features rotated in pairs), got {dim}")
    half = dim // 2
    table = []
    for t in range(offset + length):  # every position up to the last, entry by entry: the slow part
        angles = [t * base ** (-2.0 * (i % half) / dim) for i in range(dim)]
        rotation = torch.empty(dim, dim, dtype=torch.float64)
        for r in range(dim):
            for col in range(dim):
                if col == r:
                    rotation[r, col] = math.cos(angles[r])
                elif col == r + half:
                    rotation[r, col] = -math.sin(angles[r])
                elif col == r - half:
                    rotation[r, col] = math.sin(angles[r])
                else:
                    rotation[r, col] = 0.0
        table.append(rotation)
    rotations = torch.stack(table[offset:]).to(x.dtype)  # (L, d, d)
    return torch.einsum("ltd,...ld->...lt", rotations, x)
