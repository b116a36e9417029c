#!/usr/bin/env bash
# gradescope/try_debian_python.sh [DIR]: what setup.sh does on an Ubuntu 22.04 image, tried on
# this machine. python.sh fetches Debian 12's python3.11 from Debian's archive into
# DIR/python (default: a new folder under /opt), the grader's venv is built from it, and the
# bundle grades the reference solutions in a simulated /autograder (DIR/autograder). Prints the
# Python, the newest glibc its binaries need (Ubuntu 22.04 has 2.35) and the score: 100.
# Run as root, as Gradescope does (the learner's code then runs as `nobody`).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${1:-$(mktemp -d /opt/mha-python-try.XXXX)}"
ROOT="$DIR/autograder"
rm -rf "$ROOT" "$DIR/python"
mkdir -p "$ROOT/source" "$ROOT/submission"
chmod 755 "$DIR"

python3 "$REPO/scripts/build_gradescope.py" --out "$DIR/bundle.zip" --seed 12345 >/dev/null
python3 -m zipfile -e "$DIR/bundle.zip" "$ROOT/source"
chmod 755 "$ROOT/source/python.sh" "$ROOT/source/run_autograder"
cp "$ROOT/source/run_autograder" "$ROOT/run_autograder"

MHA_PYTHON_FROM=debian MHA_DEBIAN_PYTHON="$DIR/python" bash "$ROOT/source/python.sh" "$ROOT/venv"
# As setup.sh, but torch from the index pip is set up with here (setup.sh: PyTorch's CPU index).
"$ROOT/venv/bin/pip" install -q --upgrade pip
"$ROOT/venv/bin/pip" install -q torch==2.13.0 ${MHA_TORCH_INDEX:+--index-url "$MHA_TORCH_INDEX"}
"$ROOT/venv/bin/pip" install -q -r "$ROOT/source/requirements-grader.txt"

cp "$REPO"/solutions/*.py "$ROOT/submission/"
env -u PYTHONPATH AUTOGRADER_ROOT="$ROOT" MHA_GRADE_USER=nobody bash "$ROOT/run_autograder" > "$DIR/run.log" 2>&1

echo "python: $("$ROOT/venv/bin/python" -c 'import sys; print(sys.version.split()[0], sys.version_info.releaselevel, "from", sys.base_prefix)')"
if command -v objdump >/dev/null; then
  glibc="$(find "$DIR/python" -type f \( -name '*.so' -o -name python3.11 \) -exec objdump -T {} + 2>/dev/null \
           | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1 || true)"
  echo "newest glibc symbol its binaries need: $glibc"
fi
"$ROOT/venv/bin/python" - "$ROOT/results/results.json" <<'PYTHON'
import json, sys
r = json.load(open(sys.argv[1]))
total = sum(t.get("max_score", 0) for t in r["tests"])
print(f"score of the reference solutions: {r['score']:g} / {total:g}")
sys.exit(0 if r["score"] == total == 100 else 1)
PYTHON
