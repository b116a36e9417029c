"""The generated catalogue: mutants of the reference as known bugs, named from the edit and its place.

A mutant is one small edit of an exercise's own function or class in ``solutions/`` (the error
model of ``tests/mutation.py``, which grades them all: an operator swapped, a comparison loosened,
an integer off by one, a float doubled, a negation dropped, a call dropped or swapped for its
sibling, an axis moved, keepdims dropped). Where a learner's output is a mutant's on the failing
cases, and no passing case contradicts it (``scoring.stated_diagnoses``, as for a listed bug), the
feedback says what their output is "as if": "as if the max were a min in the row maxima". The
words name the operator and the quantity it changes, never the reference's code (no line, no
expression). Trusted code only: our own solutions, edited; the grader runs them in its process
like the listed bugs (``judge.bug_output``), each output computed once per case set.

``CATALOGUE`` (``of(exercise_id)``) holds, per exercise, ``{diagnosis: implementation}``, one
entry per distinct wording (mutants worded alike are that diagnosis's ways of writing it).
``EXCLUDED`` lets the mutant bench leave a mutant's own edit out while grading that mutant (the
catalogue must not name a mutant by itself).
"""
from __future__ import annotations

import ast
import copy
import types
from pathlib import Path

from ..spec import MODULE_OF

ROOT = Path(__file__).resolve().parents[2]

DROPPED_CALLS = {"swapaxes", "transpose", "sqrt", "exp", "softmax", "masked_softmax", "contiguous", "float",
                 "clone", "copy", "astype", "to", "flatten", "reshape", "view"}
AXIS_WORDS = {"axis", "dim"}
# A call swapped for its sibling (the same arguments): the reduction or the function next to it.
SWAPPED_CALLS = {"max": "min", "amax": "amin", "argmax": "argmin", "sum": "mean", "mean": "sum",
                 "sqrt": "square", "sin": "cos", "cos": "sin", "maximum": "minimum"}


class _Edit(ast.NodeTransformer):
    """Applies the ``target``-th possible edit (counting in visiting order); counts them all."""

    def __init__(self, target: int):
        self.target, self.seen, self.what, self.place, self.words = target, 0, "", "", ""
        self._places = ["a step of the computation"]

    def _take(self, node, replacement, words, said=""):
        here = self.seen == self.target
        self.seen += 1
        if here:
            self.what = f"line {getattr(node, 'lineno', '?')}: {words}"
            self.place, self.words = self._places[-1], said
            return replacement
        return None

    def _in(self, node, place):
        self._places.append(place)
        try:
            return self.generic_visit(node)
        finally:
            self._places.pop()

    def visit_Assign(self, node):
        target = node.targets[0]
        names = [t.id for t in (target.elts if isinstance(target, ast.Tuple) else [target]) if isinstance(t, ast.Name)]
        attr = target.attr if isinstance(target, ast.Attribute) else None
        return self._in(node, _place(names[0] if names else attr or ""))

    def visit_AugAssign(self, node):
        return self._in(node, _place(getattr(node.target, "id", "")))

    def visit_Return(self, node):
        return self._in(node, "the value returned")

    def visit_arguments(self, node):
        return self._in(node, "an argument's default")

    def visit_If(self, node):
        self._places.append("a condition")
        node.test = self.visit(node.test)
        self._places.pop()
        node.body = [self.visit(n) for n in node.body]
        node.orelse = [self.visit(n) for n in node.orelse]
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        swaps = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.Pow: ast.Mult,
                 ast.FloorDiv: ast.Div}
        new = swaps.get(type(node.op))
        if new is None:
            return node
        done = self._take(node, ast.BinOp(node.left, new(), node.right),
                          f"{type(node.op).__name__} -> {new.__name__}",
                          f"{_OPERATIONS[type(node.op)]} were {_OPERATIONS[new]}")
        return done or node

    def visit_Compare(self, node):
        self.generic_visit(node)
        swaps = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                 ast.NotEq: ast.Eq}
        new = swaps.get(type(node.ops[0]))
        if new is None:
            return node
        done = self._take(node, ast.Compare(node.left, [new(), *node.ops[1:]], node.comparators),
                          f"{type(node.ops[0]).__name__} -> {new.__name__}",
                          f"a comparison {_COMPARISONS[type(node.ops[0])]} were {_COMPARISONS[new]}")
        return done or node

    def visit_Constant(self, node):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return node
        if isinstance(value, int):
            done = self._take(node, ast.Constant(value + 1), f"{value} -> {value + 1}",
                              f"a {value} were {value + 1}")
            return done or self._take(node, ast.Constant(value - 1), f"{value} -> {value - 1}",
                                      f"a {value} were {value - 1}") or node
        if value == 0:  # 0.0 doubled is 0.0: no edit
            return node
        return self._take(node, ast.Constant(value * 2), f"{value} -> {value * 2}",
                          f"the constant {value:g} were {2 * value:g}") or node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
            return self._take(node, node.operand, "-x -> x", "a minus sign were dropped") or node
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in SWAPPED_CALLS:  # max for min, sum for mean, sqrt for square, ...: one reduction for another
            other = SWAPPED_CALLS[name]
            renamed = copy.copy(node)
            renamed.func = (ast.Attribute(node.func.value, other, ast.Load()) if isinstance(node.func, ast.Attribute)
                            else ast.Name(other, ast.Load()))
            done = self._take(node, renamed, f"{name}(...) -> {other}(...)",
                              f"the {_CALLS.get(name, name)} were the {_CALLS.get(other, other)}")
            if done is not None:
                return done
        if name in DROPPED_CALLS:
            first = node.args[0] if node.args and not isinstance(node.func, ast.Attribute) else (
                node.func.value if isinstance(node.func, ast.Attribute) and name not in ("sqrt", "exp", "softmax",
                                                                                            "masked_softmax")
                else node.args[0] if node.args else None)
            if first is not None:
                done = self._take(node, first, f"{name}(...) dropped", f"the {_CALLS.get(name, name)} were left out")
                if done is not None:
                    return done
        for i, kw in enumerate(node.keywords):
            if kw.arg in AXIS_WORDS and isinstance(kw.value, (ast.Constant, ast.UnaryOp)):
                if isinstance(kw.value, ast.Constant) and kw.value.value == 0:  # already axis 0: no edit
                    continue
                moved = copy.copy(node)
                moved.keywords = [*node.keywords[:i], ast.keyword(kw.arg, ast.Constant(0)), *node.keywords[i + 1:]]
                done = self._take(node, moved, f"{kw.arg}=... -> {kw.arg}=0",
                                  f"the {_CALLS.get(name, name)} ran over axis 0")
                if done is not None:
                    return done
            if kw.arg == "keepdims":
                dropped = copy.copy(node)
                dropped.keywords = [k for k in node.keywords if k is not kw]
                done = self._take(node, dropped, "keepdims dropped",
                                  f"the {_CALLS.get(name, name)} dropped the axis it reduces (no keepdims)")
                if done is not None:
                    return done
        return node


def _owner(tree: ast.Module, name: str):
    return next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name)


def _load(module: str, tree: ast.Module, name: str):
    """The exercise's object from ``tree`` run as a module of the ``solutions`` package."""
    mod = types.ModuleType(f"solutions._mutant_{module}")
    mod.__package__ = "solutions"
    mod.__file__ = str(ROOT / "solutions" / f"{module}.py")
    exec(compile(ast.fix_missing_locations(tree), mod.__file__, "exec"), mod.__dict__)  # noqa: S102  our own code
    return getattr(mod, name)


def edits(module: str, name: str) -> list[tuple[str, str, object]]:
    """``(what, words, implementation)`` of every edit of ``name`` in ``solutions/<module>.py`` that
    imports: ``what`` for a person reading the bench ("line 12: Add -> Sub"), ``words`` for a
    learner ("a subtraction were an addition in the angles")."""
    source = (ROOT / "solutions" / f"{module}.py").read_text()
    counter = _Edit(-1)
    counter.visit(_owner(ast.parse(source), name))
    found = []
    for target in range(counter.seen):
        tree = ast.parse(source)
        edit = _Edit(target)
        owner = _owner(tree, name)
        tree.body[tree.body.index(owner)] = edit.visit(owner)
        try:
            found.append((edit.what, f"{edit.words} in {edit.place}", _load(module, tree, name)))
        except Exception:  # an edit that does not compile or import is no mutant
            continue
    return found


_OPERATIONS = {ast.Add: "an addition", ast.Sub: "a subtraction", ast.Mult: "a multiplication", ast.Div: "a division",
               ast.Pow: "a power", ast.FloorDiv: "an integer division"}
_COMPARISONS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_CALLS = {"swapaxes": "transpose", "transpose": "transpose", "sqrt": "square root", "square": "square",
          "exp": "exponential", "softmax": "softmax", "masked_softmax": "masked softmax", "contiguous": "copy",
          "float": "cast to float", "clone": "copy", "copy": "copy", "astype": "dtype cast", "to": "dtype cast",
          "flatten": "flattening", "reshape": "reshape", "view": "reshape", "max": "max", "min": "min",
          "amax": "max", "amin": "min", "argmax": "argmax", "argmin": "argmin", "sum": "sum", "mean": "mean",
          "sin": "sine", "cos": "cosine", "maximum": "maximum", "minimum": "minimum", "log": "logarithm",
          "where": "selection", "cat": "concatenation", "arange": "range of positions", "full": "initial value",
          "zeros": "zeros", "zeros_like": "zeros", "masked_fill": "masked fill", "mul": "product"}
# The quantities the reference's names stand for, in the chapter's words.
_PLACES = {"scores": "the scores", "weights": "the weights", "angles": "the angles", "inv_freq": "the frequencies",
           "positions": "the positions", "e": "the exponentials", "total": "the row sums", "row_max": "the row maxima",
           "m": "the running maximum", "m_new": "the running maximum", "l": "the running denominator",
           "acc": "the running output", "mask": "the mask", "out": "the output", "keep": "the heads kept",
           "index": "the indices kept", "q": "the queries", "k": "the keys", "v": "the values", "heads": "the heads",
           "allowed": "the mask", "rows": "the query positions", "scale": "the scale", "shift": "the shift",
           "p": "the exponentials", "rescale": "the rescaling", "cos": "the cosines", "sin": "the sines",
           "half": "the half of the features", "length": "the length", "queries": "the queries' positions",
           "x": "the input", "w": "the weights", "tokens": "the tokens", "logits": "the logits", "last": "the last logits",
           "next_token": "the next token", "probs": "the probabilities", "grad": "the gradient", "total_": "the total",
           "n_rep": "the number of repeats", "stop": "the chunk's end", "d": "the head size",
           "surviving": "the surviving heads", "num_keys": "the number of keys", "num_queries": "the number of queries"}


def _place(name: str) -> str:
    return _PLACES.get(name, "a step of the computation")


# --- the catalogue ----------------------------------------------------------------------------------

_BUILT: dict = {}
EXCLUDED: set = set()  # ``what`` of edits left out (the mutant bench grading that very mutant)


def of(exercise_id: str) -> dict:
    """``{diagnosis: (implementation, ...)}`` of the exercise's mutants, built once per process; the
    diagnoses say what the learner's output is, as if an edit of the reference made it."""
    if exercise_id not in _BUILT:
        ways: dict = {}
        for what, words, implementation in edits(MODULE_OF[exercise_id], exercise_id):
            implementation.what = what
            ways.setdefault(f"your output is what the reference's would be if {words}", []).append(implementation)
        _BUILT[exercise_id] = ways
    if not EXCLUDED:
        return {d: tuple(ways) for d, ways in _BUILT[exercise_id].items()}
    kept = {d: tuple(w for w in ways if w.what not in EXCLUDED) for d, ways in _BUILT[exercise_id].items()}
    return {d: ways for d, ways in kept.items() if ways}
