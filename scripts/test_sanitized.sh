#!/usr/bin/env bash
# Builds the CPU parts of mxq (no CUDA) with AddressSanitizer and UndefinedBehaviorSanitizer (CMake
# preset `asan`, into build/asan) and runs every `cpu` test there: the reference backend, the API
# checks, the CLI and its safetensors reader / writer, the bench core. Any out-of-bounds access,
# leak or undefined behaviour fails the test that hit it. CI runs it after scripts/test.sh.
# Left out (by the test preset): python_pytest and install_consumer, whose host programs (python3,
# the installed consumer) are not instrumented, so the sanitizer runtime cannot load first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install_deps.sh

cmake --preset asan
cmake --build --preset asan
ctest --preset asan
