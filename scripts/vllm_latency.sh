#!/usr/bin/env bash
# On a GPU machine with vLLM installed: serve a checkpoint with the tool-call parser, run the
# latency bench at concurrency 1,4,16, then serve it again with speculative decoding and run the
# same bench; print decode tokens/s with over without, per concurrency. Results land in OUT.
#
#   bash scripts/vllm_latency.sh CHECKPOINT [SPEC_METHOD] [SPEC_TOKENS]
#     CHECKPOINT   a model folder (e.g. a trainer output) or a model id vLLM can load
#     SPEC_METHOD  mtp (checkpoints with multi-token-prediction layers) or ngram (any model); default mtp
#     SPEC_TOKENS  speculative tokens per step; default 1
#   OUT=out/vllm PORT=8011 CONCURRENCY=1,4,16 REQUESTS=64 bash scripts/vllm_latency.sh ckpt ngram 4
#
# The vLLM command lines come from harnessctl.loop.bench.vllm_serve_command (unit-tested), so
# what runs here is what the tests check.
set -euo pipefail
CKPT="${1:?usage: vllm_latency.sh CHECKPOINT [mtp|ngram] [TOKENS]}"
METHOD="${2:-mtp}"
TOKENS="${3:-1}"
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-out/vllm_latency}"
PORT="${PORT:-8011}"
CONCURRENCY="${CONCURRENCY:-1,4,16}"
REQUESTS="${REQUESTS:-64}"
mkdir -p "$OUT"

serve_cmd() {  # serve_cmd [method tokens]
  "$PYTHON" - "$CKPT" "$PORT" "$@" <<'EOF'
import shlex, sys
from harnessctl.loop.bench import vllm_serve_command
ckpt, port, *spec = sys.argv[1:]
kw = {"speculative": spec[0], "num_speculative_tokens": int(spec[1])} if spec else {}
print(shlex.join(vllm_serve_command(ckpt, port=int(port), served_name="bench", **kw)))
EOF
}

run_one() {  # run_one label [method tokens]
  local label="$1"; shift
  local cmd; cmd="$(serve_cmd "$@")"
  echo "\$ $cmd"
  bash -c "$cmd" >"$OUT/$label.server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { echo "vLLM exited; see $OUT/$label.server.log"; exit 1; }
    sleep 1
  done
  "$PYTHON" -m harnessctl.cli.main bench latency --model openai/bench --api-base "http://127.0.0.1:$PORT/v1" \
    --concurrency "$CONCURRENCY" --requests "$REQUESTS" --json --html "$OUT/$label.html" >"$OUT/$label.json" || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

run_one plain
run_one "spec-$METHOD" "$METHOD" "$TOKENS"

"$PYTHON" - "$OUT/plain.json" "$OUT/spec-$METHOD.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print(f"{'c':>4} {'P95 plain':>10} {'P95 spec':>10} {'tok/s plain':>12} {'tok/s spec':>11} {'speedup':>8}")
for la, lb in zip(a["levels"], b["levels"]):
    ta, tb = la["tokens_per_s"], lb["tokens_per_s"]
    ratio = f"{tb / ta:.2f}x" if ta and tb else "n/a"
    print(f"{la['concurrency']:>4} {la['p95']:>10.3f} {lb['p95']:>10.3f} {ta or 0:>12.1f} {tb or 0:>11.1f} {ratio:>8}")
EOF
