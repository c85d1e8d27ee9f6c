// libFuzzer target for the safetensors reader (tools/cli/safetensors_reader.cpp): any byte string
// must either parse into a view whose every tensor lies inside the image, or throw
// SafetensorsError. ASan catches out-of-bounds reads; the loop below reads every tensor byte.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "safetensors_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto view = mxq::st::SafetensorsView::parse(data, size, "fuzz");
    uint64_t covered = view.header_bytes();
    unsigned checksum = 0;
    for (const auto& t : view.tensors()) {
      const uint8_t* bytes = view.data(t);
      for (uint64_t i = 0; i < t.bytes(); ++i) checksum += bytes[i];
      if (view.find(t.name) != &t) std::abort();  // names must be unique
      if (t.elements() < 0) std::abort();
      covered += t.bytes();
    }
    if (covered != size) std::abort();  // the tensors cover the data section exactly
    for (const auto& [key, value] : view.metadata()) checksum += key.size() + value.size();
    volatile unsigned sink = checksum;
    (void)sink;
  } catch (const mxq::st::SafetensorsError&) {
  }
  return 0;
}
