// Library identity and capabilities.
#include <mxq/mxq.hpp>

#include "backend.hpp"

namespace mxq {

// MXQ_VERSION comes from project(mxq VERSION ...) in CMakeLists.txt.
const char* version() { return MXQ_VERSION; }

bool cuda_available() {
#ifdef MXQ_WITH_CUDA
  return cuda::device_present();
#else
  return false;
#endif
}

}  // namespace mxq
