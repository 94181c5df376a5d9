#pragma once
// A directory of the running test's own, for a fixture's files: under gtest's temp dir, named
// after the fixture, this process and the test, so that tests run side by side (ctest -j) never
// share one. For test targets only.

#include <unistd.h>

#include <string>

#include "core/files.h"
#include "core/testing.h"

namespace loom::testing {

// `<gtest temp dir>/<prefix>.<pid>.<test name>`, created empty; failing to create it fails the test.
inline std::string MakeTestDir(const std::string& prefix) {
  std::string dir = ::testing::TempDir() + "/" + prefix + "." + std::to_string(::getpid()) + "." +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name();
  (void)RemoveTree(dir);
  EXPECT_OK(MakeDirs(dir));
  return dir;
}

}  // namespace loom::testing
