# Right but slow (issue 32): RoPE as a table of dense rotation matrices, one per position from 0
# to the last one asked for, built entry by entry, instead of two elementwise products. At
# positions 2500-3499 it needs 0.35-0.52 s of CPU on the course's test machine (unloaded),
# against the exercise's budget of 0.5 s per case (its CPU limit is that budget times a margin).

import math


def apply_rope(x, offset=0, base=10000.0):
    length, dim = x.shape[-2], x.shape[-1]
    if dim % 2:
        raise ValueError(f"the last axis of x must be even (features rotated in pairs), got {dim}")
    half = dim // 2
    table = []
    for t in range(offset + length):  # every position up to the last, entry by entry: the slow part
        rotation = torch.empty(dim, dim, dtype=torch.float64)
        for r in range(dim):
            for col in range(dim):
                angle = t * base ** (-2.0 * (r % half) / dim)  # row r's pair turns by t * base^(-2i/d)
                if col == r:
                    rotation[r, col] = math.cos(angle)
                elif col == r + half:
                    rotation[r, col] = -math.sin(angle)
                elif col == r - half:
                    rotation[r, col] = math.sin(angle)
                else:
                    rotation[r, col] = 0.0
        table.append(rotation)
    rotations = torch.stack(table[offset:]).to(x.dtype)  # (L, d, d)
    return torch.einsum("ltd,...ld->...lt", rotations, x)
