#!/usr/bin/env bash
# The main job on the embedded default: the harness round trip, one live turn, augmentation and
# a short evaluation. Every step is a real command a user types.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
step() { printf '\n\033[1;36m$ %s\033[0m\n' "$*"; "$@"; }

step harnessctl validate harnesses/livecommerce
step harnessctl log
step harnessctl diff v1 v3 || true   # exit 1 means "different", like diff(1)
