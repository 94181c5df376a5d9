// Bad input exits 2 with a message naming the problem, and starts nothing: no job directory,
// no process.

#include <fstream>

#include <gmock/gmock.h>

#include "mini_loom.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = loom_.home() + "/src";
    std::filesystem::create_directories(src_);
    std::ofstream(src_ + "/train.py") << "print('ok')\n";
  }
  RunResult Submit(std::vector<std::string> extra) {
    std::vector<std::string> args = {"submit", "--src_dir", src_, "--executes", "train.py",
                                     "--python_binary_path", "/usr/bin/python3"};
    args.insert(args.end(), extra.begin(), extra.end());
    return loom_.Run(args);
  }
  void ExpectNothingStarted(const RunResult& r) {
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_TRUE(loom_.JobIds().empty()) << "a job directory was created";
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr("submitted")));
  }
  MiniLoom loom_;
  std::string src_;
};

TEST_F(BadInputTest, MissingScript) {
  RunResult r = loom_.Run({"submit", "--src_dir", src_, "--executes", "nope.py", "--conf", "loom.worker.instances=1"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("--executes: nope.py does not exist"));
}

TEST_F(BadInputTest, NegativeInstances) {
  RunResult r = Submit({"--conf", "tony.worker.instances=-2"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("tony.worker.instances='-2': expected an integer >= 0"));
}

TEST_F(BadInputTest, MalformedMemory) {
  RunResult r = Submit({"--conf", "loom.worker.instances=1", "--conf", "loom.worker.memory=4x"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("loom.worker.memory='4x': expected a memory size"));
}

TEST_F(BadInputTest, UnknownKeyInConfFileGetsSuggestion) {
  std::string conf = loom_.home() + "/tony.xml";
  std::ofstream(conf) << "<configuration>"
                         "<property><name>tony.worker.instances</name><value>2</value></property>"
                         "<property><name>tony.worker.memroy</name><value>2g</value></property>"
                         "</configuration>";
  RunResult r = Submit({"-conf_file", conf});  // TonY's single-dash spelling
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("unknown key tony.worker.memroy (from " + conf + "); did you mean tony.worker.memory?"));
}

TEST_F(BadInputTest, MoreGpusThanTheHostHas) {
  RunResult r = Submit({"--conf", "loom.worker.instances=2", "--conf", "loom.worker.gpus=1", "--conf", "loom.local.gpus=1"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("the job needs 2 GPUs in total but this host has 1"));
}

TEST_F(BadInputTest, MalformedXml) {
  std::string conf = loom_.home() + "/broken.xml";
  std::ofstream(conf) << "<configuration><property><name>x</name>";
  RunResult r = Submit({"--conf_file", conf});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("malformed XML"));
}

TEST_F(BadInputTest, UnknownFlagAndBackend) {
  ExpectNothingStarted(Submit({"--conf", "loom.worker.instances=1", "--executez", "x"}));
  RunResult r = Submit({"--conf", "loom.worker.instances=1", "--cluster", "mesos"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("--cluster"));
}

TEST_F(BadInputTest, UnknownJobForStatusLogsKill) {
  for (const char* cmd : {"status", "logs", "kill"}) {
    RunResult r = loom_.Run({cmd, "job_nonexistent"});
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_THAT(r.err, HasSubstr("no job job_nonexistent"));
  }
}

}  // namespace
}  // namespace loom::testing
