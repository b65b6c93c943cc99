#!/usr/bin/env bash
# Does the default model keep its score when the harness is edited? The check the HAT study's
# "done when" asks for, as commands a user types: livestream on LIMIT cases with no --model (the
# shipped HAT model) under the shipped harness, under this week's edit (scripts/weekly-edit.yaml:
# a tool and a skill renamed, a rule reworded, a constraint moved) and under a held-out
# augmentation variant that no training run drew (most names and wordings changed); then the same
# for shipped:fixed-sft, and each edited run compared with its model's run under the shipped harness.
#
#   bash scripts/edit_check.sh        LIMIT=40 SEED=7 OUT=/tmp/check bash scripts/edit_check.sh
#   MODELS="hat-1600 fixed-sft-1600" bash scripts/edit_check.sh    (other shipped models)
#   (defaults: LIMIT=200 cases, SEED=2026 for the held-out variant, OUT=out/edit-check,
#   MODELS="hat fixed-sft": hat runs with no --model, as the default)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
OUT="${OUT:-out/edit-check}"
LIMIT="${LIMIT:-200}"
SEED="${SEED:-2026}"
MODELS="${MODELS:-hat fixed-sft}"
rm -rf "$OUT" && mkdir -p "$OUT"
show() {
  local shown
  printf -v shown '%q ' "$@"
  printf '\n$ %s\n' "${shown% }"
}
step() { show "$@"; "$@"; }
quiet() { show "$@"; "$@" > /dev/null; }   # the command shown, its report not: compare says it


# The two edited harnesses, each from a copy of the shipped one.
EDIT="$OUT/weekly-edit"
step cp -r harnesses/livecommerce "$EDIT"
quiet harnessctl patch scripts/weekly-edit.yaml -H "$EDIT"
quiet harnessctl augment --n 1 --seed "$SEED" --split heldout --out "$OUT/heldout"
VARIANT="$(find "$OUT/heldout" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
step harnessctl diff harnesses/livecommerce "$VARIANT" --stat || [ $? -eq 1 ]   # exit 1: different

RUNS="$OUT/runs"
for name in $MODELS; do
  model=()
  [ "$name" = hat ] || model=(--model "shipped:$name")   # hat: no --model, the default
  for harness in shipped:harnesses/livecommerce weekly-edit:"$EDIT" heldout:"$VARIANT"; do
    quiet harnessctl eval --suite livestream --limit "$LIMIT" "${model[@]}" -H "${harness#*:}" \
      --runs-dir "$RUNS" --run-id "$name-${harness%%:*}"
  done
  for edit in weekly-edit heldout; do
    step harnessctl compare "$name-shipped" "$name-$edit" --runs-dir "$RUNS" || [ $? -eq 1 ]   # exit 1: a regression
  done
done
step harnessctl runs --runs-dir "$RUNS"
