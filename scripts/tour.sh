#!/usr/bin/env bash
# A tour of the rooms on the embedded default: the harness round trip, the embedded model built
# from scratch, one live turn, Harness State Augmentation and an evaluation with its report. Every
# step is a real command a user types; outputs land in out/tour/. (`make demo` is the product's
# point in a minute: scripts/demo.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
OUT=out/tour
rm -rf "$OUT" && mkdir -p "$OUT"
# Each command is echoed quoted as a shell would need it (copy-paste runs it), in colour unless
# NO_COLOR is set (https://no-color.org) or the output is not a terminal.
if [ -z "${NO_COLOR:-}" ] && [ -t 1 ]; then BOLD=$'\033[1;36m' RESET=$'\033[0m'; else BOLD='' RESET=''; fi
step() {
  local shown
  printf -v shown '%q ' "$@"
  printf '\n%s$ %s%s\n' "$BOLD" "${shown% }" "$RESET"
  "$@"
}

# 1. The harness as code: validate, history, what changed between versions.
step harnessctl validate harnesses/livecommerce
step harnessctl log
step harnessctl diff v1 v3 || [ $? -eq 1 ]   # exit 1 means "different", like diff(1)

# 2. The embedded default: a tiny Qwen3-architecture model and tokenizer built from the
#    simulator's own conversations (untrained: `harnessctl train` and `experiment hat` train it).
step harnessctl model init --out "$OUT/tiny"

# 3. One live turn, by the simulator's reference policy and by the embedded model.
step harnessctl run --query "how much is the one on screen? any coupon?" --product P003 --model oracle
step harnessctl run --query "is size M still in stock?" --product P022 --model "local:$OUT/tiny"

# 4. Harness State Augmentation: held-out variants and a trajectory dataset.
step harnessctl augment --n 20 --split heldout --out "$OUT/variants"
step harnessctl augment --trajectories 500 --n 20 --out "$OUT/dataset"

# 5. Evaluation: the reference policy on every agent suite, the embedded model on a sample.
step harnessctl eval --suite all --limit 100 --model oracle --runs-dir "$OUT/runs" --run-id oracle
step harnessctl eval --suite all --limit 5 --max-tokens 32 --model "local:$OUT/tiny" --runs-dir "$OUT/runs" --run-id tiny
step harnessctl compare oracle tiny --runs-dir "$OUT/runs" || [ $? -eq 1 ]   # exit 1: a regression
step harnessctl report tiny --runs-dir "$OUT/runs" --out "$OUT/report.html"
printf '\nDone. Report: %s\n' "$OUT/report.html"
