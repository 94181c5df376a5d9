// The real `loom` on an older userland: inside a Debian 11 (bullseye) root (scripts/
// bullseye-root.sh, cached in the build dir), as on a node whose OS is older than the machine
// that built `loom`. The binary has to run with nothing of this machine's libraries: `loom
// --version`, a whole local job with its AM and executors inside the root, and a YARN job whose
// NodeManager (the test double) launches every container inside the root.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <gmock/gmock.h>

#include "core/testing.h"
#include "old_userland.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// The root directory process `pid` runs under, as this process sees it ("" once it is gone).
std::string RootOf(pid_t pid) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/root", ec).string();
}

// The root really is bullseye, not this machine's userland by mistake.
void ExpectDebian11(const OldUserland& u) {
  EXPECT_THAT(ReadFile(u.root() + "/etc/debian_version").value_or(""), ::testing::StartsWith("11."));
}

TEST(OldUserland, VersionRunsInDebian11) {
  OldUserland u;
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  ExpectDebian11(u);
  MiniLoom loom;
  ASSERT_OK(u.Bind(loom.home()));
  RunResult inside = u.RunLoom(loom, {"--version"});
  // A dynamically linked `loom` ends here with the root's loader saying "error while loading
  // shared libraries: libgrpc++_unsecure.so.1.51: cannot open shared object file" (exit 127).
  ASSERT_EQ(inside.exit_code, 0) << inside.out << inside.err;
  EXPECT_TRUE(std::regex_match(inside.out, std::regex("loom \\d+\\.\\d+\\.\\d+\n"))) << inside.out;
  EXPECT_EQ(inside.out, loom.Run({"--version"}).out);  // the same binary says the same outside
}

// A whole local job inside the root: `loom submit`, its AM and its executors run there, with the
// root's /bin/sh (dash) and python3 (3.9); one task fails once and is restarted alone.
TEST(OldUserland, LocalJobRunsInDebian11) {
  OldUserland u;
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  MiniLoom loom;
  ASSERT_OK(u.Bind(loom.home()));
  const std::string py =
      "python3 -c 'import os, sys; print(\"python\", sys.version.split()[0]); "
      "first = os.environ[\"TASK_INDEX\"] == \"1\" and os.environ[\"LOOM_RESTART_COUNT\"] == \"0\"; "
      "print(\"failing on purpose\", file=sys.stderr) if first else None; sys.exit(3 if first else 0)'";
  RunResult r = u.RunLoom(loom, {"submit", "--conf", "loom.shell.instances=2", "--conf", "loom.shell.memory=256m",
                                 "--conf",
                                 "loom.shell.command=/bin/sh -c 'echo \"sh $TASK_INDEX on debian "
                                 "$(cat /etc/debian_version)\"'",
                                 "--conf", "loom.py.instances=2", "--conf", "loom.py.memory=256m", "--conf",
                                 "loom.py.restart-policy=on-failure", "--conf", "loom.py.max-restarts=2", "--conf",
                                 "loom.py.command=" + py});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string id = loom.OnlyJobId();
  EXPECT_THAT(r.out, HasSubstr("SUCCEEDED"));
  EXPECT_THAT(r.out, HasSubstr("py:1 failed (exit 3); restarting it alone, restart 1"));
  history::JobView view = loom.View(id);
  EXPECT_EQ(view.state, "SUCCEEDED");
  ASSERT_EQ(view.tasks.size(), 4u);
  for (const auto& t : view.tasks) EXPECT_EQ(t.state, TaskState::kSucceeded) << t.id;
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(loom.TaskOutput(id, {"shell", i}), HasSubstr("sh " + std::to_string(i) + " on debian 11.")) << i;
    // This machine's python3 is 3.11: 3.9 is bullseye's.
    EXPECT_THAT(loom.TaskOutput(id, {"py", i}), HasSubstr("python 3.9.")) << i;
  }
  EXPECT_THAT(loom.TaskOutput(id, {"py", 1}, true), HasSubstr("failing on purpose"));
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s))
      << MiniLoom::DescribeProcesses(MiniLoom::JobProcesses(id));
}

// A YARN node with an older OS: the double's NodeManager launches every container under chroot
// into the root (Options::container_chroot), while the client stays on this machine. Every
// process of the job, the AM and each executor included, runs with the root as its /.
TEST(OldUserland, YarnContainersRunInDebian11) {
  LOOM_REQUIRE_YARN_DOUBLE("its NodeManager launches the containers inside the old root");
  OldUserland u;  // before the double: its threads must start inside the mount namespace
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  YarnDoubleCluster cluster([&](auto& o) { o.container_chroot = u.root(); });
  ASSERT_OK(u.Bind(cluster.loom().home()));  // LOOM_HOME, with the double's NM dirs under it
  const std::string release = cluster.root() + "/release";
  std::vector<std::string> args = {
      "submit", "--cluster", "yarn", "--src_dir", MiniLoom::Source(kScripts),
      "--executes", "wait_for_file.py", "--python_binary_path", "/usr/bin/python3",
      "--task_params", release + " --timeout 120",
      "--conf", "loom.worker.instances=2", "--conf", "loom.am.memory=512m", "--conf", "loom.worker.memory=512m",
      "--conf", "loom.probe.instances=1", "--conf", "loom.probe.memory=512m", "--conf",
      "loom.probe.command=echo \"debian $(cat /etc/debian_version)\"; "
      "python3 -c 'import sys; print(\"python\", sys.version.split()[0])'"};
  Subprocess submit = cluster.loom().Start(args, "submit", cluster.Env());
  ASSERT_TRUE(loom::testing::Eventually([&] { return !cluster.loom().JobIds().empty(); }, 30s));
  std::string id = cluster.loom().OnlyJobId();
  // The probe may finish at once; the workers wait for `release`. Every process of the job then
  // alive (the AM, the executors, their tasks) has the mounted root as its /.
  std::vector<pid_t> pids;
  bool up = false;
  loom::testing::Eventually(
      [&] {
        pids = MiniLoom::JobProcesses(id);
        up = MiniLoom::CountRole(pids, "am") == 1 && MiniLoom::CountRole(pids, "executor") >= 2;
        std::string state = cluster.loom().View(id).state;
        return up || state == "FAILED" || state == "KILLED" || state == "SUCCEEDED";
      },
      120s);
  std::ofstream(release) << "go\n";
  if (!up) {
    RunResult r = cluster.loom().Collect(submit, "submit");
    FAIL() << "no AM and two executors ever ran together: " << MiniLoom::DescribeProcesses(pids) << r.out << r.err
           << cluster.ContainerLogs("am.log") << cluster.ContainerLogs("prelaunch.err")
           << cluster.ContainerLogs("stderr");
  }
  size_t seen = 0;
  for (pid_t p : pids) {
    std::string root = RootOf(p);
    if (root.empty()) continue;  // ended since
    ++seen;
    EXPECT_EQ(root, u.root()) << MiniLoom::DescribeProcesses({p});
  }
  EXPECT_GE(seen, 3u) << MiniLoom::DescribeProcesses(pids);  // at least the AM and the two workers' executors
  RunResult r = cluster.loom().Collect(submit, "submit");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log")
                            << cluster.ContainerLogs("executor.log") << cluster.ContainerLogs("prelaunch.err");
  EXPECT_THAT(r.out, HasSubstr("SUCCEEDED"));
  EXPECT_EQ(cluster.loom().View(id).state, "SUCCEEDED");
  EXPECT_EQ(cluster.Report(id).final_application_status(), ::hadoop::yarn::APP_SUCCEEDED);
  std::string out = cluster.ContainerLogs("stdout");
  EXPECT_THAT(out, HasSubstr("debian 11."));
  EXPECT_THAT(out, HasSubstr("python 3.9."));
  EXPECT_THAT(out, HasSubstr("found " + release));
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s))
      << MiniLoom::DescribeProcesses(MiniLoom::JobProcesses(id));
  EXPECT_TRUE(cluster.yarn().StrayProcesses().empty()) << MiniLoom::DescribeProcesses(cluster.yarn().StrayProcesses());
}

}  // namespace
}  // namespace loom::testing
