#!/usr/bin/env bash
# Install the workbench on a fresh Debian/Ubuntu machine: system libraries Qt needs, a virtual
# environment in .venv, and the package (with the test tools when given --test).
# Safe to run again: every step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
# --test adds the test tools; --cuda (or a GPU that `nvidia-smi -L` lists) adds CuPy with the CUDA
# toolkit pieces from pip, so a machine with only a driver can tune on its GPU.
# WORKBENCH_INSTALL_PRINT=1 prints the extras chosen and installs nothing.
want=()
for arg in "$@"; do
  case "$arg" in
    --test) want+=(test) ;;
    --cuda) want+=(cuda12) ;;
    *) echo "install.sh: unknown option $arg (use --test, --cuda)" >&2; exit 2 ;;
  esac
done
if [[ ! " ${want[*]} " == *" cuda12 "* ]] && command -v nvidia-smi >/dev/null 2>&1 \
    && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "nvidia-smi lists a GPU: installing the cuda12 extra (CuPy + CUDA toolkit wheels, ~1.8 GB)"
  want+=(cuda12)
fi
extras=""
[ ${#want[@]} -gt 0 ] && extras="[$(IFS=,; echo "${want[*]}")]"
if [ -n "${WORKBENCH_INSTALL_PRINT:-}" ]; then echo "extras: ${extras:-none}"; exit 0; fi

if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  # python3-venv for the virtual environment; the rest are the shared libraries PySide6 loads
  # (OpenGL/EGL, xkbcommon, fontconfig, D-Bus) plus the xcb pieces a real desktop session needs.
  pkgs="python3-venv libgl1 libegl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libglib2.0-0
        libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-randr0 libxcb-render-util0 libxcb-xinerama0"
  echo "install: checking the system libraries Qt needs..."
  missing=""
  for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    # Another apt/dpkg (unattended upgrades right after boot, a software centre) holds the lock:
    # wait for it, bounded, instead of failing at once. apt itself also waits (DPkg::Lock::Timeout).
    lock_wait="${APT_LOCK_WAIT:-300}"
    locks="/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock"
    if command -v fuser >/dev/null 2>&1; then
      waited=0
      while $SUDO fuser $locks >/dev/null 2>&1; do
        if [ "$waited" -eq 0 ]; then
          echo "install: another package manager holds the dpkg lock; waiting for it (up to ${lock_wait} s, APT_LOCK_WAIT to change)..."
        fi
        if [ "$waited" -ge "$lock_wait" ]; then
          echo "install: the dpkg lock is still held after ${lock_wait} s; finish or stop the other apt/dpkg and run this again" >&2
          exit 1
        fi
        sleep 5
        waited=$((waited + 5))
      done
    fi
    echo "install: installing system packages with apt-get:$missing"
    $SUDO apt-get -o DPkg::Lock::Timeout="$lock_wait" update -qq
    $SUDO apt-get -o DPkg::Lock::Timeout="$lock_wait" install -y -qq $missing >/dev/null
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "install: creating the virtual environment .venv..."
  python3 -m venv .venv
fi
echo "install: upgrading pip..."
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
echo "install: installing the workbench and its Python packages${extras:+ (with $extras)} (about a minute on a fresh machine)..."
.venv/bin/python -m pip install -q -e ".${extras}"
echo "installed into .venv (start: .venv/bin/python main.py)"
