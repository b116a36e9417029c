"""``--similarity``: pairs of submissions whose exercise code is near-identical.

An integrity aid, not a verdict: it points an instructor at pairs worth reading. Each exercise's
definition is normalised so that renaming variables, reformatting, and editing comments or
docstrings change nothing: docstrings dropped, every identifier (names, arguments, the
function's own locals) replaced by a placeholder numbered in order of first use, then
printed back by ``ast.unparse`` (which drops comments and fixes the layout) and split into
tokens. Two learners' token sequences are compared with ``difflib``'s ratio (1.0 = identical).
Code equal to the stub is ignored, and so are definitions shorter than ``MIN_TOKENS`` tokens:
short exercises are naturally alike across honest learners.
"""
from __future__ import annotations

import ast
import csv
import difflib
import io
import itertools
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ..spec import MODULE_OF, POINTS

THRESHOLD = 0.9
MIN_TOKENS = 40
_STUBS = Path(__file__).resolve().parent.parent / "mha_exercises"


@dataclass
class Pair:
    a: str
    b: str
    exercises: dict[str, float]  # exercise id -> similarity ratio, those above the threshold
    tokens: int  # tokens of the matching exercises (the larger of the two), to rank pairs

    @property
    def mean(self) -> float:
        return sum(self.exercises.values()) / len(self.exercises)


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
    except (SyntaxError, ValueError):
        return None
    nodes = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
             and n.name == name]
    if not nodes:
        return None
    text = ast.unparse(_Normalise().visit(nodes[-1]))
    return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER)]


def _stub_tokens() -> dict[str, list[str] | None]:
    stubs = {}
    for exercise, module in MODULE_OF.items():
        f = _STUBS / f"{module}.py"
        stubs[exercise] = normalised_tokens(f.read_text(), exercise) if f.exists() else None
    return stubs


def exercise_code(sources: dict[str, dict[str, str]]) -> dict[str, dict[str, list[str]]]:
    """``{learner: {module: source}}`` -> ``{exercise: {learner: tokens}}``, stubs and short code left out."""
    stubs = _stub_tokens()
    code: dict[str, dict[str, list[str]]] = {}
    for learner, modules in sources.items():
        for exercise, module in MODULE_OF.items():
            tokens = normalised_tokens(modules.get(module, ""), exercise)
            if tokens and tokens != stubs.get(exercise) and len(tokens) >= MIN_TOKENS:
                code.setdefault(exercise, {})[learner] = tokens
    return code


def compare(sources: dict[str, dict[str, str]], threshold: float = THRESHOLD) -> list[Pair]:
    """Pairs of learners with at least one exercise at or above ``threshold``, most alike first."""
    pairs: dict[tuple[str, str], Pair] = {}
    for exercise, by_learner in exercise_code(sources).items():
        for (a, ta), (b, tb) in itertools.combinations(sorted(by_learner.items()), 2):
            m = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
            # The cheap upper bounds first: most pairs are far apart.
            if m.real_quick_ratio() < threshold or m.quick_ratio() < threshold:
                continue
            ratio = m.ratio()
            if ratio >= threshold:
                pair = pairs.setdefault((a, b), Pair(a, b, {}, 0))
                pair.exercises[exercise] = ratio
                pair.tokens += max(len(ta), len(tb))
    order = {e: i for i, e in enumerate(POINTS)}
    for p in pairs.values():
        p.exercises = dict(sorted(p.exercises.items(), key=lambda kv: order.get(kv[0], 99)))
    return sorted(pairs.values(), key=lambda p: (-p.tokens, -p.mean, p.a, p.b))


def similar_pairs(submissions: dict[str, Path], threshold: float = THRESHOLD) -> list[Pair]:
    """:func:`compare` on submission paths (directories, zips, notebooks), read as the grader reads them."""
    from ..submission import SubmissionError, load

    sources = {}
    for learner, path in submissions.items():
        try:
            sources[learner] = load(path).sources
        except SubmissionError:
            continue  # unreadable: its report already says why
    return compare(sources, threshold)


def write_csv(pairs: list[Pair], path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["learner_a", "learner_b", "exercises", "mean_ratio", "tokens"])
        for p in pairs:
            ratios = " ".join(f"{e}:{r:.2f}" for e, r in p.exercises.items())
            w.writerow([p.a, p.b, ratios, f"{p.mean:.3f}", p.tokens])


def to_table(pairs: list[Pair], limit: int = 20):
    """The ``limit`` most alike pairs (all of them are in similarity.csv)."""
    from rich.table import Table

    more = f", the {limit} most alike shown (all in similarity.csv)" if len(pairs) > limit else ""
    table = Table(title=f"Near-identical exercise code (ratio >= {THRESHOLD:g} after normalising names "
                        f"and layout): {len(pairs)} pair(s){more}")
    for name in ("learners", "exercises (ratio)", "tokens"):
        table.add_column(name)
    for p in pairs[:limit]:
        ratios = ", ".join(f"{e} ({r:.2f})" for e, r in p.exercises.items())
        table.add_row(f"{p.a} ~ {p.b}", ratios, str(p.tokens))
    return table
