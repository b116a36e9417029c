"""Code to fingerprints, steps 1 and 2 of ``--similarity`` (:mod:`..similarity`): a definition
normalised into tokens (names numbered in order of first use, docstrings, comments, layout
and annotations gone), then winnowed as MOSS does: hashes of every ``K``-token window, the
smallest of each ``W`` consecutive ones kept, so that any shared run of at least ``K + W - 1``
tokens shows as a shared fingerprint.
"""
from __future__ import annotations

import array
import ast
import hashlib
import io
import sys
import tokenize

K, W = 8, 4  # k-gram length and winnowing window, in tokens


class _Normalise(ast.NodeTransformer):
    def __init__(self):
        self.names: dict[str, str] = {}

    def _rename(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node):
        node.id = self._rename(node.id)
        return node

    def visit_arg(self, node):
        node.arg, node.annotation = self._rename(node.arg), None
        return node

    def _body(self, node):
        def docstring(s):
            return isinstance(s, ast.Expr) and isinstance(getattr(s.value, "value", None), str)

        node.body = [s for s in node.body if not docstring(s)] or [ast.Pass()]
        if hasattr(node, "name"):
            node.name = self._rename(node.name)
        if hasattr(node, "returns"):
            node.returns = None
        self.generic_visit(node)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _body


def normalised_tokens(source: str, name: str) -> list[str] | None:
    """The tokens of the last top-level definition of ``name`` in ``source``, normalised."""
    try:
        tree = ast.parse(source)
        nodes = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                 and n.name == name]
        if not nodes:
            return None
        text = ast.unparse(_Normalise().visit(nodes[-1]))
        return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER)]
    except (SyntaxError, ValueError, RecursionError, MemoryError, tokenize.TokenError):
        return None  # code the grader cannot parse here: the learner's confined process reports it


def fingerprints(tokens: list[str]) -> list[int]:
    """Winnowed hashes of the ``K``-token windows (stable across runs and machines)."""
    grams = [int.from_bytes(hashlib.blake2b("\0".join(tokens[i:i + K]).encode(), digest_size=8).digest(), "big")
             for i in range(max(1, len(tokens) - K + 1))]
    kept = {min(grams[i:i + W]) for i in range(max(1, len(grams) - W + 1))}
    return sorted(kept)


def pack(fingerprints: list[int]) -> str:
    """One hex string (16 digits a fingerprint): a rerun reads hundreds of these, and a JSON
    list of 64-bit integers takes ten times as long to parse."""
    return b"".join(fp.to_bytes(8, "big") for fp in fingerprints).hex()


def unpack(packed: str) -> list[int]:
    values = array.array("Q", bytes.fromhex(packed))
    if sys.byteorder == "little":
        values.byteswap()
    return values.tolist()
