#!/usr/bin/env bash
# Create .venv (if missing) and install icml25 with the given extras, once per pyproject version.
# Usage: scripts/setup-env.sh [EXTRAS]      e.g. scripts/setup-env.sh torch,dev
# Idempotent: a stamp file keyed on the extras and pyproject.toml skips work already done.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
venv="${ICML25_VENV:-.venv}"
python="${PYTHON:-python3}"

"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "icml25 needs Python >= 3.11 (found $("$python" --version))" >&2; exit 1; }
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"

stamp="$venv/.icml25-${extras//,/-}-$(sha1sum pyproject.toml | cut -c1-12)"
[ -f "$stamp" ] && exit 0

pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
case ",$extras," in
  # A plain `torch` requirement pulls a multi-GB CUDA build; 2.13.0 is the CPU build on local disk.
  *,torch,*|*,all,*) "${pip[@]}" "torch==2.13.0" ;;
esac
if [ -n "$extras" ]; then "${pip[@]}" -e ".[$extras]"; else "${pip[@]}" -e .; fi
touch "$stamp"
