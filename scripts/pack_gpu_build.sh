#!/usr/bin/env bash
# Packs a CUDA build's GPU programs for scripts/gpu.sh on another machine (MXQ_GPU_PREBUILT=FILE):
# the library, the GPU test programs, mxq_bench, the mxq command and the ctest files, stripped, in
# the build tree's layout, xz-compressed (about 58 MB for sm_90a). A GPU machine lent for minutes
# then skips the build (310-340 s on 16 cores of an H100 or H200 machine), and the package fits a
# device call's 64 MiB of carried files. The tests find their data through the ctest files
# (MXQ_TEST_DATA_DIR), which gpu.sh points at its own source tree.
#   usage: scripts/pack_gpu_build.sh BUILD OUT.tar.xz
set -euo pipefail
BUILD=${1:?usage: scripts/pack_gpu_build.sh BUILD OUT.tar.xz}
OUT=${2:?usage: scripts/pack_gpu_build.sh BUILD OUT.tar.xz}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SRC=$(pwd)
BUILD=$(cd "$BUILD" && pwd)
if ! [ -f "$BUILD/src/libmxq.so" ] || ! compgen -G "$BUILD/tests/test_cuda_*" >/dev/null; then
  echo "pack_gpu_build.sh: $BUILD has no CUDA build (libmxq.so and tests/test_cuda_*)" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(
  cd "$BUILD"
  # Programs only (no object folders), the library's symlinks kept, every ctest file and the test
  # lists they include (gtest discovery's, for the CPU programs left out).
  files=(src/libmxq.so* bench/mxq_bench tools/cli/mxq)
  for f in tests/test_cuda_* tests/bench/test_bench_host_gate; do [ -f "$f" ] && files+=("$f"); done
  while IFS= read -r f; do files+=("$f"); done < <(find . -name CTestTestfile.cmake -o -name '*_include.cmake' -o \
    -name '*_tests.cmake' | sed 's|^\./||')
  cp -P --parents "${files[@]}" "$tmp/"
)
find "$tmp" -type f ! -name '*.cmake' -exec strip --strip-unneeded {} +
# Where the ctest files' paths point: gpu.sh rewrites them to the unpacked folder and its source tree.
echo "$BUILD $SRC" > "$tmp/PACKED_FROM"
tar -C "$tmp" -cJf "$OUT" .
echo "pack_gpu_build.sh: $OUT ($(du -h "$OUT" | cut -f1))"
