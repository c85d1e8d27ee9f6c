// Placeholder written by the build-system owner so that libmxq and the install_consumer
// test link before the real C ABI lands.  Whoever writes include/mxq/mxq.h owns this
// file: include mxq.h here (or move the definition) and derive the string from the
// project version.
extern "C" const char* mxq_version_string() { return "0.1.0"; }
