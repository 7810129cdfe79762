#!/usr/bin/env bash
# Install the workbench on a fresh Debian/Ubuntu machine: system libraries Qt needs, a virtual
# environment in .venv, and the package (with the test tools when given --test).
# Safe to run again: every step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"

if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  # python3-venv for the virtual environment; the rest are the shared libraries PySide6 loads
  # (OpenGL/EGL, xkbcommon, fontconfig, D-Bus) plus the xcb pieces a real desktop session needs.
  pkgs="python3-venv libgl1 libegl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libglib2.0-0
        libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-randr0 libxcb-render-util0 libxcb-xinerama0"
  missing=""
  for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq $missing >/dev/null
  fi
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".${extras}"
echo "installed into .venv (start: .venv/bin/python main.py)"
