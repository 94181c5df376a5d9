// The local backend's environment contract (README "What each task gets"): a local task gets
// what a YARN container gets (a documented base set, what the job forwards, Loom's variables),
// never the rest of the submitter's environment, and no way to the job's control-plane secret.

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <set>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "control/auth.h"
#include "control/control.grpc.pb.h"
#include "core/eventually.h"
#include "core/host_resolver.h"
#include "core/strings.h"
#include "core/testing.h"
#include "mini_loom.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

// Reports its environment, the descriptors it holds, and every file named `secret` it finds
// from its working dir up (the job dir's is three levels up), then waits for the test.
constexpr char kProbe[] = R"PY(import json, os, time
found = {}
d = os.getcwd()
for _ in range(6):
    p = os.path.join(d, "secret")
    if os.path.isfile(p):
        found[p] = open(p).read().strip()
    d = os.path.dirname(d)
fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        fds[fd] = os.readlink("/proc/self/fd/" + fd)
    except OSError:
        pass
print(json.dumps({"env": dict(os.environ), "secret_files": found, "fds": fds}), flush=True)
while not os.path.exists("done"):
    time.sleep(0.05)
)PY";

// Loom's own variables in a tensorflow task (README "What each task gets").
const std::set<std::string> kLoomTaskVariables = {
    "JOB_NAME", "TASK_INDEX", "TASK_NUM", "IS_CHIEF", "DISTRIBUTED_MODE", "CLUSTER_SPEC", "TF_CONFIG",
    "LOOM_JOB_ID", "LOOM_TASK_ID", "LOOM_RESTART_COUNT", "LOOM_HOST", "LOOM_CONTAINER_ID", "PYTHONUNBUFFERED",
    "CUDA_VISIBLE_DEVICES", "JOB_ID", "SESSION_ID", "TB_PORT", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
    "LOOM_PROCESS_INDEX"};

// The pipes this test process holds: whatever started the test may leave some open, and every
// process started from here inherits those.
std::set<std::string> OwnPipes() {
  std::set<std::string> pipes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (target.rfind("pipe:", 0) == 0) pipes.insert(target);
  }
  return pipes;
}
// What bash, which runs the task's command, sets itself (on YARN too): PWD is the task's own
// working dir, which is in the job dir.
const std::set<std::string> kShellVariables = {"PWD", "SHLVL", "_", "OLDPWD"};

bool InBaseSet(const std::string& k) {
  return k == "PATH" || k == "LANG" || k == "TZ" || k.rfind("LC_", 0) == 0 || k.rfind("LOOM_TEST_", 0) == 0 ||
         k == "USER" || k == "LOGNAME" || k == "HOME";
}

TEST(LocalTaskEnv, IsTheBaseSetPlusWhatIsForwardedAndNoWayToTheSecret) {
  MiniLoom loom;
  const std::string src = loom.home() + "/env-probe";
  std::filesystem::create_directories(src);
  ASSERT_OK(WriteFileAtomic(src + "/probe.py", kProbe));
  std::map<std::string, std::string> client = {
      {"LOOM_IT_CLIENT_ONLY", "set in the submitter's shell, forwarded by nothing"},
      {"PYTHONPATH", "/nowhere"},
      {"TZ", "UTC"},
      {"MLFLOW_TRACKING_URI", "http://tracking:5000"},
      {"MLFLOW_TRACKING_TOKEN", "tok-it-1234"}};
  Subprocess submit = loom.Start({"submit", "--src_dir", src, "--executes", "probe.py", "--python_binary_path",
                                  "/usr/bin/python3", "--conf", "loom.worker.instances=1", "--shell_env",
                                  "SHELL_SET=by --shell_env", "--container_env", "CONTAINER_SET=by --container_env"},
                                 "submit", client);
  json report;
  std::string id;
  ASSERT_TRUE(loom::testing::Eventually([&] {
    if (loom.JobIds().size() != 1) return false;
    id = loom.OnlyJobId();
    auto out = ReadFile(loom.Dir(id).task_stdout({"worker", 0}));
    if (!out.ok() || out->find('\n') == std::string::npos) return false;
    report = json::parse(out->substr(0, out->find('\n')), nullptr, false);
    return !report.is_discarded();
  }, 60s)) << ReadFile(loom.Dir(id).task_stderr({"worker", 0})).value_or("");

  // The environment: the base set (as the submitter had it), what the job forwards, Loom's.
  std::map<std::string, std::string> env = report["env"].get<std::map<std::string, std::string>>();
  std::map<std::string, std::string> submitter = loom.Env();
  for (const auto& [k, v] : client) submitter[k] = v;
  for (const auto& [k, v] : submitter) {
    if (InBaseSet(k)) {
      EXPECT_EQ(env[k], v) << k << " is in the base set";
    }
  }
  for (const char* k : {"USER", "LOGNAME", "HOME", "PATH"}) EXPECT_TRUE(env.count(k)) << k;
  EXPECT_EQ(env["SHELL_SET"], "by --shell_env");
  EXPECT_EQ(env["CONTAINER_SET"], "by --container_env");
  EXPECT_EQ(env["MLFLOW_TRACKING_URI"], "http://tracking:5000");
  EXPECT_EQ(env["MLFLOW_TRACKING_TOKEN"], "tok-it-1234");
  const std::set<std::string> forwarded = {"SHELL_SET", "CONTAINER_SET", "MLFLOW_TRACKING_URI",
                                           "MLFLOW_TRACKING_TOKEN"};
  for (const auto& [k, v] : env) {
    EXPECT_TRUE(InBaseSet(k) || forwarded.count(k) || kLoomTaskVariables.count(k) || kShellVariables.count(k))
        << k << "=" << v << " reached the task without being in the contract";
    // Nothing else names where the job's files (and its secret file) are.
    if (!kShellVariables.count(k)) {
      EXPECT_EQ(v.find(loom.home()), std::string::npos) << k << "=" << v;
    }
  }
  EXPECT_EQ(env.count("LOOM_IT_CLIENT_ONLY") + env.count("PYTHONPATH") + env.count("LOOM_HOME"), 0u);

  // No descriptor the executor was handed its secret through.
  const std::set<std::string> own_pipes = OwnPipes();
  for (const auto& [fd, target] : report["fds"].items()) {
    std::string t = target.get<std::string>();
    EXPECT_TRUE(t.rfind("pipe:", 0) != 0 || own_pipes.count(t)) << "fd " << fd << " -> " << t;
  }

  // Same machine, same Unix user: the task finds the job dir's secret file. What it holds lets
  // a client follow the job (JobState) and nothing more: not the secret the executors hold.
  const std::string secret_file = loom.Dir(id).secret();
  ASSERT_EQ(report["secret_files"].size(), 1u) << report["secret_files"].dump();
  std::string found = report["secret_files"].begin().value().get<std::string>();
  EXPECT_EQ(report["secret_files"].begin().key(), secret_file);
  auto addr = ReadFile(loom.Dir(id).am_addr());
  ASSERT_OK(addr);
  auto target = GrpcTarget(Trim(*addr));
  ASSERT_OK(target);
  auto stub = control::Control::NewStub(grpc::CreateChannel(*target, grpc::InsecureChannelCredentials()));
  auto ctx = [&] {
    auto c = std::make_unique<grpc::ClientContext>();
    c->AddMetadata(control::kSecretMetadataKey, found);
    c->set_deadline(std::chrono::system_clock::now() + 5s);
    return c;
  };
  control::JobStateRequest state;
  state.set_events_offset(-1);
  control::JobStateResponse state_resp;
  grpc::Status read = stub->JobState(ctx().get(), state, &state_resp);
  EXPECT_TRUE(read.ok()) << read.error_message();
  control::RegisterRequest reg;
  reg.mutable_task()->set_type("worker");
  reg.mutable_task()->set_index(0);
  reg.set_host("127.0.0.1");
  reg.set_port(20001);
  control::RegisterResponse reg_resp;
  EXPECT_EQ(stub->Register(ctx().get(), reg, &reg_resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  control::ExitReport exit;
  *exit.mutable_task() = reg.task();
  exit.set_exit_code(0);
  control::Ack ack;
  EXPECT_EQ(stub->ReportExit(ctx().get(), exit, &ack).error_code(), grpc::StatusCode::UNAUTHENTICATED);

  ASSERT_OK(WriteFileAtomic(loom.Dir(id).task_work({"worker", 0}) + "/done", ""));
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(MiniLoom::JobProcesses(id).empty());
}

}  // namespace
}  // namespace loom::testing
