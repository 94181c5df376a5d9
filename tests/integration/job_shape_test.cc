// Jobs whose shape used to start and then hang or fail late (issue 20 §3), through the real
// `loom`: with framework=pytorch only the training types hold ranks, the same on the local and
// the yarn backend; an interpreter missing from this host, and a $LOOM_HOME inside the src dir,
// are refused at submit (exit 2, nothing started).

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "mini_loom.h"
#include "refused_submit.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using nlohmann::json;

// Two workers that meet in a gloo process group (check_torch_env.py --rendezvous, which fails
// after `timeout` s if a rank is missing) and a `reader` that prints what it was given.
std::vector<std::string> WorkersAndReader(const std::string& timeout) {
  return {"--src_dir", MiniLoom::Source(kScripts), "--executes", "check_torch_env.py", "--python_binary_path",
          "/usr/bin/python3", "--task_params", "--rendezvous --timeout " + timeout, "--conf",
          "loom.application.framework=pytorch", "--conf", "loom.worker.instances=2", "--conf",
          "loom.reader.instances=1", "--conf",
          "loom.reader.command=/usr/bin/python3 -c \"import os; print('READER', os.environ.get('RANK'), "
          "os.environ.get('WORLD_SIZE'))\"",
          "--conf", "loom.task.stop-grace-ms=1000"};
}

void ExpectWorkersAlone(const std::string& out_of_worker) {
  json env = json::parse(LineAfter(out_of_worker, "TORCHENV "));
  EXPECT_EQ(env["WORLD_SIZE"], 2) << out_of_worker;
  EXPECT_THAT(out_of_worker, HasSubstr("ranks unique: [0, 1]"));
}

TEST(WorldTypes, AReaderBesideTheWorkersHoldsNoRank) {
  MiniLoom loom;
  std::vector<std::string> args = {"submit"};
  for (auto& a : WorkersAndReader("30")) args.push_back(a);
  RunResult r = loom.Run(args);
  std::string id = loom.OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << loom.TaskOutput(id, {"worker", 0}, true);
  // Said at submit, with the key that would change it.
  EXPECT_THAT(r.err, HasSubstr("note: pytorch: reader:1 holds no rank (no RANK; WORLD_SIZE counts worker only)"));
  EXPECT_THAT(r.err, HasSubstr("--conf loom.application.world.jobtypes=worker,reader"));
  ExpectWorkersAlone(loom.TaskOutput(id, {"worker", 0}));
  ExpectWorkersAlone(loom.TaskOutput(id, {"worker", 1}));
  EXPECT_THAT(loom.TaskOutput(id, {"reader", 0}), HasSubstr("READER None 2"));
}

TEST(WorldTypes, ADeclaredTypeJoinsTheWorld) {
  MiniLoom loom;
  RunResult r = loom.Run({"submit", "--src_dir", MiniLoom::Source(kScripts), "--executes", "check_torch_env.py",
                          "--python_binary_path", "/usr/bin/python3", "--task_params", "--rendezvous --timeout 60",
                          "--conf", "loom.application.framework=pytorch", "--conf", "loom.worker.instances=2",
                          "--conf", "loom.reader.instances=1", "--conf",
                          "loom.application.world.jobtypes=worker,reader"});
  std::string id = loom.OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << loom.TaskOutput(id, {"reader", 0}, true);
  EXPECT_THAT(r.err, Not(HasSubstr("holds no rank")));
  for (const TaskId& t : std::vector<TaskId>{{"worker", 0}, {"worker", 1}, {"reader", 0}}) {
    EXPECT_THAT(loom.TaskOutput(id, t), HasSubstr("ranks unique: [0, 1, 2]")) << t.ToString();
  }
}

TEST(WorldTypes, TheSameOnYarn) {
  YarnDoubleCluster cluster;
  std::vector<std::string> args = WorkersAndReader("30");
  for (std::string a : {"--conf", "loom.am.memory=512m", "--conf", "loom.worker.memory=512m", "--conf",
                        "loom.reader.memory=256m"}) {
    args.push_back(a);
  }
  RunResult r = cluster.Submit(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("stderr") << cluster.ContainerLogs("am.log");
  EXPECT_THAT(r.err, HasSubstr("note: pytorch: reader:1 holds no rank"));
  std::string out = cluster.ContainerLogs("stdout");
  EXPECT_THAT(out, HasSubstr("ranks unique: [0, 1]"));
  EXPECT_THAT(out, HasSubstr("READER None 2"));
  EXPECT_THAT(out, Not(HasSubstr("\"WORLD_SIZE\": 3")));
}

// ---- Refused at submit --------------------------------------------------------------------

class RefusedAtSubmit : public RefusedSubmitTest {};

TEST_F(RefusedAtSubmit, PythonBinaryPathMissingOnThisHost) {
  RunResult r = loom_.Run({"submit", "--src_dir", src_, "--executes", "train.py", "--python_binary_path",
                           "/opt/nowhere/bin/python3", "--conf", "loom.worker.instances=1"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("--python_binary_path /opt/nowhere/bin/python3 does not exist on this host"));
  r = loom_.Run({"submit", "--src_dir", src_, "--executes", "train.py", "--python_binary_path", "python2.1",
                 "--conf", "loom.worker.instances=1"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("--python_binary_path python2.1: no such executable on the tasks' PATH"));
}

TEST_F(RefusedAtSubmit, LoomHomeInsideTheSrcDir) {
  // The src dir holds $LOOM_HOME: here the test's home itself (src_dir = its parent's view).
  RunResult r = loom_.Run({"submit", "--src_dir", loom_.home(), "--executes", "src/train.py",
                           "--python_binary_path", "/usr/bin/python3", "--conf", "loom.worker.instances=1"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("$LOOM_HOME (" + loom_.home() + ") is inside --src_dir " + loom_.home()));
  EXPECT_THAT(r.err, HasSubstr("set LOOM_HOME to a directory outside the src dir"));
  // Through a symlink to it, too.
  std::filesystem::path link = std::filesystem::path(loom_.home()).parent_path() /
                               ("loom_shape_link_" + std::to_string(::getpid()));
  std::filesystem::create_directory_symlink(loom_.home(), link);
  r = loom_.Run({"submit", "--src_dir", link.string(), "--executes", "src/train.py", "--python_binary_path",
                 "/usr/bin/python3", "--conf", "loom.worker.instances=1"});
  std::filesystem::remove(link);
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("is inside --src_dir " + link.string()));
}

}  // namespace
}  // namespace loom::testing
