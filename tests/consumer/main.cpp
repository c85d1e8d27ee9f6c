// Smoke test for an installed mxq: only the C ABI header, only the version call.
#include <mxq/mxq.h>

#include <cstdio>

int main() {
  const char* v = mxq_version_string();
  if (v == nullptr) {
    std::fprintf(stderr, "mxq_version_string() returned NULL\n");
    return 1;
  }
  std::printf("mxq %s\n", v);
  return 0;
}
