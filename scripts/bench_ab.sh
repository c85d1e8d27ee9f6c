#!/usr/bin/env bash
# Same-run A/B benchmark: builds mxq_bench from a base source tree beside the working tree, then
# runs both on the same bench cases in interleaved rounds (base1, new1, base2, new2, ...), so both
# see the same clocks and thermals, and prints scripts/bench_compare.py's table.
#   usage: scripts/bench_ab.sh BASE LOG_DIR [mxq_bench case arguments...]
#     BASE: a tarball of the base sources (made where git is: git archive REV -o base.tar) or a
#           git revision of this repository.
#   env:   MXQ_AB_ROUNDS (default 3), MXQ_AB_RUNS (default 30: --runs),
#          MXQ_AB_BASE_DIR (default /tmp/mxq-ab-base), MXQ_GPU_BUILD_DIR (default build),
#          MXQ_CUDA_ARCHS (default 90a), MXQ_AB_CMAKE_ARGS (extra configure arguments)
#   e.g.   scripts/bench_ab.sh base.tar /tmp/ab --op quantize --format nvfp4 --shape 32768x7168
set -uo pipefail
BASE=${1:?usage: scripts/bench_ab.sh BASE LOG_DIR [bench arguments...]}
LOG_DIR=${2:?usage: scripts/bench_ab.sh BASE LOG_DIR [bench arguments...]}
shift 2
mkdir -p "$LOG_DIR"
LOG_DIR=$(cd "$LOG_DIR" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
BASE_DIR=${MXQ_AB_BASE_DIR:-/tmp/mxq-ab-base}
BUILD=${MXQ_GPU_BUILD_DIR:-build}

rm -rf "$BASE_DIR" && mkdir -p "$BASE_DIR" || exit 2
if [ -f "$BASE" ]; then
  tar xf "$BASE" -C "$BASE_DIR" || exit 2
else
  git archive "$BASE" | tar x -C "$BASE_DIR" || exit 2
fi

# configure SRC BUILD_DIR LOG: Release, the benchmark's CUDA architectures.
configure() {
  # shellcheck disable=SC2086
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${MXQ_CUDA_ARCHS:-90a}" \
    ${MXQ_AB_CMAKE_ARGS:-} >"$3" 2>&1
}
configure "$BASE_DIR" "$BASE_DIR/build" "$LOG_DIR/configure-base.log" &
configure . "$BUILD" "$LOG_DIR/configure-new.log" &
wait
jobs=$(nproc)
cmake --build "$BASE_DIR/build" -j "$(( (jobs + 1) / 2 ))" --target mxq_bench >"$LOG_DIR/build-base.log" 2>&1 &
base_build=$!
cmake --build "$BUILD" -j "$(( (jobs + 1) / 2 ))" --target mxq_bench >"$LOG_DIR/build-new.log" 2>&1
new_rc=$?
wait $base_build
base_rc=$?
if [ $base_rc -ne 0 ] || [ $new_rc -ne 0 ]; then
  echo "bench_ab.sh: build failed (base rc $base_rc, new rc $new_rc; logs in $LOG_DIR)" >&2
  exit 2
fi

labels=()
for round in $(seq 1 "${MXQ_AB_ROUNDS:-3}"); do
  for side in base new; do
    bin="$BUILD/bench/mxq_bench"
    [ $side = base ] && bin="$BASE_DIR/build/bench/mxq_bench"
    "$bin" --runs "${MXQ_AB_RUNS:-30}" --json "$LOG_DIR/bench-$side$round.json" "$@" >"$LOG_DIR/bench-$side$round.log" 2>&1
    labels+=("$side$round=$LOG_DIR/bench-$side$round.json")
  done
done
python3 scripts/bench_compare.py "${labels[@]}" | tee "$LOG_DIR/compare.txt"
