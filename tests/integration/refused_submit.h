#pragma once
// RefusedSubmitTest: a fixture for `loom submit`s that must be refused (exit 2, the problem named)
// with nothing started: no job directory, no process. Its home holds src/train.py to submit.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>

#include "mini_loom.h"

namespace loom::testing {

class RefusedSubmitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = loom_.home() + "/src";
    std::filesystem::create_directories(src_);
    std::ofstream(src_ + "/train.py") << "print('ok')\n";
  }
  // `loom submit` of src/train.py under /usr/bin/python3, then `extra`.
  RunResult Submit(std::vector<std::string> extra) {
    std::vector<std::string> args = {"submit", "--src_dir", src_, "--executes", "train.py",
                                     "--python_binary_path", "/usr/bin/python3"};
    args.insert(args.end(), extra.begin(), extra.end());
    return loom_.Run(args);
  }
  void ExpectNothingStarted(const RunResult& r) {
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_TRUE(loom_.JobIds().empty()) << "a job directory was created";
    EXPECT_THAT(r.out, Not(HasSubstr("submitted")));
    // Every process Loom starts carries this home in its environment.
    EXPECT_TRUE(FindProcessesWithEnv("LOOM_HOME=" + loom_.home()).empty()) << "a process was started";
  }
  // Submit(extra) starts nothing, and its error says each of `says`.
  void ExpectRefused(std::vector<std::string> extra, const std::vector<std::string>& says) {
    RunResult r = Submit(std::move(extra));
    ExpectNothingStarted(r);
    for (const std::string& s : says) EXPECT_THAT(r.err, HasSubstr(s));
  }

  MiniLoom loom_;
  std::string src_;
};

}  // namespace loom::testing
