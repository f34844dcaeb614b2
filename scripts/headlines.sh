#!/usr/bin/env bash
# The README's headlines, measured as the docs quote them: ROUNDS rounds (default 3) of one
# binary, each round every workload beside its reference in the same call, ours and the
# reference interleaved (the attention sweep: ours, then SDPA, then the next round). On a GPU
# machine:
#
#   scripts/headlines.sh HOST OUTDIR [ROUNDS] [TWIN_SOURCE]
#
# HOST is a built `host` binary; TWIN_SOURCE the study's nvcc twin (../shared/peers/twin_peer.cu,
# carried beside the binary), built here with nvcc and run after the study in each round.
# Every side is timed alike: 3 untimed launches, then 20 each between two CUDA events and
# waited for, the median of the 20 (the mean of the middle two) — `host run`'s default, SDPA's
# script's default, and the twin's `reps` argument (its warm-up is 3). OUTDIR gets, per round
# R, WORKLOAD-R.json (`host run --json`), sdpa-R.json and twin-R.txt; `scripts/headlines.py
# OUTDIR` turns them into the README's ranges.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
host=$(realpath "$1")
out=$2
rounds=${3:-3}
twin_source=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
reps=(--reps 20 --warmup 3)

twin=
if [ -n "$twin_source" ]; then
  twin="$out/twin_peer"
  nvcc -O3 -std=c++17 -arch=sm_90 -o "$twin" "$twin_source"
fi

# The FlashAttention-3 sweep: 16k tokens, hidden 2048, d 64/128/256, no mask and causal.
sweep=()
for d in 64 128 256; do
  h=$((2048 / d))
  for mask in "" ":causal"; do
    for s in 512 1024 2048 4096 8192 16384; do
      sweep+=("$((16384 / s))x${s}x${h}x${d}${mask}")
    done
  done
done
# The kernels Attention::forward picks at those shapes.
attention_kernels=(attention_bf16_d64 attention_bf16_d64_two_consumers attention_bf16_d128 attention_bf16_d256)

# Gemm16 against both schedules at the 26 shapes of its dispatch run (docs/results.md).
gemm16_shapes=(768 1536 2560 3584 5120 7168 4096x2048x4096 2048x4096x8192 8192x4096x1024
  16384x16384x1024 1000x4000x2000 6000x6000x1000 10000x1000x4096 256x4096x16384 4096x256x16384
  3000x5000x7000 1024 2048 4096 8192 3072 6144 4096x4096x1024 8192x8192x1024 512x8192x8192
  8192x1024x8192)

run() {
  local name=$1
  shift
  echo "== $name: host run $*"
  "$host" run "$@" "${reps[@]}" --json "$out/$name.json" >"$out/$name.txt" 2>&1 \
    || echo "   (exit $?: see $name.txt)"
  tail -n 2 "$out/$name.txt"
}

# Two passes of ROUNDS rounds each, the attention sweep and the study first (the issue's
# must-haves when a device call runs out of time), then the GEMMs, streaming and clusters.
for r in $(seq 1 "$rounds"); do
  run "attention-$r" --workload attention --size "${sweep[@]}" --only "${attention_kernels[@]}"
  echo "== sdpa-$r"
  python3 "$here/attention_sdpa.py" --reps 20 --warmup 3 --json "$out/sdpa-$r.json" "${sweep[@]}" \
    >"$out/sdpa-$r.txt" 2>&1 || echo "   (sdpa exit $?)"
  tail -n 1 "$out/sdpa-$r.txt"
  run "study-$r" --workload study --size 65536
  if [ -n "$twin" ]; then
    "$twin" 65536 20 >"$out/twin-$r.txt"
  fi
  run "study-1m-$r" --workload study --size 1048576 --only sync_baseline tensor_2 tensor_3 tensor_4
done
for r in $(seq 1 "$rounds"); do
  run "gemm-$r" --workload gemm --size 4096 8192 1024 1000 8192x64x8192 64x8192x8192 \
    --only gemm32 gemm_thread_pipeline_5 gemm_split_k_2 gemm_split_k_2x2 gemm_split_k_1x8_64x64 \
    gemm_split_k_2x8_64x64
  run "bf16-gemm-$r" --workload gemm16 --size 4096 8192 16384x16384x1024 2048 4095x4097x1023 \
    4096x4096x1023 4096x4097x1024 --only bf16_gemm_ws_cooperative bf16_gemm_ws_pingpong \
    f16_gemm_ws_cooperative f16_gemm_ws_pingpong gemm16
  run "stream-$r" --workload stream --size 2GiB
  run "dsmem-latency-$r" --workload dsmem-latency
  run "dsmem-bandwidth-$r" --workload dsmem-bandwidth
  run "gemm16-$r" --workload gemm16 --size "${gemm16_shapes[@]}" \
    --only gemm16 bf16_gemm_ws_cooperative bf16_gemm_ws_pingpong
done
