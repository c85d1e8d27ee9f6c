#!/usr/bin/env bash
# Builds the safetensors reader's libFuzzer target with clang (ASan + UBSan) and fuzzes it for
# SECONDS (default 60), seeded with fuzz/seeds and the crafted bad files of tests/cli/bad.
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

mkdir -p "$build/corpus" "$build/crashes"
"$cxx" -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Itools/cli fuzz/fuzz_safetensors.cpp tools/cli/safetensors_reader.cpp \
  tools/cli/safetensors_dtype.cpp -o "$build/fuzz_safetensors"

cp -n fuzz/seeds/* tests/cli/bad/*.safetensors "$build/corpus/" 2>/dev/null || true
# -rss_limit_mb: the reader must not allocate without bound on hostile headers.
"$build/fuzz_safetensors" "$build/corpus" -max_total_time="$seconds" -max_len=4096 \
  -rss_limit_mb=1024 -timeout=10 -artifact_prefix="$build/crashes/" -print_final_stats=1
