#!/usr/bin/env bash
# Create .venv (if missing) and install icml25 with the given extras, once per pyproject version.
# Usage: scripts/setup-env.sh [EXTRAS]      e.g. scripts/setup-env.sh torch,dev
# Idempotent: a stamp file keyed on the extras, the torch choice and pyproject.toml skips work
# already done.
#
# With the torch extra, torch is installed first, and the script says which build it chose:
#   local  a torch wheel that this machine's own pip configuration offers (find-links, or an
#          index on disk: pip config / PIP_FIND_LINKS / PIP_INDEX_URL / PIP_EXTRA_INDEX_URL),
#          or the machine's own package mirror (an index-url set in pip's configuration);
#   cuda   an NVIDIA GPU answers `nvidia-smi`: the default (CUDA) build from the package index
#          (ICML25_TORCH=cuda ignores local wheel configuration, so a local CPU wheel never wins);
#   cpu    no NVIDIA GPU: the CPU-only build from PyTorch's CPU wheel index (a few hundred MB
#          instead of several GB of CUDA libraries); on macOS the default build (CPU/MPS).
# ICML25_TORCH=local|cpu|cuda|skip overrides the choice (skip: keep whatever torch is there).
# ICML25_SETUP_DRY_RUN=1 prints the choice and the pip commands without running them.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
venv="${ICML25_VENV:-.venv}"
python="${PYTHON:-python3}"
torch_mode="${ICML25_TORCH:-auto}"
dry="${ICML25_SETUP_DRY_RUN:-}"
CPU_INDEX="https://download.pytorch.org/whl/cpu"

case "$torch_mode" in
  auto|local|cpu|cuda|skip) ;;
  *) echo "error: ICML25_TORCH must be local, cpu, cuda or skip (got '$torch_mode')" >&2
     exit 2 ;;
esac

"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "error: icml25 needs Python >= 3.11 (found $("$python" --version))" >&2; exit 1; }
if [ -z "$dry" ]; then
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  py="$venv/bin/python"
else
  py="$python"
fi

# What this machine's pip configuration offers for torch: "wheel <version> <where>",
# "mirror <index url>" or "none". Reads `pip config list`, which includes PIP_* variables.
local_torch() {  # $1: gpu | nogpu
  "$py" - "$1" <<'EOF'
import re, subprocess, sys
from pathlib import Path
from urllib.parse import unquote, urlparse

out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                     text=True).stdout
conf = {}
for line in out.splitlines():
    key, _, value = line.partition("=")
    conf.setdefault(key.rsplit(".", 1)[-1], []).extend(value.strip().strip("'\"").split())

def path_of(loc):
    return Path(unquote(urlparse(loc).path)) if loc.startswith("file:") else Path(loc)

def version(name):
    m = re.match(r"torch-([^-]+)-", name)
    return m.group(1) if m else None

found = []
for loc in conf.get("find-links", []):
    if "://" in loc and not loc.startswith("file:"):
        continue
    found += [(version(p.name), loc) for p in path_of(loc).glob("torch-*.whl")]
for loc in conf.get("index-url", []) + conf.get("extra-index-url", []):
    if loc.startswith("file:"):
        page = path_of(loc) / "torch" / "index.html"
        if page.exists():
            found += [(version(n), loc) for n in re.findall(r"torch-[^\"'<>/#]+?\.whl",
                                                             page.read_text())]
found = [(v, loc) for v, loc in found if v]
if found:
    # A CPU build ("+cpu") where there is no GPU, any other (CUDA) build where there is one;
    # then the newest. Either kind is taken when it is the only one the machine has.
    gpu = len(sys.argv) > 1 and sys.argv[1] == "gpu"

    def key(item):
        v = item[0]
        fits = v.endswith("+cpu") != gpu
        return (fits, [int(x) if x.isdigit() else 0 for x in re.split(r"[.+]", v)])

    v, loc = max(found, key=key)
    # Indexes on disk: torch and its dependencies then come from this machine alone.
    disk = [u for u in conf.get("index-url", []) + conf.get("extra-index-url", [])
            if u.startswith("file:") and path_of(u).is_dir()]
    print("wheel", v, loc, "cpu" if v.endswith("+cpu") else "cuda", *disk)
elif conf.get("index-url"):
    print("mirror", conf["index-url"][0])
else:
    print("none")
EOF
}

has_cuda() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }

choose_torch() {  # sets torch_choice, torch_why, torch_pip (the pip arguments)
  local offer gpu=nogpu
  if has_cuda; then gpu=gpu; fi
  offer="$(local_torch "$gpu")"
  torch_pip=("torch")
  case "$torch_mode" in
    skip) torch_choice=skip; torch_why="ICML25_TORCH=skip" ;;
    local|auto)
      if [ "${offer%% *}" = wheel ]; then
        read -r _ v where kind disk <<<"$offer"
        torch_choice=local
        torch_why="torch $v (a $kind build) from this machine's pip configuration ($where)"
        torch_pip=("torch==$v")
        if [ -n "$disk" ]; then  # only the indexes on disk: no network needed for torch
          read -r -a disk <<<"$disk"
          torch_pip+=("-q" "--index-url" "${disk[0]}")  # -qq: not each index lacking a package
          for extra in "${disk[@]:1}"; do torch_pip+=("--extra-index-url" "$extra"); done
        fi
      elif [ "${offer%% *}" = mirror ]; then
        torch_choice=local; torch_why="this machine's package index (${offer#mirror })"
      elif [ "$torch_mode" = local ]; then
        echo "error: ICML25_TORCH=local, but pip's configuration offers no torch wheel and no index of its own" >&2
        exit 2
      elif [ "$gpu" = gpu ]; then
        torch_choice=cuda; torch_why="nvidia-smi sees a GPU"
      elif [ "$(uname -s)" = Darwin ]; then
        torch_choice=cpu; torch_why="macOS: the default build runs on the CPU (and MPS)"
      else
        torch_choice=cpu; torch_why="no NVIDIA GPU (nvidia-smi absent or failing)"
        torch_pip=("torch" "--index-url" "$CPU_INDEX")
      fi ;;
    cuda) torch_choice=cuda; torch_why="ICML25_TORCH=cuda" ;;
    cpu)
      torch_choice=cpu; torch_why="ICML25_TORCH=cpu"
      [ "$(uname -s)" = Darwin ] || torch_pip=("torch" "--index-url" "$CPU_INDEX") ;;
  esac
}

wants_torch=""
case ",$extras," in *,torch,*|*,all,*) wants_torch=1 ;; esac
if [ -n "$wants_torch" ]; then choose_torch; else torch_choice=none; fi

stamp="$venv/.icml25-${extras//,/-}-torch-$torch_choice-$(sha1sum pyproject.toml | cut -c1-12)"
[ -z "$dry" ] && [ -f "$stamp" ] && exit 0

run() { if [ -n "$dry" ]; then echo "would run: $*"; else "$@"; fi; }
pip=("$py" -m pip install --quiet --disable-pip-version-check)
if [ -n "$wants_torch" ]; then
  echo "torch: $torch_choice build — $torch_why"
  if [ "$torch_choice" = cuda ]; then  # the package index's default build, not a local CPU wheel
    run env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
      "${pip[@]}" "${torch_pip[@]}"
  elif [ "$torch_choice" != skip ]; then
    run "${pip[@]}" "${torch_pip[@]}"
  fi
fi
if [ -n "$extras" ]; then run "${pip[@]}" -e ".[$extras]"; else run "${pip[@]}" -e .; fi
if [ -n "$wants_torch" ] && [ -z "$dry" ]; then
  "$py" -c "import torch; print(f'torch {torch.__version__} installed (CUDA: {torch.version.cuda or None})')" \
    || echo "warning: torch does not import" >&2
fi
[ -n "$dry" ] || touch "$stamp"
