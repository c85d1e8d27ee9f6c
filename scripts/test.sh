#!/usr/bin/env bash
# Build mxq and run every test that needs no GPU (ctest label `cpu`).
# The README and CI both run exactly this: bash scripts/test.sh
# CMake preset `default` (build/): with nvcc at /usr/local/cuda/bin, CMake finds CUDA and compiles
# the CUDA backend (and tests/cuda, label `gpu`) for sm_90a and sm_100a, even without a GPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install_deps.sh

cmake --preset default
cmake --build --preset default

if grep -q '^MXQ_WITH_CUDA:INTERNAL=ON' build/CMakeCache.txt; then
  echo "test.sh: CUDA backend compiled: yes ($(grep '^CMAKE_CUDA_ARCHITECTURES:' build/CMakeCache.txt | cut -d= -f2))"
else
  echo "test.sh: CUDA backend compiled: no (CPU backend only)"
fi

ctest --preset default
