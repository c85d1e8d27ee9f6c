// A slow, straightforward scalar quantize written from the logical definition (docs/spec.md, docs/
// layouts.md) on top of the independent oracle of tests/numerics/oracle.hpp. It shares no code with
// the backends or include/mxq/numerics, so that tests can cross-check them on small cases.
#pragma once
#include "support/quantize_runner.hpp"
#include "support/test_util.hpp"

namespace mxq::test {

// Expected outputs of quantize(input, req); `sizes` gives the buffer sizes (from quantize_sizes).
QuantizeResult reference_quantize(const HostTensor& input, const QuantizeRequest& req, const QuantizeSizes& sizes);

}  // namespace mxq::test
