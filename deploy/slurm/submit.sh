#!/bin/bash
# A term graded on Slurm from its folder, in one step (book/guides/term.md):
#
#   cd /the/term/folder        # term.toml, the roster, the exports, the controls
#   /abs/path/to/deploy/slurm/submit.sh [sbatch options: --partition=..., --account=...]
#
# It makes the output folder and the class's secret seed (once, mode 0600: kept and reused),
# submits the 4 shards (grade.sbatch), then the merge (merge.sbatch) to run once they have all
# succeeded, cancelled if one fails, and says the jobs' ids. Every path the jobs get is
# absolute: MHA_VENV (default: this project's .venv), TERM_FILE (./term.toml), OUT (./graded),
# SEED_FILE (./.seed).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MHA_VENV="$(realpath -m "${MHA_VENV:-$here/../../.venv}")"
export TERM_FILE="$(realpath "${TERM_FILE:-term.toml}")"
export OUT="$(realpath -m "${OUT:-graded}")"
export SEED_FILE="$(realpath -m "${SEED_FILE:-.seed}")"
if [ ! -x "$MHA_VENV/bin/mha-grade" ]; then
    echo "submit.sh: no $MHA_VENV/bin/mha-grade: set MHA_VENV to the project's venv (make install)" >&2
    exit 2
fi
mkdir -p "$OUT"
if [ ! -s "$SEED_FILE" ]; then
    (umask 077 && "$MHA_VENV/bin/python" -c 'import secrets; print(secrets.randbits(63))' > "$SEED_FILE")
    echo "submit.sh: a new seed for this class in $SEED_FILE (mode 0600): keep it, every rerun uses it"
fi
shards=$(sbatch --parsable --export=ALL "$@" "$here/grade.sbatch")
merge=$(sbatch --parsable --export=ALL --kill-on-invalid-dep=yes --dependency="afterok:${shards%%;*}" "$@" \
    "$here/merge.sbatch")
echo "submit.sh: shards job $shards, merge job $merge (after the shards); the gradebook: $OUT/term.csv"
