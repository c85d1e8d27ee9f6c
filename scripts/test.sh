#!/usr/bin/env bash
# Build mxq and run every test that needs no GPU (ctest label `cpu`).
# The README and CI both run exactly this: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install_deps.sh

# nvcc lives outside the default PATH; with it visible, CMake autodetects CUDA and the
# CUDA backend (and tests/cuda, label `gpu`) are compiled even without a GPU.
export PATH="/usr/local/cuda/bin:${PATH}"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"

if grep -q '^MXQ_WITH_CUDA:INTERNAL=ON' build/CMakeCache.txt; then
  echo "test.sh: CUDA backend compiled: yes ($(grep '^CMAKE_CUDA_ARCHITECTURES:' build/CMakeCache.txt | cut -d= -f2))"
else
  echo "test.sh: CUDA backend compiled: no (CPU backend only)"
fi

ctest --test-dir build -L cpu --output-on-failure -j2
