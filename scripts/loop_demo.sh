#!/usr/bin/env bash
# Diagnose, edit, evaluate: from a failing run of the embedded default model to a gated release
# with the production pointer moved. Works in a scratch git repository holding a copy of
# harnesses/livecommerce (the project's own tags and refs are never touched), and prints the wall
# time of every step.
#
# The model is the *untrained* tiny model that `harnessctl model init` builds: it fails every
# case, so the run is a real failing run; the accepted edit is the diagnosis's top proposal, and
# the gate checks that it does not regress the model (an untrained model has nothing to lose, so
# the gate passes) and that P95 latency stays within the 15 s budget.
#
#   bash scripts/loop_demo.sh [WORK_DIR]        (default: out/loop_demo)
#   LIMIT=6 MAX_TOKENS=64 PYTHON=.venv/bin/python TINY_MODEL=path/to/built/model bash scripts/loop_demo.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
WORK="$(mkdir -p "${1:-$ROOT/out/loop_demo}" && cd "${1:-$ROOT/out/loop_demo}" && pwd)"
LIMIT="${LIMIT:-4}"
MAX_TOKENS="${MAX_TOKENS:-256}"   # per model turn (the untrained model always writes them all)
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
REPO="$WORK/repo"
H="$REPO/harnesses/livecommerce"
RUNS="$WORK/runs"
TINY="${TINY_MODEL:-$WORK/tiny}"   # an existing `model init` folder is reused
MODEL="local:$TINY"
rm -rf "$REPO" "$RUNS" "$WORK/releases"

hc() { "$PYTHON" -m harnessctl.cli.main "$@"; }
TOTAL_START=$(date +%s.%N)
step() {  # step "title" command...  (exit 1 is allowed where the command means "different")
  local title="$1"; shift
  printf '\n\033[1;36m== %s\033[0m\n$ %s\n' "$title" "$*"
  local t0 t1
  t0=$(date +%s.%N)
  "$@"
  t1=$(date +%s.%N)
  printf '\033[2m-- %s: %.1f s\033[0m\n' "$title" "$(echo "$t1 - $t0" | bc)"
}

# 0. The embedded default model (untrained) and a scratch repository with production at v1.
[ -f "$TINY/config.json" ] || step "build the embedded tiny model" hc model init --out "$TINY"
mkdir -p "$REPO/harnesses" && cp -r "$ROOT/harnesses/livecommerce" "$REPO/harnesses/"
git -C "$REPO" init -q -b main
git -C "$REPO" config user.email "live-ops@example.com"
git -C "$REPO" config user.name "live ops"
git -C "$REPO" add . && git -C "$REPO" commit -qm "livecommerce harness"
cd "$REPO"
step "first release (no gate): v1 goes to production" hc release v1 --no-gate -H "$H" --notes-dir "$WORK/releases"

# 1. A failing run of the deployed model.
step "evaluate the deployed model" hc eval --suite livestream,robustness --limit "$LIMIT" --model "$MODEL" -H "$H" \
  --evals-dir "$ROOT/evals" --runs-dir "$RUNS" --run-id failing --no-cache -j 2 --max-tokens "$MAX_TOKENS"

# 2. Diagnosis: failures by kind, component and harness element, ranked by impact (+ HTML section).
step "diagnose" hc diagnose failing --runs-dir "$RUNS" --report --top 8

# 3. Edits proposed from rules, validated and shown as semantic diffs; the top one accepted and
#    committed on a branch.
step "propose and accept an edit" hc edit failing --runs-dir "$RUNS" -H "$H" --apply --pick 1

# 4. The gate: evolution suite from the diff production -> candidate + standard suites, the same
#    cases under both, compare rules, P95 latency budget; on a pass: tag v2, move the pointer.
step "gated release" hc release v2 --gate --model "$MODEL" -H "$H" --limit "$LIMIT" --evals-dir "$ROOT/evals" \
  --runs-dir "$RUNS" --notes-dir "$WORK/releases" --no-cache --max-tokens "$MAX_TOKENS"

printf '\n$ git show-ref (scratch repository)\n'
git -C "$REPO" show-ref | grep -E 'production|tags/'
printf 'production -> %s\n' "$(git -C "$REPO" describe --tags "$(git -C "$REPO" rev-parse refs/production/livecommerce)")"
TOTAL_END=$(date +%s.%N)
printf '\n\033[1mtotal: %.1f s\033[0m · release note: %s\n' "$(echo "$TOTAL_END - $TOTAL_START" | bc)" "$WORK/releases/livecommerce-v2.md"
