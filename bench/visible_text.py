"""Benchmark: how much learner-written text a Gradescope learner sees at once.

Every exercise of a submission is made to read its hidden cases out: each function (and each
class's constructor) raises an exception of a class of its own, with the case's inputs
(their first 200 bytes) written into the class's name and its message, in letters a-p, one
per half byte. ``mha-grade SUB --gradescope`` grades it; the immediately visible outputs of
its ``results.json`` (the top-level output and the tests of visibility ``visible``) are then
searched for that encoding. Printed: the bytes of learner text visible at once, per
submission and the most for one exercise; the visible bytes in all; how often "expected"
appears there; whether the seed does. Target (exit status 1 when missed): at most
``LEARNER_CHARS`` (150) characters of learner text in any one visible output, no "expected",
no seed.

    python bench/visible_text.py [--seed N]

The grader measured is the one ``python -m autograder`` imports: put another checkout first on
``PYTHONPATH`` to measure it (e.g. the one before this benchmark existed).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEAK = re.compile(r"(?:LEAK|Leak)[a-p]+")
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
    return type("Leak" + code[:60], (Exception,), {})("LEAK" + code)
'''


def leaking_submission(directory: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from autograder.spec import COURSE

    modules: dict[str, list[str]] = {}
    for e in COURSE:
        if e.id[:1].isupper():  # a class: its constructor raises
            code = f"class {e.id}:\n    def __init__(self, *args, **kwargs):\n        raise _leak(args, kwargs)\n"
        else:
            code = f"def {e.id}(*args, **kwargs):\n    raise _leak(args, kwargs)\n"
        modules.setdefault(e.module, [HELPER]).append(code)
    for module, parts in modules.items():
        (directory / f"{module}.py").write_text("\n\n".join(parts))
    return directory


def measure(results: dict, seed: int) -> dict:
    default = results.get("visibility", "visible")
    visible = [results.get("output", "")] + [t.get("output", "") for t in results.get("tests", [])
                                              if t.get("visibility", default) == "visible"]
    per_test = [sum(len(m) for m in LEAK.findall(text)) for text in visible]
    return {"learner_bytes_visible": sum(per_test), "most_in_one_output": max(per_test),
            "visible_bytes": sum(len(t.encode()) for t in visible), "visible_tests": len(visible) - 1,
            "expected_visible": sum(t.count("expected") for t in visible),
            "seed_visible": str(seed) in "\n".join(visible)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=195529710)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        sub = Path(tmp) / "submission"
        sub.mkdir()
        leaking_submission(sub)
        out = Path(tmp) / "results.json"
        env = dict(os.environ, OMP_NUM_THREADS="1")
        proc = subprocess.run([sys.executable, "-m", "autograder", str(sub), "--gradescope", str(out),
                               "--seed", str(args.seed), "--quiet"], capture_output=True, text=True, env=env,
                              cwd=tmp, timeout=1200)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        results = json.loads(out.read_text())
    m = measure(results, args.seed)
    print(f"score {proc.stdout.strip()}; learner text visible at once: {m['learner_bytes_visible']} bytes "
          f"(at most {m['most_in_one_output']} in one output); {m['visible_bytes']} visible bytes in "
          f"{m['visible_tests']} visible tests; 'expected' {m['expected_visible']} times; "
          f"seed {'VISIBLE' if m['seed_visible'] else 'not visible'}")
    met = m["most_in_one_output"] <= LEARNER_CHARS and not m["expected_visible"] and not m["seed_visible"]
    print(f"target (at most {LEARNER_CHARS} per output, no expected value, no seed): {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
