#!/usr/bin/env bash
# Builds the CPU parts of mxq (no CUDA) with AddressSanitizer and UndefinedBehaviorSanitizer into
# build-sanitized/ and runs every `cpu` test there: the reference backend, the API checks, the CLI
# and its safetensors reader / writer, the bench core. Any out-of-bounds access, leak or undefined
# behaviour fails the test that hit it. CI runs it after scripts/test.sh.
# Left out: python_pytest and install_consumer, whose host programs (python3, the installed
# consumer) are not instrumented, so the sanitizer runtime cannot load first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install_deps.sh

build="${1:-build-sanitized}"
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMXQ_ENABLE_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags"
cmake --build "$build" -j"$(nproc)"

export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
ctest --test-dir "$build" -L cpu -E '^(python_pytest|install_consumer)$' --output-on-failure -j2
