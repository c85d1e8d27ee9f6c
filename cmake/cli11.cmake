# CLI11 for the command-line programs (tools/cli, bench): Debian's libcli11-dev ships a CMake
# config; fall back to the bare header-only install. mxq_options adds tools/options (the shared
# option helpers) to it.
if(NOT TARGET mxq_options)
  find_package(CLI11 CONFIG QUIET)
  if(NOT TARGET CLI11::CLI11)
    find_path(MXQ_CLI11_INCLUDE_DIR CLI/CLI.hpp PATHS /usr/include /usr/local/include REQUIRED)
    add_library(CLI11::CLI11 INTERFACE IMPORTED)
    target_include_directories(CLI11::CLI11 INTERFACE "${MXQ_CLI11_INCLUDE_DIR}")
  endif()
  add_library(mxq_options INTERFACE)
  target_include_directories(mxq_options INTERFACE "${PROJECT_SOURCE_DIR}/tools/options")
  target_link_libraries(mxq_options INTERFACE CLI11::CLI11)
endif()
