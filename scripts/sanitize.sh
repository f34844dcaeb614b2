#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck, synccheck and initcheck over every kernel of
# gpu-kernels and of the workloads, at small ragged shapes, on a GPU machine:
#
#   scripts/sanitize.sh HOST OUTDIR [WORKLOAD...]
#
# HOST is a built `host` binary (target/release/host); OUTDIR receives, per workload and tool,
# WORKLOAD-TOOL.log (compute-sanitizer's own output), WORKLOAD-TOOL.json (`host run --json`:
# which experiments ran and passed under the tool) and WORKLOAD-TOOL.txt (what host printed). The tools run side by side, four processes on the one GPU; the workloads of one
# tool one after another. Then, on the build machine, with OUTDIR copied back:
#
#   SANITIZER_WRITE=OUTDIR cargo test --release -p host --test sanitizer
#
# stores the logs under docs/runs/sanitizer-DATE/ and writes docs/runs/sanitizer.tsv: one row
# per kernel and tool with its errors, its PTX fingerprint and the date. The same test, run
# without SANITIZER_WRITE in CI, fails when a kernel's fingerprint moved on from its row.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
host=$(realpath "$1")
out=$2
shift 2
mkdir -p "$out"
command -v compute-sanitizer >/dev/null || { echo "error: compute-sanitizer is not on PATH" >&2; exit 1; }

# Small shapes with ragged edges: partial tiles, K not a multiple of the copy width, lengths
# that are not multiples of a block of keys, GQA, a cluster with an idle block.
sizes() {
  case $1 in
    study) echo 67 68 ;;
    gemm) echo 129x257x33 130x260x36 300x8x72 ;;
    gemm16) echo 129x257x33 300x8x72 136x264x40 ;;
    attention) echo 2x300x4x64:causal 1x129x2x64:hkv=1 1x200x2x128:kv=333 1x17x8x128:kv=129:hkv=2:causal 1x257x2x256:kv=100:causal 1x65x2x256 3x2x4x128:kv=300:hkv=2:causal:ragged ;;
    stream) echo 1000004 ;;
    dsmem-latency) echo 2:1:256 4:2:256 8:4:256 16:1:256 ;;
    dsmem-bandwidth) echo 2:1:4 4:1:4 8:4:4 16:1:4 ;;
    selftest) echo 4100 ;;
    *) echo "error: no sanitizer sizes for workload \`$1\`" >&2; return 1 ;;
  esac
}

# synccheck kills the launch of `copy_barrier_uncounted` (each incrementing
# cp.async.mbarrier.arrive reads to it as "Missing wait"; docs/runs/sanitizer-reviewed.tsv), and
# a self-test run stops at its first failure: under synccheck the self-test runs without it.
selftest_synccheck=(copy_thread_pipeline_{2..8} copy_block_pipeline_{2..8}
  copy_warp_specialized_{2,4,8} copy_barrier_{4,8,16} copy_barrier_group copy_bulk_barrier
  copy_bulk_barrier_arriving copy_zfill_{4,8,16} barrier_ops selftest_math selftest_collectives
  selftest_tile selftest_mma)
only() {
  if [ "$1 $2" = "selftest synccheck" ]; then echo --only "${selftest_synccheck[@]}"; fi
}

workloads=("$@")
# The quick ones first: a run cut short still has them.
[ ${#workloads[@]} -gt 0 ] || workloads=(study stream selftest dsmem-latency dsmem-bandwidth gemm gemm16 attention)
for w in "${workloads[@]}"; do sizes "$w" >/dev/null; done

one_tool() {
  local tool=$1 w
  for w in "${workloads[@]}"; do
    local log="$out/$w-$tool.log"
    # --timeout: the watchdog's limit, generous because the tools slow kernels down 10-100x.
    # shellcheck disable=SC2046
    compute-sanitizer --tool "$tool" --log-file "$log" \
      "$host" run --workload "$w" --size $(sizes "$w") $(only "$w" "$tool") --reps 1 --warmup 1 --timeout 300s \
      --json "$out/$w-$tool.json" >"$out/$w-$tool.txt" 2>&1 || true
    echo "$tool $w: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
  done
}

for tool in memcheck racecheck synccheck initcheck; do
  one_tool "$tool" &
done
wait
compute-sanitizer --version | tail -1 >"$out/compute-sanitizer-version.txt"
