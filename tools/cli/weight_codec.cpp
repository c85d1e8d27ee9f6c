#include "weight_codec.hpp"

#include <mxq/numerics/formats.hpp>
#include <mxq/numerics/layout.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "backend_memory.hpp"
#include "cpu/thread_pool.hpp"
#include "cli_error.hpp"
#include "quantize_runner.hpp"
#include "sqnr.hpp"

namespace mxq::cli {
namespace {

constexpr int64_t kChunkElements = int64_t{1} << 24;

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

TensorView view_of(const std::vector<int64_t>& shape, DType dtype, const void* data) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.batch = shape.size() == 3 ? shape[0] : 1;
  v.rows = shape[shape.size() - 2];
  v.cols = shape.back();
  return v;
}

// Where the rowwise codes and scales of a (batch, rows, cols) tensor lie, and the rows of a band of
// at most `band_elements` (whole 128-row tiles: both scale layouts start a fresh run of rows there).
struct RowwiseLayout {
  int64_t row_bytes, scale_row_bytes, scale_batch_bytes, band;
  RowwiseLayout(const QuantSettings& s, const TensorView& shape, int64_t band_elements) {
    const int64_t scale_cols = num::ceil_div(shape.cols, num::format_block(s.format));
    const bool blocked = s.layout == ScaleLayout::blocked;
    row_bytes = shape.cols * num::format_elem_bits(s.format) / 8;
    scale_row_bytes = blocked ? num::blocked_cols(scale_cols) : scale_cols;
    scale_batch_bytes = blocked ? num::blocked_bytes(shape.rows, scale_cols) : shape.rows * scale_cols;
    band = std::max<int64_t>(128, band_elements / std::max<int64_t>(shape.cols, 1) / 128 * 128);
  }
};

// Dequantizes rowwise-quantized (batch, rows, cols) data held in backend memory, a band of rows
// at a time. Bands start on multiples of 128 rows, where both scale layouts start a fresh run of
// rows: linear scales at row * ceil(cols/block), blocked at row * Cp (a whole 128-row tile).
// `band_elements` bounds each piece; `out` is the (reused) backend buffer the pieces land in.
void decode_rowwise(Backend backend, const QuantSettings& s, const TensorView& shape, const uint8_t* data,
                    const uint8_t* scales, const float* s_dec, DType dtype, int64_t band_elements, BackendBuffer& out,
                    const ChunkVisitor& visit) {
  const RowwiseLayout l(s, shape, band_elements);
  const int64_t row_bytes = l.row_bytes, scale_row_bytes = l.scale_row_bytes, scale_batch_bytes = l.scale_batch_bytes;
  const int64_t band = l.band;
  std::vector<uint8_t> host;  // cuda: the piece downloaded
  const int64_t out_size = dtype_size(dtype);

  for (int64_t e = 0; e < shape.batch; ++e) {
    for (int64_t r0 = 0; r0 < shape.rows; r0 += band) {
      const int64_t rows = std::min(band, shape.rows - r0);
      DequantizeArgs args;
      args.params = QuantizeParams{s.format, s.rule, s.layout, Direction::rowwise};
      args.rows = rows;
      args.cols = shape.cols;
      args.data = data + (e * shape.rows + r0) * row_bytes;
      args.scales = scales + e * scale_batch_bytes + r0 * scale_row_bytes;
      args.s_dec = s_dec ? s_dec + e : nullptr;
      args.out_dtype = dtype;
      args.backend = backend;
      out.resize(backend, rows * shape.cols * out_size);
      args.out = out.data();
      check(dequantize(args), "dequantize");
      const void* values = out.data();
      if (backend != Backend::cpu) {
        host.resize(out.size());
        out.download(host.data(), host.size());
        values = host.data();
      }
      visit(values, (e * shape.rows + r0) * shape.cols, rows * shape.cols);
    }
  }
}

// The SQNR decode_rowwise's bands of `band_elements` would give, with the cpu backend: each band is
// cut into units of whole 128-row tiles (a multiple of Sqnr::kPiece elements, as cols is a multiple
// of 8) that threads decode and sum while they are in cache; the pieces' sums are then added in
// the order one thread would add them, so the result is the same bit for bit. With `quantize_rows`
// (the whole weight's quantize call, linear scales, tensor_amax given for nvfp4) each unit is first
// quantized on its own: rowwise blocks never span rows, so the bytes are the whole call's.
double sqnr_by_units_cpu(const QuantSettings& s, const TensorView& shape, uint8_t* data, uint8_t* scales,
                         const float* s_dec, const uint8_t* reference, int64_t band_elements,
                         const QuantizeArgs* quantize_rows) {
  const RowwiseLayout l(s, shape, band_elements);
  const int64_t row_bytes = l.row_bytes, scale_row_bytes = l.scale_row_bytes, scale_batch_bytes = l.scale_batch_bytes;
  const int64_t band = l.band;
  // About 128K elements a unit: its fp32 decode (512 KiB) stays in a core's L2.
  constexpr int64_t kUnitElements = int64_t{1} << 17;
  const int64_t unit = std::min(band, std::max<int64_t>(128, kUnitElements / std::max<int64_t>(shape.cols, 1) / 128 * 128));

  struct Unit {
    int64_t batch, row, rows, first_piece;
  };
  std::vector<Unit> units;
  int64_t pieces = 0;
  for (int64_t e = 0; e < shape.batch; ++e)
    for (int64_t b0 = 0; b0 < shape.rows; b0 += band)
      for (int64_t r0 = b0; r0 < std::min(shape.rows, b0 + band); r0 += unit) {
        const int64_t rows = std::min({unit, shape.rows - r0, b0 + band - r0});
        units.push_back({e, r0, rows, pieces});
        pieces += num::ceil_div(rows * shape.cols, Sqnr::kPiece);
      }
  std::vector<SqnrSums> sums(static_cast<size_t>(pieces));
  const int64_t ref_size = dtype_size(shape.dtype);

  const int64_t threads = std::min<int64_t>(cpu::pool_threads(), static_cast<int64_t>(units.size()));
  cpu::run_on_pool(threads, [&](int64_t t) {
    std::vector<float> decoded;
    // Contiguous runs of units per thread, so each reads its own stretch of memory.
    const int64_t lo = static_cast<int64_t>(units.size()) * t / threads;
    const int64_t hi = static_cast<int64_t>(units.size()) * (t + 1) / threads;
    for (int64_t u = lo; u < hi; ++u) {
      const Unit& un = units[static_cast<size_t>(u)];
      const int64_t n = un.rows * shape.cols;
      uint8_t* unit_data = data + (un.batch * shape.rows + un.row) * row_bytes;
      uint8_t* unit_scales = scales + un.batch * scale_batch_bytes + un.row * scale_row_bytes;
      const uint8_t* ref = reference + (un.batch * shape.rows + un.row) * shape.cols * ref_size;
      const float* unit_s_dec = s_dec ? s_dec + un.batch : nullptr;
      float local_s_enc = 0, local_s_dec = 0;  // the tensor scales again, from units past a batch's first
      if (quantize_rows) {
        QuantizeArgs q = *quantize_rows;
        q.input.data = ref;
        q.input.batch = 1;
        q.input.rows = un.rows;
        if (q.tensor_amax) q.tensor_amax += un.batch;
        q.out.row_data = unit_data;
        q.out.row_scales = unit_scales;
        const bool first = un.row == 0;  // the one unit of its batch that stores the tensor scales
        if (q.out.s_enc) q.out.s_enc = first ? q.out.s_enc + un.batch : &local_s_enc;
        if (q.out.s_dec) q.out.s_dec = first ? q.out.s_dec + un.batch : &local_s_dec;
        q.backend = Backend::cpu;
        check(quantize(q), "quantize");
        unit_s_dec = q.out.s_dec;
      }
      decoded.resize(static_cast<size_t>(n));
      DequantizeArgs args;
      args.params = QuantizeParams{s.format, s.rule, s.layout, Direction::rowwise};
      args.rows = un.rows;
      args.cols = shape.cols;
      args.data = unit_data;
      args.scales = unit_scales;
      args.s_dec = unit_s_dec;
      args.out_dtype = DType::fp32;
      args.backend = Backend::cpu;
      args.out = decoded.data();
      check(dequantize(args), "dequantize");
      for (int64_t at = 0, p = un.first_piece; at < n; at += Sqnr::kPiece, ++p)
        sums[static_cast<size_t>(p)] = Sqnr::piece_sums(ref + at * ref_size, shape.dtype, decoded.data() + at,
                                                        std::min(Sqnr::kPiece, n - at));
    }
  });
  Sqnr sqnr;
  for (const SqnrSums& p : sums) sqnr.add(p);
  return sqnr.db();
}

}  // namespace

std::optional<DType> float_dtype(const std::string& dtype) {
  if (dtype == "BF16") return DType::bf16;
  if (dtype == "F16") return DType::fp16;
  if (dtype == "F32") return DType::fp32;
  return std::nullopt;
}

const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::bf16: return "BF16";
    case DType::fp16: return "F16";
    case DType::fp32: return "F32";
    default: return "U8";
  }
}

std::string unquantizable_reason(const st::TensorInfo& t, Format format) {
  if (!float_dtype(t.dtype)) return "not bf16/fp16/fp32";
  if (t.shape.size() != 2 && t.shape.size() != 3) return "not 2-D or 3-D";
  if (t.elements() == 0) return "empty";
  if (t.shape.back() % num::format_block(format) != 0)
    return "input dim " + std::to_string(t.shape.back()) + " not a multiple of " +
           std::to_string(num::format_block(format));
  return "";
}

std::vector<float> weight_amax(Backend backend, const st::TensorInfo& t, const uint8_t* bytes) {
  const TensorView v = view_of(t.shape, *float_dtype(t.dtype), nullptr);
  Staged input = stage(backend, bytes, t.bytes());
  BackendBuffer out(backend, v.batch * sizeof(float));
  TensorView staged = v;
  staged.data = input.ptr;
  check(tensor_amax(staged, out.as<float>(), backend), "tensor_amax");
  return out.download_all<float>();
}

void WeightEncoder::check_sizes(const st::TensorInfo& t) const {
  // The checkpoint's shapes and the library's sizes are two statements of one layout.
  if (q_.sizes.row_data_bytes != product(data_shape(t.shape, settings_.format)) ||
      q_.sizes.row_scale_bytes != product(scale_shape(t.shape, settings_)))
    throw CliError(kExitFailure,
                   "internal: stored shapes of '" + t.name + "' disagree with the library's output sizes");
}

HostBytes WeightEncoder::to_host(const BackendBuffer& buffer, std::vector<uint8_t>& host) const {
  if (backend_ == Backend::cpu) return {buffer.data(), buffer.size()};
  host.resize(buffer.size());
  buffer.download(host.data(), host.size());
  return {host.data(), host.size()};
}

EncodedWeight WeightEncoder::encode(const st::TensorInfo& t, const uint8_t* bytes, const float* tensor_amax,
                                    bool stats) {
  const QuantSettings& s = settings_;
  const DType dtype = *float_dtype(t.dtype);
  Staged input = stage(backend_, bytes, t.bytes());
  QuantizeJob job{
      view_of(t.shape, dtype, input.ptr), QuantizeParams{s.format, s.rule, s.layout, Direction::rowwise}, {}};
  if (tensor_amax) {
    amax_.resize(backend_, job.input.batch * sizeof(float));
    amax_.upload(tensor_amax, job.input.batch * sizeof(float));
    job.tensor_amax = amax_.as<float>();
  }
  // The SQNR sums pieces of about a million elements (their order fixes the result's bits).
  constexpr int64_t kStatsBand = int64_t{1} << 20;
  // cpu with stats and linear scales: each unit of rows is quantized, decoded and summed while it is
  // in cache. nvfp4 then needs the amax up front (the whole call would find the same one).
  const bool fused = backend_ == Backend::cpu && stats && s.layout == ScaleLayout::linear;
  std::optional<double> sqnr_db;
  if (fused) {
    QuantizeArgs whole = prepare_into(backend_, job, q_);
    if (s.format == Format::nvfp4 && !whole.tensor_amax) {
      amax_.resize(backend_, job.input.batch * sizeof(float));
      check(mxq::tensor_amax(job.input, amax_.as<float>(), backend_), "tensor_amax");
      whole.tensor_amax = amax_.as<float>();
    }
    check_sizes(t);
    const auto start = std::chrono::steady_clock::now();
    sqnr_db = sqnr_by_units_cpu(s, job.input, q_.row_data.as<uint8_t>(), q_.row_scales.as<uint8_t>(),
                                nullptr, bytes, kStatsBand, &whole);
    q_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } else {
    quantize_into(backend_, job, q_);
    check_sizes(t);
  }
  EncodedWeight w;
  w.seconds = q_.seconds;
  w.data = to_host(q_.row_data, host_data_);
  w.scales = to_host(q_.row_scales, host_scales_);
  if (s.format == Format::nvfp4) w.global_scale = to_host(q_.s_enc, host_global_scale_);
  w.sqnr_db = sqnr_db;
  if (!stats || fused) return w;

  if (backend_ == Backend::cpu) {
    w.sqnr_db = sqnr_by_units_cpu(s, job.input, q_.row_data.as<uint8_t>(), q_.row_scales.as<uint8_t>(),
                                  q_.s_dec.as<float>(), bytes, kStatsBand, nullptr);
    return w;
  }
  Sqnr sqnr;
  decode_rowwise(backend_, s, job.input, static_cast<const uint8_t*>(q_.row_data.data()),
                 static_cast<const uint8_t*>(q_.row_scales.data()), static_cast<const float*>(q_.s_dec.data()),
                 DType::fp32, kStatsBand, decoded_, [&](const void* values, int64_t offset, int64_t count) {
                   sqnr.add(bytes + offset * dtype_size(dtype), dtype, static_cast<const float*>(values), count);
                 });
  w.sqnr_db = sqnr.db();
  return w;
}

std::optional<StoredWeight> find_stored_weight(const st::SafetensorsView& view, const st::TensorInfo& t,
                                               const QuantSettings& s) {
  const bool fp4 = num::format_elem_bits(s.format) == 4;
  const std::string suffix = "_packed";
  std::string name = t.name;
  if (fp4) {
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      return std::nullopt;
    name.resize(name.size() - suffix.size());
  }
  const QuantizedNames names = quantized_names(name, s.format);
  StoredWeight w;
  w.name = name;
  w.data = &t;
  w.scale = view.find(names.scale);
  if (!w.scale || t.dtype != data_dtype(s.format)) return std::nullopt;

  const std::string where = view.find(names.scale)->name;
  auto bad = [&](const std::string& why) -> st::SafetensorsError {
    return st::SafetensorsError("quantized weight '" + name + "': " + why);
  };
  if (t.shape.size() != 2 && t.shape.size() != 3) throw bad("data is not 2-D or 3-D");
  for (int64_t d : t.shape)
    if (d > 0x7FFFFFFF) throw bad("a dimension of the data exceeds 2^31 - 1");
  w.shape = t.shape;
  if (fp4) w.shape.back() *= 2;
  if (w.scale->dtype != scale_dtype(s.format) || w.scale->shape != scale_shape(w.shape, s))
    throw bad("'" + where + "' has the wrong dtype or shape for " + t.dtype + " data of shape " +
              std::to_string(t.shape.size()) + "-D");
  if (s.format == Format::nvfp4) {
    w.global_scale = view.find(names.global_scale);
    const int64_t batch = w.shape.size() == 3 ? w.shape[0] : 1;
    if (!w.global_scale || w.global_scale->dtype != "F32" || w.global_scale->elements() != batch ||
        w.global_scale->shape.size() != 1)
      throw bad("needs '" + names.global_scale + "' F32 of shape (" + std::to_string(batch) + ")");
  }
  return w;
}

void decode_weight(Backend backend, const QuantSettings& s, const st::SafetensorsView& view, const StoredWeight& w,
                   DType dtype, const ChunkVisitor& visit) {
  if (product(w.shape) == 0) return;
  Staged data = stage(backend, view.data(*w.data), w.data->bytes());
  Staged scales = stage(backend, view.data(*w.scale), w.scale->bytes());
  BackendBuffer s_dec;
  if (w.global_scale) {
    // The checkpoint stores the encode scale (compressed-tensors); decoding divides by it, as a
    // loader does.
    std::vector<float> dec(static_cast<size_t>(w.global_scale->elements()));
    std::memcpy(dec.data(), view.data(*w.global_scale), dec.size() * sizeof(float));
    for (float& x : dec) x = 1.0f / x;
    s_dec = BackendBuffer(backend, dec.size() * sizeof(float));
    s_dec.upload(dec.data(), dec.size() * sizeof(float));
  }
  BackendBuffer out;
  decode_rowwise(backend, s, view_of(w.shape, dtype, nullptr), static_cast<const uint8_t*>(data.ptr),
                 static_cast<const uint8_t*>(scales.ptr), w.global_scale ? s_dec.as<float>() : nullptr, dtype,
                 kChunkElements, out, visit);
}

}  // namespace mxq::cli
