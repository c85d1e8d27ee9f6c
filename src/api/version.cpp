// Library identity and capabilities.
#include <mxq/mxq.hpp>

#include "backend.hpp"

namespace mxq {

// Keep in step with project(mxq VERSION ...) in CMakeLists.txt.
const char* version() { return "0.1.0"; }

bool cuda_available() {
#ifdef MXQ_WITH_CUDA
  return cuda::device_present();
#else
  return false;
#endif
}

}  // namespace mxq
