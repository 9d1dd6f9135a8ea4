#!/usr/bin/env bash
# Runs the libFuzzer targets built in BUILD_DIR (configure: tests/fuzz/README.md); builds nothing.
#   tests/fuzz/run_fuzz.sh BUILD_DIR [SECONDS]
# For each target: every file under tests/fuzz/regressions/<target>/ must pass, then it fuzzes for SECONDS
# (default 20) from tests/fuzz/corpus/<target>/ (plus the regressions) in a scratch copy. Exits 1 on any finding;
# the input that failed is kept under BUILD_DIR/fuzz-findings/<target>/ (add it as a regression: README.md).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [SECONDS]" >&2
  exit 2
fi
build=$1
seconds=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
targets=(fuzz_threshold_backward fuzz_dropout_family fuzz_descriptors fuzz_mhc fuzz_compressor fuzz_flash_attention
         fuzz_mhc_sinkhorn fuzz_mhc_pre_sinkhorn fuzz_block_residuals fuzz_sparse_flash_mla fuzz_lightning_indexer)

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# The machine is shared: the library's worker threads stay at 2 unless told otherwise.
export GRADKIT_NUM_THREADS=${GRADKIT_NUM_THREADS:-2}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
for target in "${targets[@]}"; do
  binary=$build/bin/$target
  if [[ ! -x $binary ]]; then
    echo "run_fuzz.sh: $binary is missing (build the fuzz configuration first: tests/fuzz/README.md)" >&2
    exit 2
  fi
  findings=$build/fuzz-findings/$target
  mkdir -p "$findings"
  regressions=("$here/regressions/$target"/*)
  if [[ -e ${regressions[0]} ]]; then
    echo "run_fuzz.sh: $target: ${#regressions[@]} regression inputs"
    if ! "$binary" "${regressions[@]}" >"$work/$target.regressions.log" 2>&1; then
      tail -n 60 "$work/$target.regressions.log"
      echo "run_fuzz.sh: $target: a regression input fails (log above)" >&2
      failed=1
      continue
    fi
  fi
  if ((seconds > 0)); then
    mkdir -p "$work/corpus/$target"
    dirs=("$work/corpus/$target")  # new inputs go to the first, a scratch copy
    for dir in "$here/corpus/$target" "$here/regressions/$target"; do
      if [[ -d $dir ]]; then dirs+=("$dir"); fi
    done
    echo "run_fuzz.sh: $target: fuzzing for ${seconds}s"
    if ! "$binary" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=1024 -print_final_stats=1 \
        -artifact_prefix="$findings/" "${dirs[@]}" >"$work/$target.log" 2>&1; then
      tail -n 80 "$work/$target.log"
      echo "run_fuzz.sh: $target: FINDING, input kept in $findings/" >&2
      failed=1
      continue
    fi
    grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec|^Done ' "$work/$target.log" || true
  fi
done
exit $failed
