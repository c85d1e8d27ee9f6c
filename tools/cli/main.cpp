// Placeholder `mxq` command (build-system bootstrap); replace with the real CLI.
#include <mxq/mxq.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "demo") == 0) {
    std::printf("mxq demo: not yet implemented\n");
    return 1;
  }
  std::printf("mxq %s (placeholder CLI)\nusage: mxq demo\n", mxq_version_string());
  return argc >= 2 ? 1 : 0;
}
