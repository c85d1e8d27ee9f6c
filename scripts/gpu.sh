#!/usr/bin/env bash
# On a machine with a CUDA GPU: configure + build with CUDA, run the GPU tests (ctest label gpu),
# run the benchmark if it was built, run compute-sanitizer memcheck / racecheck / initcheck on the
# GPU tests (MXQ_TEST_QUICK=1: small shapes), and print a summary table last.
#   usage: scripts/gpu.sh LOG_DIR
#   env:   MXQ_GPU_BUILD_DIR (default build), MXQ_CUDA_ARCHS (default 90a),
#          MXQ_GPU_STEPS (unset: "build test python bench sanitize"; empty: none), MXQ_BENCH_ARGS (extra bench args),
#          MXQ_SANITIZERS (default "memcheck racecheck initcheck"),
#          MXQ_CTEST_JOBS (default 1: ctest -j),
#          MXQ_SANITIZE_JOBS (default 1: one sanitizer run at a time; N: N (tool, program) runs at once),
#          MXQ_PTXAS_VERBOSE (ON: ptxas register and spill reports in the build log; default OFF),
#          MXQ_GPU_PREBUILT (a package of scripts/pack_gpu_build.sh: unpacked into the build folder,
#          default build-prebuilt, instead of the build step)
set -uo pipefail
LOG_DIR=${1:?usage: scripts/gpu.sh LOG_DIR}
mkdir -p "$LOG_DIR"
LOG_DIR=$(cd "$LOG_DIR" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
export PATH="/usr/local/cuda/bin:${PATH}"
BUILD=${MXQ_GPU_BUILD_DIR:-build}
ARCHS=${MXQ_CUDA_ARCHS:-90a}
STEPS=${MXQ_GPU_STEPS-build test python bench sanitize}  # set but empty: no step (with MXQ_GPU_PREBUILT, the unpack alone)
SUMMARY=()

# step NAME COMMAND...: runs COMMAND with its output in LOG_DIR/NAME.log; records status and time.
step() {
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$LOG_DIR/$name.log" 2>&1
  local rc=$?
  local status=ok
  [ $rc -eq 0 ] || status="FAIL(rc=$rc)"
  SUMMARY+=("$(printf '%-34s %-12s %5ss' "$name" "$status" $((SECONDS - t0)))")
  echo "gpu.sh: $name: $status" >&2
  return $rc
}

wants() { [[ " $STEPS " == *" $1 "* ]]; }

nvidia-smi >"$LOG_DIR/nvidia-smi.log" 2>&1 || true

# unpack_prebuilt FILE: the package into BUILD (an absolute path), its ctest files pointed at BUILD
# and this source tree (they name the packing machine's folders; the build folder first, as it may
# lie inside the source folder).
unpack_prebuilt() {
  rm -rf "${BUILD:?}"/* && tar -C "$BUILD" -xJf "$1" || return 1
  local packed_build packed_src
  read -r packed_build packed_src < "$BUILD/PACKED_FROM" || return 1
  find "$BUILD" -name '*.cmake' -exec sed -i -E -e "s#$packed_build#$BUILD#g" -e "s#$packed_src([/\";])#$(pwd)\1#g" {} +
}
if [ -n "${MXQ_GPU_PREBUILT:-}" ]; then
  mkdir -p "${MXQ_GPU_BUILD_DIR:-build-prebuilt}" && BUILD=$(cd "${MXQ_GPU_BUILD_DIR:-build-prebuilt}" && pwd) || exit 2
  STEPS=${STEPS//build/}
  step unpack_prebuilt unpack_prebuilt "$MXQ_GPU_PREBUILT" || { echo "gpu.sh: cannot unpack $MXQ_GPU_PREBUILT" >&2; exit 2; }
  # The programs' run path names the packing build's library.
  export LD_LIBRARY_PATH="$BUILD/src:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

if wants build; then
  step configure cmake --preset cuda -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" -DMXQ_PTXAS_VERBOSE="${MXQ_PTXAS_VERBOSE:-OFF}"
  step build cmake --build "$BUILD" -j16 -- -k 0  # keep going: one broken target must not hide the rest
fi

# The test programs run below outside ctest find their data here (ctest sets it for its own runs).
export MXQ_TEST_DATA_DIR="$(pwd)/tests/data"
GPU_TESTS=""  # the programs, not their build files (names with a dot)
for exe in "$BUILD"/tests/test_cuda_*; do [[ -f $exe && $(basename "$exe") != *.* ]] && GPU_TESTS+=" $exe"; done

if wants test; then
  step ctest_gpu ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 600 -j "${MXQ_CTEST_JOBS:-1}"
fi

# The Python package as users install it (pip, libmxq inside it: the one built here, the native
# torch operators built against this machine's torch), then every Python test against that install
# (byte equality with the CPU backend, opcheck, torch.compile, CUDA graphs, transformers loading
# what the mxq command wrote), the MoE layer example
# (exit 77: an op it needs is unsupported), the host-cost benchmark and the SwiGLU benchmark.
PY_SITE="$(cd "$BUILD" && pwd)/python-site"
install_python() {
  rm -rf "$PY_SITE" && MXQ_LIBMXQ="$(cd "$BUILD" && pwd)/src/libmxq.so" python3 -m pip install \
    --no-build-isolation --no-deps --no-index --target "$PY_SITE" ./python
}
py_env=(env PYTHONPATH="$PY_SITE" MXQ_TEST_INSTALLED=1 MXQ_CLI="$(cd "$BUILD" && pwd)/tools/cli/mxq"
        PYTHONUNBUFFERED=1)
moe_example() {
  "${py_env[@]}" python3 examples/moe_mxfp8_layer.py
  local rc=$?
  [ $rc -eq 77 ] && echo "moe example: SKIPPED (an op is unsupported on cuda)" && return 0
  return $rc
}
if wants python && step python_install install_python; then
  step python_tests "${py_env[@]}" python3 -m pytest tests/python -q -rs -p no:cacheprovider
  step python_moe_example moe_example
  step python_host_cost "${py_env[@]}" python3 bench/python_host_cost.py
  step python_swiglu "${py_env[@]}" python3 bench/python_swiglu.py
fi

if wants bench; then
  if [ -x "$BUILD/bench/mxq_bench" ]; then
    # shellcheck disable=SC2086
    step bench "$BUILD/bench/mxq_bench" --backend cuda --json "$LOG_DIR/bench.json" ${MXQ_BENCH_ARGS:-}
  else
    SUMMARY+=("$(printf '%-34s %-12s' bench "skipped (no $BUILD/bench/mxq_bench)")")
  fi
fi

# sanitize_one TOOL PROGRAM: one GPU test program under compute-sanitizer TOOL, small shapes only.
sanitize_one() {
  echo "=== $1 $(basename "$2")"
  MXQ_TEST_QUICK=1 compute-sanitizer --tool "$1" --error-exitcode 99 "$2"
}
# sanitize_windows TOOL: the grouped quantize test once more with every eligible colwise case on
# the windows kernel (the launcher picks it for small groups, and for one group or on slow memory
# per SM for small grids).
GROUPED_TEST="$BUILD/tests/test_cuda_grouped_quantize"
sanitize_windows() {
  [ -x "$GROUPED_TEST" ] || return 0
  MXQ_GROUPED_COLWISE=windows sanitize_one "$1" "$GROUPED_TEST"
}
# sanitize_all TOOL: every GPU test program, one after the other.
sanitize_all() {
  local tool=$1 rc=0 exe
  for exe in $GPU_TESTS; do sanitize_one "$tool" "$exe" || rc=1; done
  sanitize_windows "$tool" || rc=1
  return $rc
}
# sanitize_clean LOG: the sanitizer found nothing and every test passed.
sanitize_clean() {
  grep -q "ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards" "$1" && grep -q "^\[  PASSED  \]" "$1" &&
    ! grep -q "^\[  FAILED  \]" "$1"
}
# sanitize_log TOOL PROGRAM: the log of one sanitize_parallel job; PROGRAM "windows" stands for
# sanitize_windows.
sanitize_log() {
  if [ "$2" = windows ]; then echo "$LOG_DIR/sanitize_$1_grouped_windows.log"; else echo "$LOG_DIR/sanitize_$1_$(basename "$2").log"; fi
}
# sanitize_job TOOL PROGRAM: one job of sanitize_parallel, into its sanitize_log.
sanitize_job() {
  if [ "$2" = windows ]; then sanitize_windows "$1"; else sanitize_one "$1" "$2"; fi > "$(sanitize_log "$1" "$2")" 2>&1
}
# sanitize_parallel JOBS TOOL...: every (tool, program) pair and each tool's windows run, JOBS at a
# time; then one summary line per tool. The sanitizers slow the programs down 10-100 x and use a
# fraction of the GPU each, so running them side by side saves most of the time (the tests do not
# depend on running alone). The windows runs are jobs too, queued first: run one at a time after
# the others, they kept an H200 busy past 390 s, when the parallel jobs had all ended.
sanitize_parallel() {
  local jobs=$1 tool exe t0=$SECONDS; shift
  export -f sanitize_one sanitize_windows sanitize_log sanitize_job
  export LOG_DIR GROUPED_TEST
  # shellcheck disable=SC2016  # the job's arguments expand in its own shell
  for tool in "$@"; do for exe in windows $GPU_TESTS; do echo "$tool $exe"; done; done |
    xargs -P "$jobs" -L 1 bash -c 'sanitize_job "$0" "$1"'
  for tool in "$@"; do
    local status=ok
    for exe in windows $GPU_TESTS; do
      [ "$exe" = windows ] && [ ! -x "$GROUPED_TEST" ] && continue  # no grouped program: no windows run
      sanitize_clean "$(sanitize_log "$tool" "$exe")" || status=FAIL
    done
    SUMMARY+=("$(printf '%-34s %-12s %5ss' "sanitize_$tool (parallel)" "$status" $((SECONDS - t0)))")
    echo "gpu.sh: sanitize_$tool: $status" >&2
  done
}

if wants sanitize; then
  if [ "${MXQ_SANITIZE_JOBS:-1}" -gt 1 ]; then
    # shellcheck disable=SC2086
    sanitize_parallel "$MXQ_SANITIZE_JOBS" ${MXQ_SANITIZERS:-memcheck racecheck initcheck}
  else
    for tool in ${MXQ_SANITIZERS:-memcheck racecheck initcheck}; do
      step "sanitize_$tool" sanitize_all "$tool"
    done
  fi
fi

echo
echo "==== gpu.sh summary (logs in $LOG_DIR) ===="
printf '%s\n' "${SUMMARY[@]}"
grep -h -E '^\[  (PASSED|FAILED) |tests passed|ERROR SUMMARY' "$LOG_DIR"/ctest_gpu.log "$LOG_DIR"/sanitize_*.log 2>/dev/null | sort | uniq -c
if [ -f "$LOG_DIR/bench.log" ]; then
  echo "---- bench (last lines) ----"
  tail -n 60 "$LOG_DIR/bench.log"
fi
