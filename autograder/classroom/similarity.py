"""``--similarity``: groups of submissions whose exercise code is near-identical.

An integrity aid, not a verdict: it points an instructor at pairs worth reading. Each exercise's
definition is normalised so that renaming variables, reformatting, and editing comments or
docstrings change nothing: docstrings dropped, every identifier (names, arguments, the
function's own locals) replaced by a placeholder numbered in order of first use, then
printed back by ``ast.unparse`` (which drops comments and fixes the layout) and split into
tokens. Two learners' token sequences are compared with ``difflib``'s ratio (1.0 = identical).
Code equal to the stub is ignored, and so are definitions shorter than ``MIN_TOKENS`` tokens:
short exercises are naturally alike across honest learners.

For a class, :class:`Similarity` adds what makes it scale and read well:

* each submission's normalised code is cached by its content hash (``.similarity/``), and
  each comparison by the two token sequences' hashes, so a rerun after late submissions
  compares only the new code with the rest; identical sequences are grouped and never
  compared twice;
* code shared *exactly* by many learners (``COMMON_SHARE`` of the class, at least
  ``COMMON_MIN``) is a template or a published solution: it is listed apart, once, and
  links nobody;
* learners are linked when an exercise of theirs is at or above the threshold, and the
  report lists the *clusters* (connected groups), each with the exercises that link it,
  not every pair: a class copying one source is one line, not thousands.
"""
from __future__ import annotations

import ast
import csv
import difflib
import hashlib
import io
import itertools
import json
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ..spec import MODULE_OF, POINTS

THRESHOLD = 0.9
MIN_TOKENS = 40
COMMON_SHARE = 0.2  # of the class sharing one exact code: a template, not a copy
COMMON_MIN = 5
CACHE_VERSION = 1
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


# ------------------------------------------------------------------------------- a class

def _digest(tokens: list[str]) -> str:
    return hashlib.sha256("\0".join(tokens).encode()).hexdigest()[:24]


@dataclass
class Cluster:
    learners: list[str]
    exercises: dict[str, float]  # exercise -> the highest ratio inside the cluster
    links: int  # learner pairs at or above the threshold inside it


@dataclass
class Common:
    exercise: str
    learners: int  # how many share this exact (normalised) code


@dataclass
class SimilarityResult:
    clusters: list[Cluster]
    common: list[Common]
    threshold: float
    compared: int  # comparisons made in this run (the rest came from the cache)
    cached: int


class Similarity:
    """Normalised code and comparisons of a class, cached in ``folder`` between runs."""

    def __init__(self, folder, threshold: float = THRESHOLD, write=None, warn=print):
        from .files import read_json, write_json

        self.folder = Path(folder)
        self.threshold = threshold
        self._write = write or write_json
        self._warn = warn
        self._stubs = _stub_tokens()
        state = read_json(self.folder / "comparisons.json", warn) or {}
        if state.get("version") != CACHE_VERSION or state.get("threshold") != threshold:
            state = {}
        # exercise -> digests already compared with each other; "a|b|exercise" -> ratio (matches only)
        self.seen: dict[str, set] = {e: set(v) for e, v in state.get("seen", {}).items()}
        self.matches: dict[str, float] = state.get("matches", {})

    def tokens(self, content_hash: str, sources: dict[str, str]) -> dict[str, list[str]]:
        """``{exercise: tokens}`` of one submission, from the cache when its hash is known."""
        from .files import read_json

        f = self.folder / "code" / f"{content_hash}.json"
        cached = read_json(f, self._warn) if f.exists() else None
        if isinstance(cached, dict) and cached.get("version") == CACHE_VERSION:
            return cached["tokens"]
        found = {}
        for exercise, module in MODULE_OF.items():
            tokens = normalised_tokens(sources.get(module, ""), exercise)
            if tokens and tokens != self._stubs.get(exercise) and len(tokens) >= MIN_TOKENS:
                found[exercise] = tokens
        self._write(f, {"version": CACHE_VERSION, "tokens": found})
        return found

    def run(self, code: dict[str, dict[str, list[str]]]) -> SimilarityResult:
        """``code``: ``{learner: {exercise: tokens}}`` -> clusters and common code."""
        n = len(code)
        by_exercise: dict[str, dict[str, list[str]]] = {}  # exercise -> digest -> learners
        sequences: dict[str, list[str]] = {}
        for learner, exercises in code.items():
            for exercise, tokens in exercises.items():
                d = _digest(tokens)
                sequences[d] = tokens
                by_exercise.setdefault(exercise, {}).setdefault(d, []).append(learner)
        common, links = [], {}  # links: (a, b) -> {exercise: ratio}
        compared = cached = 0
        for exercise, groups in by_exercise.items():
            limit = max(COMMON_MIN, COMMON_SHARE * n)
            shared = {d for d, ls in groups.items() if len(ls) >= limit}
            common += [Common(exercise, len(groups[d])) for d in shared]
            digests = sorted(d for d in groups if d not in shared)
            seen = self.seen.setdefault(exercise, set())
            for d in digests:  # identical code: ratio 1, no comparison
                for a, b in itertools.combinations(sorted(groups[d]), 2):
                    links.setdefault((a, b), {})[exercise] = 1.0
            for da, db in itertools.combinations(digests, 2):
                key = f"{da}|{db}|{exercise}"
                if da in seen and db in seen:
                    cached += 1
                    ratio = self.matches.get(key)
                else:
                    compared += 1
                    ratio = _ratio(sequences[da], sequences[db], self.threshold)
                    if ratio is not None:
                        self.matches[key] = ratio
                if ratio is None:
                    continue
                for a in groups[da]:
                    for b in groups[db]:
                        pair = tuple(sorted((a, b)))
                        links.setdefault(pair, {})[exercise] = max(ratio, links.get(pair, {}).get(exercise, 0))
            seen.update(digests)
        self._write(self.folder / "comparisons.json", {
            "version": CACHE_VERSION, "threshold": self.threshold,
            "seen": {e: sorted(v) for e, v in self.seen.items()}, "matches": self.matches})
        return SimilarityResult(_clusters(links), sorted(common, key=lambda c: (-c.learners, c.exercise)),
                                self.threshold, compared, cached)


def _ratio(ta: list[str], tb: list[str], threshold: float) -> float | None:
    m = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    if m.real_quick_ratio() < threshold or m.quick_ratio() < threshold:  # cheap upper bounds first
        return None
    ratio = m.ratio()
    return ratio if ratio >= threshold else None


def _clusters(links: dict[tuple[str, str], dict[str, float]]) -> list[Cluster]:
    parent: dict[str, str] = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        parent[root(a)] = root(b)
    groups: dict[str, Cluster] = {}
    for (a, b), exercises in links.items():
        c = groups.setdefault(root(a), Cluster([], {}, 0))
        c.links += 1
        for learner in (a, b):
            if learner not in c.learners:
                c.learners.append(learner)
        for e, r in exercises.items():
            c.exercises[e] = max(r, c.exercises.get(e, 0.0))
    order = {e: i for i, e in enumerate(POINTS)}
    for c in groups.values():
        c.learners.sort()
        c.exercises = dict(sorted(c.exercises.items(), key=lambda kv: order.get(kv[0], 99)))
    return sorted(groups.values(), key=lambda c: (-len(c.learners), -len(c.exercises), c.learners))


def clusters_csv(result: SimilarityResult, rename=lambda x: x) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["cluster", "size", "learners", "exercises (highest ratio)", "linked_pairs"])
    for i, c in enumerate(result.clusters, 1):
        w.writerow([i, len(c.learners), " ".join(rename(x) for x in c.learners),
                    " ".join(f"{e}:{r:.2f}" for e, r in c.exercises.items()), c.links])
    return out.getvalue()


def clusters_markdown(result: SimilarityResult, rename=lambda x: x) -> str:
    lines = ["# Near-identical exercise code", "",
             f"Learners are grouped when one of their exercises is at or above a ratio of "
             f"{result.threshold:g} once names, comments and layout are normalised (stub code and "
             f"definitions under {MIN_TOKENS} tokens ignored). A pointer for reading, not a verdict.", ""]
    if result.common:
        lines += ["Code shared exactly by many learners (a template, a published solution, or the one "
                  "natural way to write it) links nobody:", ""]
        lines += [f"- `{c.exercise}`: {c.learners} learners" for c in result.common]
        lines += [""]
    if not result.clusters:
        lines += ["No cluster above the threshold."]
    for i, c in enumerate(result.clusters, 1):
        ex = ", ".join(f"`{e}` ({r:.2f})" for e, r in c.exercises.items())
        lines.append(f"{i}. {len(c.learners)} learners: {', '.join(rename(x) for x in c.learners)}; "
                     f"exercises: {ex}")
    return "\n".join(lines) + "\n"


def clusters_table(result: SimilarityResult, limit: int = 20):
    from rich.table import Table

    table = Table(title=f"Near-identical exercise code (ratio >= {result.threshold:g}): "
                        f"{len(result.clusters)} cluster(s)"
                        + (f", the {limit} largest shown (all in similarity.md)" if len(result.clusters) > limit else ""))
    for name in ("learners", "exercises (highest ratio)"):
        table.add_column(name, overflow="fold")
    for c in result.clusters[:limit]:
        table.add_row(", ".join(c.learners), ", ".join(f"{e} ({r:.2f})" for e, r in c.exercises.items()))
    return table
