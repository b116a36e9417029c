"""Benchmark: how much learner-written text a Gradescope learner sees at once.

Every exercise of a submission is made to read its hidden cases out: each function (and each
class's constructor) raises an exception of a class of its own, with the case's inputs
(their first 200 bytes) written into the class's name and its message, in letters a-p, one
per half byte. ``mha-grade SUB --gradescope`` grades it; the immediately visible outputs of
its ``results.json`` (the top-level output and the tests of visibility ``visible``) are then
searched for that encoding. Printed: the bytes of learner text visible at once (UTF-8 bytes,
not characters), per submission and the most for one exercise; the DECODED bytes of the hidden
cases' inputs that text carries (what a learner recovers from it); the visible bytes in all; how
often "expected" appears there; whether the seed does. Target (exit status 1 when missed): at
most ``LEARNER_CHARS`` (150) bytes of learner text in any one visible output, no "expected",
no seed.

A third learner, *cjk*, writes the same inputs in CJK characters, 14 bits each (U+4E00 on):
150 characters of it once showed 5,145 decoded bytes at once where a count of the a-p encoding
saw 0; every learner is now counted in bytes of UTF-8 and in decoded bytes alike.

Two learners are measured: the *leaking* one above, and a *forging* one, whose exceptions
also walk up the child's frames to the code that reports them and relabel themselves as the
grader's own kinds ("timed out", "died", "ran out of memory", "not attempted", "does not
import"), each carrying the case's input, and write "did not import" records for every other
module, carrying it too: whatever the child sends, the target is the same.

    python bench/visible_text.py [--seed N] [--learner leaking|forging|cjk|all] [--batch]

``--batch`` grades the three learners and an honest one as a class (``mha-grade batch``) and
counts the decoded bytes of hidden inputs in each learner's ``feedback/<learner>.md`` and
``.html`` (target: under 300 for the two together) and in every class file.

The grader measured is the one ``python -m autograder`` imports: put another checkout first on
``PYTHONPATH`` to measure it (e.g. the one before this benchmark existed).
"""
from __future__ import annotations

import argparse
import html
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEAK = re.compile(r"(?:LEAK|Leak)([a-p]+|[\u4e00-\u8dff]+)")
CJK_BITS = 14
LEARNER_CHARS = 150  # the target: classroom/write/gradescope.py's cap (not imported: an older grader may lack it)

HELPER = '''
def _leak(args, kwargs):
    import numpy
    data = b""
    for value in list(args) + list(kwargs.values()):
        try:
            value = value.detach().numpy() if hasattr(value, "detach") else value
            data += numpy.asarray(value, dtype=numpy.float32).tobytes()
        except Exception:
            data += repr(value).encode()
    code = "".join(chr(97 + (b >> 4)) + chr(97 + (b & 15)) for b in data[:200])
    CJK
    FORGE
    return type("Leak" + code[:60], (Exception,), {})("LEAK" + code)
'''
# The forging learner's lines, in _leak before it returns: relabel this exception as one of
# the grader's kinds, and forge the record of failed imports, both carrying the case's input.
FORGE = '''import sys
    _count[0] += 1
    kind = ["timeout", "crash", "memory", "missing", "not_implemented", "import"][_count[0] % 6]
    frame = sys._getframe()
    while frame is not None and not ("_classify" in frame.f_globals and "submission" in frame.f_locals):
        frame = frame.f_back
    if frame is not None:
        frame.f_globals["_classify"] = lambda err: (kind, "LEAK" + code)
        for module in ("attention", "masking", "heads", "layer", "analysis", "pruning", "efficient",
                       "language_model", "positions"):
            frame.f_locals["submission"].failed[module] = {"type": "Leak" + code[:90], "line": 1,
                                                          "code": "LEAK" + code[:110], "text": "LEAK" + code[:290]}'''


# The cjk learner's line: the same bytes, 14 bits a character from U+4E00 (Python identifiers
# take CJK letters, so the exception class's name carries them too).
CJK = '''bits = int.from_bytes(data[:400], "big") if data else 0
    count = (len(data[:400]) * 8 + 13) // 14
    code = "".join(chr(0x4E00 + ((bits >> (14 * i)) & 0x3FFF)) for i in range(count))'''


def decoded(run: str) -> int:
    """The bytes of the hidden inputs a run of the encoding carries: 2 letters a-p a byte, or 14
    bits a CJK character."""
    return len(run) // 2 if run[:1] <= "p" else len(run) * CJK_BITS // 8


def leaking_submission(directory: Path, forging: bool = False, cjk: bool = False) -> Path:
    sys.path.insert(0, str(ROOT))
    from autograder.spec import COURSE

    helper = HELPER.replace("CJK", CJK if cjk else "", 1).replace("FORGE", FORGE if forging else "", 1)
    if forging:
        helper = "_count = [0]\n" + helper
    modules: dict[str, list[str]] = {}
    for e in COURSE:
        if e.id[:1].isupper():  # a class: its constructor raises
            code = f"class {e.id}:\n    def __init__(self, *args, **kwargs):\n        raise _leak(args, kwargs)\n"
        else:
            code = f"def {e.id}(*args, **kwargs):\n    raise _leak(args, kwargs)\n"
        modules.setdefault(e.module, [helper]).append(code)
    for module, parts in modules.items():
        (directory / f"{module}.py").write_text("\n\n".join(parts))
    return directory


def measure(results: dict, seed: int) -> dict:
    default = results.get("visibility", "visible")
    visible = [results.get("output", "")] + [t.get("output", "") for t in results.get("tests", [])
                                              if t.get("visibility", default) == "visible"]
    per_test = [sum(len(m.encode()) for m in LEAK.findall(text)) for text in visible]
    return {"learner_bytes_visible": sum(per_test), "most_in_one_output": max(per_test),
            "decoded_bytes": sum(decoded(m) for text in visible for m in LEAK.findall(text)),
            "visible_bytes": sum(len(t.encode()) for t in visible), "visible_tests": len(visible) - 1,
            "expected_visible": sum(t.count("expected") for t in visible),
            "seed_visible": str(seed) in "\n".join(visible)}


def grade(learner: str, seed: int) -> tuple[dict, str] | None:
    """``mha-grade --gradescope`` on one learner's submission: its results and its score line."""
    with tempfile.TemporaryDirectory() as tmp:
        sub = Path(tmp) / "submission"
        sub.mkdir()
        leaking_submission(sub, forging=learner == "forging", cjk=learner == "cjk")
        out = Path(tmp) / "results.json"
        env = dict(os.environ, OMP_NUM_THREADS="1")
        proc = subprocess.run([sys.executable, "-m", "autograder", str(sub), "--gradescope", str(out),
                               "--seed", str(seed), "--quiet"], capture_output=True, text=True, env=env,
                              cwd=tmp, timeout=1200)
        if proc.returncode not in (0, 1) or not out.exists():
            print(proc.stderr, file=sys.stderr)
            return None
        return json.loads(out.read_text()), proc.stdout.strip()


FEEDBACK_TARGET = 300  # decoded bytes of hidden inputs in one learner's feedback files (issue 43)


def _as_read(text: str, suffix: str) -> str:
    """A file's text as its reader sees it: HTML entities and Markdown's backslashes undone."""
    if suffix in (".md", ".html"):
        text = re.sub(r"\\(.)", r"\1", html.unescape(text))
    elif suffix == ".json":  # its strings as they decode (a CJK letter is written \\uXXXX there)
        try:
            text = json.dumps(json.loads(text), ensure_ascii=False)
        except ValueError:
            pass
    return text


def batch(seed: int) -> bool:
    """``mha-grade batch`` on a class of the three learners and an honest one: the decoded bytes
    of hidden inputs in each learner's feedback files, and in every class file."""
    with tempfile.TemporaryDirectory() as tmp:
        klass, out = Path(tmp) / "class", Path(tmp) / "out"
        for learner in ("leaking", "forging", "cjk"):
            (klass / learner).mkdir(parents=True)
            leaking_submission(klass / learner, forging=learner == "forging", cjk=learner == "cjk")
        (klass / "honest").mkdir()
        for f in (ROOT / "solutions").glob("*.py"):
            if f.name != "__init__.py":
                (klass / "honest" / f.name).write_text(f.read_text())
        env = dict(os.environ, OMP_NUM_THREADS="1")
        proc = subprocess.run([sys.executable, "-m", "autograder", "batch", str(klass), "--out", str(out), "--seed",
                               str(seed), "--jobs", "2", "--quiet"], capture_output=True, text=True, env=env,
                              cwd=tmp, timeout=3000)
        if proc.returncode not in (0, 3):
            print(proc.stderr, file=sys.stderr)
            print("| batch | the grader failed | | MISSED |")
            return False
        print("\n| file | decoded bytes of hidden inputs | UTF-8 bytes of the encoding | target |")
        print("|---|---|---|---|")
        met = True
        for path in sorted(p for p in out.rglob("*") if p.is_file() and p.suffix in (".md", ".html", ".csv", ".json")):
            text = _as_read(path.read_text(errors="replace"), path.suffix)
            runs = LEAK.findall(text)
            if not runs and "feedback" not in path.parts:
                continue
            found = sum(decoded(m) for m in runs)
            ok = "feedback" not in path.parts or found < FEEDBACK_TARGET / 2  # .md and .html: the learner's 300
            met &= ok
            print(f"| {path.relative_to(out)} | {found} | {sum(len(m.encode()) for m in runs)} | "
                  f"{'met' if ok else 'MISSED'} |")
        return met


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=195529710)
    p.add_argument("--learner", choices=("leaking", "forging", "cjk", "all"), default="all")
    p.add_argument("--batch", action="store_true", help="also grade the three in a class (mha-grade batch) and "
                   "measure every learner's feedback files and the class files")
    args = p.parse_args(argv)
    met = True
    print(f"| learner | learner text visible at once (UTF-8 bytes) | most in one output | decoded bytes of "
          f"hidden inputs | visible bytes | visible tests | 'expected' | seed | target (<= {LEARNER_CHARS} per output) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for learner in (("leaking", "forging", "cjk") if args.learner == "all" else (args.learner,)):
        graded = grade(learner, args.seed)
        if graded is None:
            print(f"| {learner} | the grader failed | | | | | | | MISSED |")
            met = False
            continue
        m = measure(graded[0], args.seed)
        ok = m["most_in_one_output"] <= LEARNER_CHARS and not m["expected_visible"] and not m["seed_visible"]
        met &= ok
        print(f"| {learner} | {m['learner_bytes_visible']} | {m['most_in_one_output']} | {m['decoded_bytes']} | "
              f"{m['visible_bytes']} | "
              f"{m['visible_tests']} | {m['expected_visible']} | {'VISIBLE' if m['seed_visible'] else 'not visible'} "
              f"| {'met' if ok else 'MISSED'} |")
    print(f"target (at most {LEARNER_CHARS} bytes per output, no expected value, no seed): {'met' if met else 'MISSED'}")
    if args.batch:
        fed = batch(args.seed)
        print(f"target (under {FEEDBACK_TARGET} decoded bytes of hidden inputs in a learner's feedback files): "
              f"{'met' if fed else 'MISSED'}")
        met &= fed
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
