// Reading bf16/fp16/fp32 tensors into fp32 and writing fp32 back (RNE), and packing element codes
// (8-bit or two 4-bit codes per byte, element 2i in the low nibble) for the CPU backend.
#pragma once
#include <cstdint>
#include <cstring>

#include <mxq/numerics.hpp>
#include <mxq/tensor.hpp>

namespace mxq::cpu {

// Converts n elements starting at element offset `first` of `data` (dtype `t`) to fp32; widening
// is exact. memcpy: the pointer need not be aligned. n = 0 reads nothing (data may then be null).
inline void load_floats(const void* data, DType t, int64_t first, int64_t n, float* out) {
  if (n == 0) return;
  const auto* bytes = static_cast<const unsigned char*>(data) + first * dtype_size(t);
  if (t == DType::fp32) {
    std::memcpy(out, bytes, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  // One loop per dtype: the bf16 one (a shift per element) vectorizes.
  auto half_at = [bytes](int64_t i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, sizeof h);
    return h;
  };
  if (t == DType::bf16) {
    for (int64_t i = 0; i < n; ++i) out[i] = num::bf16_to_float(half_at(i));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = num::fp16_to_float(half_at(i));
  }
}

// n values of row `row` of batch `batch`, from column k0.
inline void load_row(const TensorView& in, int64_t batch, int64_t row, int64_t k0, int64_t n, float* out) {
  load_floats(in.data, in.dtype, batch * in.bstride() + row * in.rstride() + k0, n, out);
}

// Writes x, rounded to nearest even, as element `index` of an array of dtype `t`.
inline void store_float(void* data, DType t, int64_t index, float x) {
  auto* bytes = static_cast<unsigned char*>(data) + index * dtype_size(t);
  if (t == DType::fp32) {
    std::memcpy(bytes, &x, sizeof x);
    return;
  }
  const uint16_t h = t == DType::bf16 ? num::float_to_bf16_rne(x) : num::float_to_fp16_rne(x);
  std::memcpy(bytes, &h, sizeof h);
}

// Writes x[0, n) as elements first.. of an array of dtype `t` (rounded to nearest even); one loop
// per dtype.
inline void store_floats(void* data, DType t, int64_t first, int64_t n, const float* x) {
  if (n == 0) return;
  auto* bytes = static_cast<unsigned char*>(data) + first * dtype_size(t);
  if (t == DType::fp32) {
    std::memcpy(bytes, x, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = t == DType::bf16 ? num::float_to_bf16_rne(x[i]) : num::float_to_fp16_rne(x[i]);
    std::memcpy(bytes + 2 * i, &h, sizeof h);
  }
}

// Element i of a caller's float / int32 array, which need not be aligned (numpy can pass
// unaligned arrays; dereferencing them would be undefined behaviour).
template <class T>
inline T load_at(const T* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i, sizeof v);
  return v;
}
template <class T>
inline void store_at(T* p, int64_t i, T v) {
  std::memcpy(p + i, &v, sizeof v);
}

// Bytes of `n` codes of `bits` bits (n even for 4-bit codes).
constexpr int64_t code_bytes(int64_t n, int bits) { return bits == 8 ? n : n / 2; }

// Stores code `i` of a code row. 4-bit codes keep the other nibble, so neighbouring codes can be
// written in any order (by one thread).
template <int BITS>
inline void put_code(uint8_t* row, int64_t i, uint32_t code) {
  if constexpr (BITS == 8) {
    row[i] = static_cast<uint8_t>(code);
  } else {
    uint8_t& b = row[i / 2];
    b = (i & 1) ? static_cast<uint8_t>((b & 0x0F) | (code << 4)) : static_cast<uint8_t>((b & 0xF0) | (code & 0x0F));
  }
}

// Packs n one-per-byte 4-bit codes (n even) into n / 2 bytes, element 2i in the low nibble.
inline void pack_nibbles(const uint8_t* codes, int64_t n, uint8_t* row) {
  for (int64_t i = 0; i < n / 2; ++i) {
    row[i] = static_cast<uint8_t>((codes[2 * i] & 0x0Fu) | (codes[2 * i + 1] << 4));
  }
}

template <int BITS>
inline uint32_t get_code(const uint8_t* row, int64_t i) {
  if constexpr (BITS == 8) {
    return row[i];
  } else {
    return (i & 1) ? (row[i / 2] >> 4) : (row[i / 2] & 0x0Fu);
  }
}

}  // namespace mxq::cpu
