// Per-format traits and runtime dispatch (docs/spec.md section 1): block sizes, element widths, maxima,
// reciprocals, NaN bytes, and encode_element's poison switch.
#include <gtest/gtest.h>

#include <cmath>

#include "mxq/numerics/formats.hpp"
#include "oracle.hpp"

namespace num = mxq::num;
using mxq::Format;

namespace {

struct Facts {
  Format format;
  int block, elem_bits;
  bool nv;
  double max_value;
  int emax;
  uint8_t scale_nan;
  uint32_t nan_code;
};

const Facts kFacts[] = {
    {Format::mxfp8, 32, 8, false, 448.0, 8, 255, 0x7F},
    {Format::mxfp8_e5m2, 32, 8, false, 57344.0, 15, 255, 0x7F},
    {Format::mxfp4, 32, 4, false, 6.0, 2, 255, 0x7},
    {Format::nvfp4, 16, 4, true, 6.0, 2, 0x7F, 0x7},
};

}  // namespace

TEST(FormatTraits, DispatchMatchesSpecTable) {
  for (const Facts& f : kFacts) {
    EXPECT_EQ(num::format_block(f.format), f.block);
    EXPECT_EQ(num::format_elem_bits(f.format), f.elem_bits);
    num::dispatch_format(f.format, [&](auto traits) {
      using T = decltype(traits);
      EXPECT_EQ(T::block, f.block);
      EXPECT_EQ(T::elem_bits, f.elem_bits);
      EXPECT_EQ(T::nv, f.nv);
      EXPECT_EQ(T::max_value, f.max_value);
      EXPECT_EQ(T::Elem::emax, f.emax);
      EXPECT_EQ(T::scale_nan, f.scale_nan);
      EXPECT_EQ(T::Elem::nan_code, f.nan_code);
      EXPECT_EQ(oracle::bits_of(T::inv_max), oracle::bits_of(static_cast<float>(1.0 / f.max_value)));
    });
  }
}

TEST(FormatTraits, EncodeElementPoisonSwitch) {
  EXPECT_EQ(num::encode_element<num::MXFP8>(3.0f, 0.5f, false), num::encode<num::E4M3>(1.5f));
  EXPECT_EQ(num::encode_element<num::MXFP8>(3.0f, 0.5f, true), 0x7Fu);
  EXPECT_EQ(num::encode_element<num::MXFP8_E5M2>(-3.0f, 0.5f, true), 0x7Fu);
  EXPECT_EQ(num::encode_element<num::MXFP4>(3.0f, 0.5f, false), 0x3u);  // 1.5
  EXPECT_EQ(num::encode_element<num::MXFP4>(-3.0f, 0.5f, true), 0x7u);
  EXPECT_EQ(num::encode_element<num::NVFP4>(-3.0f, 0.5f, false), 0xBu);
  EXPECT_EQ(num::encode_element<num::NVFP4>(-3.0f, 0.5f, true), 0x7u);
  // No flush to zero: the multiplier of scale byte 254 is the fp32 subnormal 2^-127.
  EXPECT_EQ(num::encode_element<num::MXFP8>(0x1p120f, num::e8m0_reciprocal(254), false), 0x04u);
  EXPECT_EQ(num::encode_element<num::MXFP8>(0x1p-126f, 0x1p117f, false), 0x01u);  // 2^-9
}

static_assert(num::MXFP8::block == 32 && num::NVFP4::block == 16, "block sizes");
static_assert(num::format_elem_bits(Format::mxfp4) == 4, "constexpr elem bits");
