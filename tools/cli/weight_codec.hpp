// One weight of a checkpoint through the library: encode (quantize rowwise along the input
// dimension K, plus the SQNR of its round trip) and decode (validate the stored tensors of a
// quantized weight against what its settings imply, then dequantize). Shared by `mxq quantize`,
// `mxq dequantize` and `mxq inspect --stats`.
#pragma once
#include <mxq/mxq.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend_memory.hpp"
#include "compressed_tensors.hpp"
#include "quantize_runner.hpp"
#include "safetensors_reader.hpp"

namespace mxq::cli {

std::optional<DType> float_dtype(const std::string& safetensors_dtype);  // BF16, F16, F32
const char* safetensors_dtype(DType dtype);

// Why a float tensor cannot be quantized with `format` ("" when it can): 2-D or 3-D, non-empty,
// the input dimension a multiple of the block.
std::string unquantizable_reason(const st::TensorInfo& t, Format format);

// Bytes of one output tensor, in host memory owned by the WeightEncoder that produced them.
struct HostBytes {
  const void* data = nullptr;
  size_t size = 0;
};

struct EncodedWeight {
  HostBytes data, scales;
  HostBytes global_scale;         // nvfp4: the encode scale per expert (compressed-tensors), fp32
  std::optional<double> sqnr_db;  // with stats only
  double seconds = 0;             // quantize call alone
};

// Encodes the weights of a checkpoint one after another into buffers kept from weight to weight,
// so that only a weight larger than all before it touches fresh memory.
class WeightEncoder {
 public:
  WeightEncoder(Backend backend, const QuantSettings& s) : backend_(backend), settings_(s) {}

  // `tensor_amax` (nvfp4, optional): one float per batch on the host, the amax the global scale is
  // derived from (shared by a fused group); null: the weight's own. `stats`: also the SQNR of the
  // round trip (a decode of the weight; on cpu in the same pass, 128 rows at a time). The result
  // points into this encoder's buffers and stays valid until the next encode.
  EncodedWeight encode(const st::TensorInfo& t, const uint8_t* bytes, const float* tensor_amax, bool stats);

 private:
  HostBytes to_host(const BackendBuffer& buffer, std::vector<uint8_t>& host) const;
  void check_sizes(const st::TensorInfo& t) const;  // throws when q_ disagrees with t's stored shapes

  Backend backend_;
  QuantSettings settings_;
  Quantized q_;
  BackendBuffer amax_, decoded_;
  std::vector<uint8_t> host_data_, host_scales_, host_global_scale_;  // cuda: downloads
};

// max |x| of each batch of a float weight (1 float for 2-D), as the library finds it.
std::vector<float> weight_amax(Backend backend, const st::TensorInfo& t, const uint8_t* bytes);

// The stored tensors of one quantized weight.
struct StoredWeight {
  std::string name;            // the weight's name before quantization ("x.weight")
  std::vector<int64_t> shape;  // its logical shape
  const st::TensorInfo* data = nullptr;
  const st::TensorInfo* scale = nullptr;
  const st::TensorInfo* global_scale = nullptr;  // nvfp4 only
};

// If `t` is the data tensor of a quantized weight, its StoredWeight. Throws SafetensorsError when
// the partner tensors exist but have the wrong dtype or shape (untrusted input).
std::optional<StoredWeight> find_stored_weight(const st::SafetensorsView& view, const st::TensorInfo& t,
                                               const QuantSettings& s);

// Receives consecutive pieces of a dequantized weight in row-major order: `count` elements of
// `dtype` starting at element `offset`. Pieces are bounded (about 16M elements), so a weight is
// never dequantized whole.
using ChunkVisitor = std::function<void(const void* values, int64_t offset, int64_t count)>;

// Dequantizes a stored weight piece by piece into `dtype` (bf16, fp16 or fp32).
void decode_weight(Backend backend, const QuantSettings& s, const st::SafetensorsView& view, const StoredWeight& w,
                   DType dtype, const ChunkVisitor& visit);

}  // namespace mxq::cli
