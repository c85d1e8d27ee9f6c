#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and fuzzes each for SECONDS (default 60):
# - fuzz_safetensors: the safetensors reader, seeded with fuzz/seeds and the crafted bad files of
#   tests/cli/bad;
# - fuzz_api: the public C++ API on the CPU backend (every op, valid and invalid arguments; see
#   fuzz_api.cpp for the properties it checks), built from the library's CPU sources.
# Usage: fuzz/run.sh [SECONDS] [BUILD_DIR]   (exit 0: no crash found)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-60}"
build="${2:-build/fuzz}"
cxx="${CLANGXX:-$(command -v clang++ || command -v clang++-14 || true)}"
if [[ -z "$cxx" ]]; then
  echo "fuzz/run.sh: clang++ not found (scripts/install_deps.sh installs clang)" >&2
  exit 1
fi
flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)

mkdir -p "$build"/{safetensors,api}/{corpus,crashes}
"$cxx" "${flags[@]}" -Itools/cli fuzz/fuzz_safetensors.cpp tools/cli/safetensors_reader.cpp \
  tools/cli/safetensors_dtype.cpp -o "$build/fuzz_safetensors"
"$cxx" "${flags[@]}" -Iinclude -Isrc -Itests -DMXQ_VERSION='"fuzz"' fuzz/fuzz_api.cpp src/api/*.cpp src/cpu/*.cpp \
  -lpthread -o "$build/fuzz_api"

cp -n fuzz/seeds/* tests/cli/bad/*.safetensors "$build/safetensors/corpus/" 2>/dev/null || true
export UBSAN_OPTIONS=print_stacktrace=1
# -rss_limit_mb: the reader must not allocate without bound on hostile headers.
"$build/fuzz_safetensors" "$build/safetensors/corpus" -max_total_time="$seconds" -max_len=4096 \
  -rss_limit_mb=1024 -timeout=10 -artifact_prefix="$build/safetensors/crashes/" -print_final_stats=1
# The API target allocates the op's outputs (at most a few MB per call) and the CPU backend's threads.
"$build/fuzz_api" "$build/api/corpus" -max_total_time="$seconds" -max_len=512 \
  -rss_limit_mb=2048 -timeout=20 -artifact_prefix="$build/api/crashes/" -print_final_stats=1
