#!/usr/bin/env bash
# The product's point in about a minute: the business edits the harness every week (a tool and a
# skill renamed, a rule reworded, a constraint moved), `harnessctl diff` shows what changed, and
# the two models shipped in the package are evaluated under the old and the new harness: the HAT
# model (trained to follow whatever harness it is given) and the fixed-SFT model (fine-tuned under
# one harness only). Every step is a real command a user types; outputs land in out/demo/.
# `scripts/tour.sh` (`make tour`) walks through the other rooms: the tiny model built from
# scratch, augmentation and every suite.
#
#   bash scripts/demo.sh            LIMIT=40 OUT=/tmp/demo bash scripts/demo.sh   (cases per run: 20; out/demo)
#   MAX_TOKENS (default 128) bounds each model turn
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
OUT="${OUT:-out/demo}"
LIMIT="${LIMIT:-20}"
MAX_TOKENS="${MAX_TOKENS:-128}"
rm -rf "$OUT" && mkdir -p "$OUT"
# Each command is echoed quoted as a shell would need it (copy-paste runs it), in colour unless
# NO_COLOR is set (https://no-color.org) or the output is not a terminal.
if [ -z "${NO_COLOR:-}" ] && [ -t 1 ]; then BOLD=$'\033[1;36m' DIM=$'\033[2m' RESET=$'\033[0m'; else BOLD='' DIM='' RESET=''; fi
step() {
  local shown
  printf -v shown '%q ' "$@"
  printf '\n%s$ %s%s\n' "$BOLD" "${shown% }" "$RESET"
  "$@"
}
say() { printf '\n%s# %s%s\n' "$DIM" "$*" "$RESET"; }

# 1. The harness as code: the shipped harness validates, and its versions live in git.
step harnessctl validate harnesses/livecommerce
step harnessctl log

# 2. This week's edit, on a copy of the shipped harness (v3) in its own git repository.
#    `harnessctl edit` proposes edits from a run's failures; an edit the business decides is
#    written as data in the same patch language (scripts/weekly-edit.yaml) and applied with
#    `harnessctl patch`, validated as a whole before anything is written.
H="$OUT/harness"
step cp -r harnesses/livecommerce "$H"
step git -C "$H" init -q
step git -C "$H" config user.name "live ops"
step git -C "$H" config user.email "live-ops@example.com"
step git -C "$H" add -A
step git -C "$H" commit -qm "livecommerce v3, as shipped"
step harnessctl patch scripts/weekly-edit.yaml -H "$H"
step git -C "$H" commit -qam "weekly edit"
step harnessctl tag v4 -H "$H" -m "deals tool and pricing skill renamed, coupon rule reworded, replies in 100 chars"
step harnessctl diff v3 v4 -H "$H" || [ $? -eq 1 ]   # exit 1 means "different", like diff(1)

# 3. The shipped models under the old harness (v3) and the new one (v4), then old vs new.
#    A model not shipped in this package yet is replaced, for its step, by the reference policy:
#    `oracle` (follows whatever harness it runs under) for HAT, `oracle-blind` (memorised the
#    v3 surface, as a model fine-tuned under one harness does) for fixed-SFT.
step harnessctl model list
RUNS="$OUT/runs"
for name in hat fixed-sft; do
  model="shipped:$name"
  if [ ! -f "harnessctl/models/data/$name/config.json" ]; then
    stand_in=$([ "$name" = hat ] && echo oracle || echo oracle-blind:harnesses/livecommerce)
    say "shipped:$name is not shipped in this package yet (harnessctl model ship --study experiments/full --arm $name); $stand_in stands in for it"
    model="$stand_in"
  fi
  step harnessctl eval --suite livestream --limit "$LIMIT" -j 8 --max-tokens "$MAX_TOKENS" --model "$model" \
    -H harnesses/livecommerce --runs-dir "$RUNS" --run-id "$name-v3"
  step harnessctl eval --suite livestream --limit "$LIMIT" -j 8 --max-tokens "$MAX_TOKENS" --model "$model" \
    -H "$H" --runs-dir "$RUNS" --run-id "$name-v4"
  step harnessctl compare "$name-v3" "$name-v4" --runs-dir "$RUNS" --show-flips 3 || [ $? -eq 1 ]   # exit 1: a regression
done

# 4. Every run at a glance, and the reports of both models under the new harness.
step harnessctl runs --runs-dir "$RUNS"
step harnessctl report hat-v4 --runs-dir "$RUNS" --out "$OUT/report-hat.html"
step harnessctl report fixed-sft-v4 --runs-dir "$RUNS" --out "$OUT/report-fixed-sft.html"
printf '\nDone. Reports: %s, %s\n' "$OUT/report-hat.html" "$OUT/report-fixed-sft.html"
