#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (the bundle is
# unpacked in /autograder/source). It installs a Python >= 3.11, the pinned grader
# dependencies in /autograder/venv, and the unprivileged user the learner's code runs as.
set -euo pipefail
SOURCE="$(cd "$(dirname "$0")" && pwd)"
ROOT="${AUTOGRADER_ROOT:-/autograder}"
LEARNER="${MHA_GRADE_USER:-mha-learner}"

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# A final release of Python >= 3.11 from the distribution's own archive. Ubuntu 24.04's python3
# is 3.12 (final): choose that base image. Ubuntu 22.04's python3 is 3.10, and its python3.11
# package is a release candidate (3.11.0rc1); no registry this bundle installs from (Ubuntu's
# archive, PyPI) offers a final 3.11 for 22.04, so there we stop and say so, unless the
# instructor accepts the release candidate knowingly (MHA_ALLOW_PRERELEASE=1).
apt-get install -y -q python3 python3-venv
final='import sys; v = sys.version_info; sys.exit(0 if v >= (3, 11) and v.releaselevel == "final" else 1)'
PYTHON=""
if python3 -c "$final"; then
  PYTHON="$(command -v python3)"
else
  apt-get install -y -q python3.11 python3.11-venv 2>/dev/null || true
  if command -v python3.11 >/dev/null && python3.11 -c "$final"; then
    PYTHON="$(command -v python3.11)"
  elif command -v python3.11 >/dev/null && [ "${MHA_ALLOW_PRERELEASE:-0}" = 1 ]; then
    PYTHON="$(command -v python3.11)"
    echo "setup.sh: using $("$PYTHON" --version), a release candidate, as MHA_ALLOW_PRERELEASE=1 asks" >&2
  fi
fi
if [ -z "$PYTHON" ]; then
  echo "setup.sh: the grader needs a final release of Python >= 3.11; this image has $(python3 --version 2>&1)" \
       "and python3.11 $(python3.11 --version 2>&1 || echo 'not installable'). Choose Gradescope's Ubuntu 24.04" \
       "base image (Python 3.12), or set MHA_ALLOW_PRERELEASE=1 at the top of setup.sh to accept 3.11.0rc1." >&2
  exit 1
fi

"$PYTHON" -m venv "$ROOT/venv"
"$ROOT/venv/bin/pip" install -q --upgrade pip
# torch first and alone, from the CPU wheel index: the default index would pull a CUDA build.
"$ROOT/venv/bin/pip" install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
"$ROOT/venv/bin/pip" install -q -r "$SOURCE/requirements-grader.txt"
"$ROOT/venv/bin/python" -c "import numpy, torch, rich; print('grader dependencies:', torch.__version__, numpy.__version__)"

# The learner's code runs as this user: it cannot read /autograder/source (the reference
# solutions, the checks, the hidden seed), which run_autograder keeps root-only.
id -u "$LEARNER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$LEARNER"
chmod -R go-rwx "$SOURCE"
