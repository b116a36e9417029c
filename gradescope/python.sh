#!/usr/bin/env bash
# python.sh VENV: create the grader's virtual environment VENV (with pip) from a final release
# of Python >= 3.11.2, the oldest the course supports. setup.sh runs it as root.
#
# Tried in order:
#  1. the image's python3 (Ubuntu 24.04: 3.12), then its python3.11 package;
#  2. Debian 12's python3.11, the final 3.11.2 with Debian's security fixes, for images that
#     have none (Ubuntu 22.04's python3.11 is the release candidate 3.11.0rc1). Its binaries
#     need no glibc newer than 2.35, Ubuntu 22.04's. Its packages are downloaded by apt from
#     Debian's archive, checked against Debian's signed indexes (the two archive keys ship
#     beside this script: debian-archive-keys.asc, fingerprints below), and unpacked into
#     /opt/mha-python3.11, apart from the image's own packages, which stay as they are.
#  3. with MHA_ALLOW_PRERELEASE=1, the release candidate; otherwise stop and say why.
#
#   MHA_PYTHON_FROM=debian   skip step 1 (to try step 2 on a machine that has a final Python)
#   MHA_DEBIAN_PYTHON=DIR    where step 2 unpacks (default /opt/mha-python3.11)
#   MHA_DEBIAN_MIRROR=URL    Debian's archive (default http://deb.debian.org)
set -euo pipefail
VENV="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
DEBIAN_PYTHON="${MHA_DEBIAN_PYTHON:-/opt/mha-python3.11}"
MIRROR="${MHA_DEBIAN_MIRROR:-http://deb.debian.org}"
# debian-archive-keys.asc: Debian's Archive Automatic Signing Key (12/bookworm), fingerprint
# B8B8 0B5B 623E AB6A D877 5C45 B7C5 D7D6 3509 47F8, and its Security Archive's,
# 05AB 9034 0C0C 5E79 7F44 A8C8 254C F3B5 AEC0 A8F0 (from Debian's debian-archive-keyring).
final='import sys; v = sys.version_info; sys.exit(0 if v >= (3, 11, 2) and v.releaselevel == "final" else 1)'
# Debian 12 keeps CPython 3.11.2 for its life; its security fixes change only the package's
# revision (3.11.2-6+deb12uN), whose older files leave the archive: the version is pinned, the
# revision is the archive's current one, and apt checks each file's SHA256 against the signed index.
debian='import sys; sys.exit(0 if tuple(sys.version_info) == (3, 11, 2, "final", 0) else 1)'

debian_python() {  # step 2; true when $DEBIAN_PYTHON/usr/bin/python3.11 is a final >= 3.11.2
  local work arch deb
  work="$(mktemp -d)"
  arch="$(dpkg --print-architecture)"
  cp "$HERE/debian-archive-keys.asc" "$work/keys.asc"
  mkdir -p "$work/lists/partial" "$work/archives/partial"
  printf 'deb [arch=%s signed-by=%s] %s/%s main\n' \
    "$arch" "$work/keys.asc" "$MIRROR" "debian bookworm" \
    "$arch" "$work/keys.asc" "$MIRROR" "debian-security bookworm-security" > "$work/sources.list"
  # Only these lists and this folder: the image's own apt sources and packages are not touched.
  local apt=(apt-get -q -o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/none"
             -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::archives=$work/archives"
             -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root)
  "${apt[@]}" update >&2 || return 1
  ls "$work"/lists/*_Packages* >/dev/null 2>&1 || return 1  # apt-get update succeeds even when nothing came
  (cd "$work" && "${apt[@]}" download python3.11-minimal libpython3.11-minimal libpython3.11-stdlib python3.11 \
     python3-pip-whl >&2) || return 1
  rm -rf "$DEBIAN_PYTHON"
  mkdir -p "$DEBIAN_PYTHON"
  for deb in "$work"/*.deb; do
    echo "python.sh: unpacking $(basename "$deb") into $DEBIAN_PYTHON" >&2
    dpkg-deb -x "$deb" "$DEBIAN_PYTHON" || return 1
  done
  rm -rf "$work"
  # The libraries its modules link to (OpenSSL 3, libffi 8, ...) are the image's: say so if one is missing.
  "$DEBIAN_PYTHON/usr/bin/python3.11" -c "$debian" \
    && "$DEBIAN_PYTHON/usr/bin/python3.11" -c "import ssl, ctypes, hashlib, zlib, bz2, lzma, sqlite3, pyexpat"
}

PYTHON=""
if [ "${MHA_PYTHON_FROM:-}" != debian ]; then
  if command -v python3 >/dev/null && python3 -c "$final"; then
    PYTHON="$(command -v python3)"
  else
    apt-get install -y -q python3.11 python3.11-venv >&2 2>/dev/null || true
    if command -v python3.11 >/dev/null && python3.11 -c "$final"; then
      PYTHON="$(command -v python3.11)"
    fi
  fi
fi
if [ -z "$PYTHON" ] && debian_python; then
  PYTHON="$DEBIAN_PYTHON/usr/bin/python3.11"
  # Debian's ensurepip takes pip's wheel from /usr/share/python-wheels, not from the unpacked
  # copy: the venv gets its pip from that wheel directly.
  "$PYTHON" -m venv --without-pip "$VENV"
  wheel="$(ls "$DEBIAN_PYTHON"/usr/share/python-wheels/pip-*.whl | head -n 1)"
  "$VENV/bin/python" "$wheel/pip" install -q --no-index "$wheel" >&2
  echo "python.sh: $("$VENV/bin/python" --version) from Debian 12's archive, in $DEBIAN_PYTHON" >&2
  exit 0
fi
if [ -z "$PYTHON" ] && command -v python3.11 >/dev/null && [ "${MHA_ALLOW_PRERELEASE:-0}" = 1 ]; then
  PYTHON="$(command -v python3.11)"
  echo "python.sh: using $("$PYTHON" --version), a release candidate, as MHA_ALLOW_PRERELEASE=1 asks" >&2
fi
if [ -z "$PYTHON" ]; then
  echo "python.sh: the grader needs a final release of Python >= 3.11.2; this image has $(python3 --version 2>&1)," \
       "python3.11 $(python3.11 --version 2>&1 || echo 'not installable'), and Debian 12's python3.11 could not be" \
       "fetched from $MIRROR (see above). Choose Gradescope's Ubuntu 24.04 base image (Python 3.12)." >&2
  exit 1
fi
"$PYTHON" -m venv "$VENV"
