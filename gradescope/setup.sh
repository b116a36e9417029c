#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (the bundle is
# unpacked in /autograder/source). It installs a Python >= 3.11.2, the pinned grader
# dependencies in /autograder/venv, and the unprivileged user the learner's code runs as.
set -euo pipefail
SOURCE="$(cd "$(dirname "$0")" && pwd)"
ROOT="${AUTOGRADER_ROOT:-/autograder}"
LEARNER="${MHA_GRADE_USER:-mha-learner}"

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# The grader's venv, from a final release of Python >= 3.11.2: the image's own (Ubuntu 24.04:
# 3.12), or on Ubuntu 22.04, whose python3.11 is a release candidate, Debian 12's python3.11
# unpacked into /opt (python.sh says how, and stops with the reason when neither can be had).
apt-get install -y -q python3 python3-venv
bash "$SOURCE/python.sh" "$ROOT/venv"
"$ROOT/venv/bin/pip" install -q --upgrade pip
# torch first and alone, from the CPU wheel index: the default index would pull a CUDA build.
"$ROOT/venv/bin/pip" install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
"$ROOT/venv/bin/pip" install -q -r "$SOURCE/requirements-grader.txt"
"$ROOT/venv/bin/python" -c "import numpy, torch, rich; print('grader dependencies:', torch.__version__, numpy.__version__)"

# The learner's code runs as this user: it cannot read /autograder/source (the reference
# solutions, the checks, the hidden seed), which run_autograder keeps root-only.
id -u "$LEARNER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$LEARNER"
chmod -R go-rwx "$SOURCE"
