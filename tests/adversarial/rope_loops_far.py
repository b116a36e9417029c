# Right everywhere but at positions in the thousands, where it never returns. The case after
# that one (an odd d, which must raise ValueError at once) is its own outcome: passed.
_right_rope = apply_rope


def apply_rope(x, offset=0, base=10000.0):
    while offset >= 1000:
        pass
    return _right_rope(x, offset, base)
