/* mxq C ABI: plain structs and functions over the C++ API (include/mxq/mxq.hpp), for C callers and
 * Python ctypes. C99. Every function returns an int32 status (MXQ_OK or an MXQ_ERR_* code, the
 * values of mxq::Code); on failure nothing was written and mxq_last_error() gives the message.
 *
 * Structs hold only fixed-width integers and pointers in the order listed (natural C alignment, no
 * packing pragmas), so a ctypes.Structure with the same fields in the same order matches: both
 * insert the same 4 padding bytes where an int32_t is followed by a pointer or int64_t.
 * tests/cpu/c_abi_test.cpp pins the LP64 offsets and sizes. Enum
 * arguments are int32_t fields holding the MXQ_* constants below (the values of
 * include/mxq/types.hpp); unknown values are rejected with MXQ_ERR_INVALID_ARGUMENT. Defaults of the
 * C++ API that are not zero must be set explicitly here: batch = 1 for 2-D tensors, direction,
 * layout, alignment. */
#ifndef MXQ_MXQ_H
#define MXQ_MXQ_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this C ABI (the structs and functions below). Raised whenever a struct, a field or
 * a function changes; a caller built for another version must not use the library
 * (mxq_abi_version() says which one it is). */
#define MXQ_ABI_VERSION 3

/* Status codes (mxq::Code). */
#define MXQ_OK 0
#define MXQ_ERR_INVALID_ARGUMENT 1
#define MXQ_ERR_UNSUPPORTED 2
#define MXQ_ERR_CUDA 3
#define MXQ_ERR_INVALID_OFFSETS 4

/* mxq::DType */
#define MXQ_DTYPE_BF16 0
#define MXQ_DTYPE_FP16 1
#define MXQ_DTYPE_FP32 2
#define MXQ_DTYPE_U8 3
/* mxq::Format */
#define MXQ_FORMAT_MXFP8 0
#define MXQ_FORMAT_MXFP8_E5M2 1
#define MXQ_FORMAT_MXFP4 2
#define MXQ_FORMAT_NVFP4 3
/* mxq::ScaleRule */
#define MXQ_RULE_RCEIL 0
#define MXQ_RULE_FLOOR 1
/* mxq::ScaleLayout */
#define MXQ_LAYOUT_LINEAR 0
#define MXQ_LAYOUT_BLOCKED 1
/* mxq::Direction (bit flags) */
#define MXQ_DIRECTION_ROWWISE 1
#define MXQ_DIRECTION_COLWISE 2
#define MXQ_DIRECTION_BOTH 3
/* mxq::Backend */
#define MXQ_BACKEND_AUTO 0
#define MXQ_BACKEND_CPU 1
#define MXQ_BACKEND_CUDA 2
#define MXQ_BACKEND_CUDA_UNCHECKED 3 /* cuda without the per-pointer memory-kind queries */
/* mxq::ScaleGroups */
#define MXQ_SCALE_GROUPS_NONE 0
#define MXQ_SCALE_GROUPS_ALONG_M 1
#define MXQ_SCALE_GROUPS_ALONG_K 2

/* mxq::TensorView. Fields: data, batch, rows, cols, row_stride, batch_stride, dtype. */
struct mxq_tensor_view {
  const void* data;
  int64_t batch; /* 1 for 2-D */
  int64_t rows;
  int64_t cols;         /* contiguous dimension */
  int64_t row_stride;   /* elements; 0 means cols */
  int64_t batch_stride; /* elements; 0 means rows * row_stride */
  int32_t dtype;        /* MXQ_DTYPE_* */
};

/* mxq::TokenGroups. Fields: ends, count. */
struct mxq_token_groups {
  const int32_t* ends; /* [count] cumulative end offsets, in the memory of the tensor */
  int64_t count;       /* 0: no groups */
};

/* mxq::QuantizeArgs, flattened. Fields: input, format, rule, layout, direction, groups,
 * pad_rowwise, pad_colwise, tensor_amax, row_data, row_scales, col_data, col_scales, s_enc, s_dec,
 * padded_starts, padded_ends, backend, stream, amax (out.amax, last so that earlier offsets stay). */
struct mxq_quantize_args {
  struct mxq_tensor_view input;
  int32_t format;    /* MXQ_FORMAT_* */
  int32_t rule;      /* MXQ_RULE_* */
  int32_t layout;    /* MXQ_LAYOUT_* */
  int32_t direction; /* MXQ_DIRECTION_* */
  struct mxq_token_groups groups;
  int32_t pad_rowwise; /* 0 or a power of two */
  int32_t pad_colwise;
  const float* tensor_amax; /* nvfp4: optional [batch] */
  void* row_data;
  uint8_t* row_scales;
  void* col_data;
  uint8_t* col_scales;
  float* s_enc;           /* nvfp4: [batch] */
  float* s_dec;           /* nvfp4: [batch] */
  int32_t* padded_starts; /* optional with padding: [G] */
  int32_t* padded_ends;
  int32_t backend; /* MXQ_BACKEND_* */
  void* stream;    /* cudaStream_t */
  float* amax;     /* optional [batch]: max |x| of each batch of the input (QuantizeOutputs::amax) */
};

/* mxq::QuantizeSizes. Fields: row_data_rows, col_data_cols, row_data_bytes, row_scale_bytes,
 * col_data_bytes, col_scale_bytes, tensor_scale_count, padded_offset_count. */
struct mxq_quantize_sizes {
  int64_t row_data_rows;
  int64_t col_data_cols;
  int64_t row_data_bytes;
  int64_t row_scale_bytes;
  int64_t col_data_bytes;
  int64_t col_scale_bytes;
  int64_t tensor_scale_count;
  int64_t padded_offset_count;
};

/* mxq::DequantizeArgs, flattened. Fields: format, rule, layout, direction, batch, rows, cols,
 * groups, pad_rowwise, pad_colwise, data, scales, s_dec, out, out_dtype, backend, stream. */
struct mxq_dequantize_args {
  int32_t format;
  int32_t rule;
  int32_t layout;
  int32_t direction; /* rowwise or colwise */
  int64_t batch;
  int64_t rows;
  int64_t cols;
  struct mxq_token_groups groups;
  int32_t pad_rowwise;
  int32_t pad_colwise;
  const void* data;
  const uint8_t* scales;
  const float* s_dec; /* nvfp4: [batch] */
  void* out;
  int32_t out_dtype; /* MXQ_DTYPE_BF16/FP16/FP32 */
  int32_t backend;
  void* stream;
};

/* mxq::PadArgs. Fields: input, groups, alignment, out, padded_starts, padded_ends, backend,
 * stream, amax (optional, appended last so that the older fields keep their offsets). */
struct mxq_pad_args {
  struct mxq_tensor_view input;
  struct mxq_token_groups groups;
  int32_t alignment; /* power of two, e.g. 32 */
  void* out;
  int32_t* padded_starts;
  int32_t* padded_ends;
  int32_t backend;
  void* stream;
  float* amax; /* optional [1] */
};

/* mxq::UnpadArgs. Fields: input, groups, alignment, rows, out, backend, stream, amax (optional,
 * last). */
struct mxq_unpad_args {
  struct mxq_tensor_view input;
  struct mxq_token_groups groups;
  int32_t alignment;
  int64_t rows; /* M */
  void* out;
  int32_t backend;
  void* stream;
  float* amax; /* optional [1] */
};

/* mxq::SwizzleArgs. Fields: in, batch, rows, cols, group_axis, groups, out, backend, stream. */
struct mxq_swizzle_args {
  const uint8_t* in;
  int64_t batch;
  int64_t rows;
  int64_t cols;
  int32_t group_axis; /* MXQ_SCALE_GROUPS_* */
  struct mxq_token_groups groups;
  uint8_t* out;
  int32_t backend;
  void* stream;
};

/* mxq::SwigluParams. Fields: variant, layout, alpha, limit. */
struct mxq_swiglu_params {
  int32_t variant; /* MXQ_SWIGLU_SILU or MXQ_SWIGLU_CLAMPED */
  int32_t layout;  /* MXQ_SWIGLU_CONCATENATED or MXQ_SWIGLU_INTERLEAVED */
  float alpha;     /* clamped only */
  float limit;     /* clamped only */
};
#define MXQ_SWIGLU_SILU 0
#define MXQ_SWIGLU_CLAMPED 1
#define MXQ_SWIGLU_CONCATENATED 0
#define MXQ_SWIGLU_INTERLEAVED 1

/* mxq::SwigluArgs. Fields: quantize (its input is h (M, 2F); the rest says how a (M, F) is
 * quantized), swiglu, weights, activation. */
struct mxq_swiglu_args {
  struct mxq_quantize_args quantize;
  struct mxq_swiglu_params swiglu;
  const float* weights; /* optional [M] */
  void* activation;     /* optional (M, F) in h's dtype; required by the cuda backend */
};

/* mxq::SwigluBackwardArgs. Fields: quantize (input h; how dh (M, 2F) is quantized), grad (dA),
 * swiglu, weights, grad_input, grad_weights. */
struct mxq_swiglu_backward_args {
  struct mxq_quantize_args quantize;
  struct mxq_tensor_view grad;
  struct mxq_swiglu_params swiglu;
  const float* weights; /* optional [M] */
  void* grad_input;     /* optional (M, 2F) in h's dtype; required by the cuda backend */
  float* grad_weights;  /* [M], with weights */
};

int32_t mxq_quantize(const struct mxq_quantize_args* args);
int32_t mxq_quantize_sizes(const struct mxq_quantize_args* args, struct mxq_quantize_sizes* sizes);
int32_t mxq_dequantize(const struct mxq_dequantize_args* args);
int32_t mxq_dequantize_size(const struct mxq_dequantize_args* args, int64_t* out_elements);
int32_t mxq_tensor_amax(const struct mxq_tensor_view* input, float* out, int32_t backend, void* stream);
int32_t mxq_pad(const struct mxq_pad_args* args);
int32_t mxq_pad_rows(const struct mxq_pad_args* args, int64_t* rows);
int32_t mxq_unpad(const struct mxq_unpad_args* args);
int32_t mxq_swizzle(const struct mxq_swizzle_args* args);
int32_t mxq_swizzle_size(const struct mxq_swizzle_args* args, int64_t* bytes);
int32_t mxq_unswizzle(const struct mxq_swizzle_args* args, uint8_t* linear_out);
int32_t mxq_swiglu_quantize(const struct mxq_swiglu_args* args);
int32_t mxq_swiglu_quantize_sizes(const struct mxq_swiglu_args* args, struct mxq_quantize_sizes* sizes);
int32_t mxq_swiglu_backward_quantize(const struct mxq_swiglu_backward_args* args);
int32_t mxq_swiglu_backward_quantize_sizes(const struct mxq_swiglu_backward_args* args,
                                           struct mxq_quantize_sizes* sizes);
/* Synchronises (the only call that does); MXQ_ERR_INVALID_OFFSETS names the first bad index. */
int32_t mxq_validate_group_ends(const struct mxq_token_groups* groups, int64_t M, int32_t backend, void* stream);

const char* mxq_version_string(void);
/* MXQ_ABI_VERSION of the library's build. */
int32_t mxq_abi_version(void);
/* 1 when built with CUDA and a device is present, else 0. */
int32_t mxq_cuda_available(void);
/* Message of the last failed call on this thread ("" if none). Valid until the next failing call
 * on this thread. */
const char* mxq_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* MXQ_MXQ_H */
