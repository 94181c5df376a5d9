#pragma once
// The fixture of the job spec's unit tests: a src dir holding train.py, and a config that runs
// it (--src_dir, --executes), in a directory of the test process's own.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/config/config.h"
#include "core/testing.h"

namespace loom::testing {

class JobSpecFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("loom_job_spec_" + std::string(::testing::UnitTest::GetInstance()->current_test_suite()->name()) + "_" +
            std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "src");
    std::ofstream(dir_ / "src" / "train.py") << "print('hi')\n";
    conf_.Set("loom.application.src-dir", (dir_ / "src").string(), "--src_dir");
    conf_.Set("loom.application.executes", "train.py", "--executes");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  config::Config conf_;
};

}  // namespace loom::testing
