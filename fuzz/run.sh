#!/usr/bin/env bash
# Builds the libFuzzer targets (CMake preset `fuzz`: clang, ASan + UBSan, into build/fuzz) and fuzzes
# each for SECONDS (default 60), both at once; fuzz/CMakeLists.txt says what each target covers.
# Usage: fuzz/run.sh [SECONDS]   (exit 0: no crash found; crashes in build/fuzz/fuzz/crashes/)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cmake --preset fuzz -DMXQ_FUZZ_SECONDS="${1:-60}"
cmake --build --preset fuzz
ctest --preset fuzz
