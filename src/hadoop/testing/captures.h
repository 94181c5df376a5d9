#pragma once
// Where the recorded Hadoop 3.3.6 traffic of tests/data/yarn-captures/ is, and reading a file
// of it: one place for what every test of the recordings needed (a kCaptures path and a
// Capture() reader were copied into each). For test targets only: loom_test defines
// LOOM_TEST_SOURCE_DIR.

#include <string>

#include "core/files.h"
#include "core/testing.h"

#ifndef LOOM_TEST_SOURCE_DIR
#error "hadoop/testing/captures.h is for tests: loom_test defines LOOM_TEST_SOURCE_DIR"
#endif

namespace loom::hadoop::testing {

// tests/data/yarn-captures/ of the source tree, with the trailing slash.
inline std::string CaptureDir() { return std::string(LOOM_TEST_SOURCE_DIR) + "/tests/data/yarn-captures/"; }

// The bytes of `name`, a path under CaptureDir() ("webhdfs/01-nn-9870-MKDIRS.s2c.bin"); a
// file that cannot be read fails the test and gives "".
inline std::string ReadCapture(const std::string& name) {
  Result<std::string> bytes = ReadFile(CaptureDir() + name);
  EXPECT_OK(bytes);
  return bytes.value_or("");
}

}  // namespace loom::hadoop::testing
