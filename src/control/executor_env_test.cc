#include "control/executor_env.h"

#include <fcntl.h>
#include <unistd.h>

#include <gmock/gmock.h>

#include "control/auth.h"
#include "core/testing.h"

namespace loom::control {
namespace {

using ::testing::HasSubstr;

TEST(ExecutorEnv, RoundTripsThroughTheEnvironment) {
  const ExecutorEnv e{.job_id = "job_1", .task_id = "worker:1", .restart_count = 2, .am_address = "h:1234",
                      .secret_file = "/tmp/s", .port_low = 21000, .port_high = 22000, .preferred_port = 21005,
                      .reserve_tb_port = true, .registry_timeout_ms = 90000, .metrics_interval_ms = 250,
                      .gpu_metrics = true, .gpu_exec_path = "/opt/nvidia/bin/nvidia-smi", .key_prefix = "tony.",
                      .host = "h", .container_id = "c1", .log_dir = "/logs", .memory_enforced_by = "watchdog",
                      .planned_gpus = {1, 3}, .nm_web = "http://n1:8042", .gpu_note = "others share n1's GPUs"};
  std::map<std::string, std::string> env = {{"PATH", "/bin"}};
  e.AddTo(env);
  EXPECT_EQ(env["LOOM_PORT_RANGE"], "21000-22000");
  auto back = ExecutorEnv::FromEnv(env);
  ASSERT_OK(back);
  EXPECT_EQ(back->task_id, "worker:1");
  EXPECT_EQ(back->restart_count, 2);
  EXPECT_EQ(back->port_low, 21000);
  EXPECT_EQ(back->port_high, 22000);
  EXPECT_EQ(back->preferred_port, 21005);
  EXPECT_EQ(back->memory_enforced_by, "watchdog");
  EXPECT_EQ(back->key_prefix, "tony.");
  EXPECT_EQ(back->gpu_exec_path, "/opt/nvidia/bin/nvidia-smi");
  EXPECT_TRUE(back->reserve_tb_port);
  EXPECT_EQ(back->registry_timeout_ms, 90000);
  EXPECT_EQ(back->metrics_interval_ms, 250);
  EXPECT_TRUE(back->gpu_metrics);
  EXPECT_EQ(env["LOOM_PLANNED_GPUS"], "1,3");
  EXPECT_EQ(back->planned_gpus, (std::vector<int>{1, 3}));
  EXPECT_EQ(back->nm_web, "http://n1:8042");
  EXPECT_EQ(back->gpu_note, "others share n1's GPUs");
  ExecutorEnv::RemoveWiring(env);
  EXPECT_EQ(env.count("LOOM_PLANNED_GPUS") + env.count("LOOM_NM_WEB") + env.count("LOOM_GPU_NOTE"), 0u);
  EXPECT_EQ(env.count("LOOM_REGISTRY_TIMEOUT_MS") + env.count("LOOM_METRICS_INTERVAL_MS") + env.count("LOOM_GPU_METRICS") +
                env.count("LOOM_RESERVE_TB_PORT"),
            0u);
  EXPECT_EQ(env.count("LOOM_AM_ADDRESS") + env.count("LOOM_SECRET_FILE") + env.count("LOOM_PORT_RANGE"), 0u);
  EXPECT_EQ(env["LOOM_TASK_ID"], "worker:1");  // the user's process may know its task
  EXPECT_EQ(env["PATH"], "/bin");
}

// The local backend hands the executor its secret through a pipe; the user's process learns
// neither the descriptor nor where the job's files are (the log dir is in the job dir).
TEST(ExecutorEnv, TheSecretsPipeAndTheLogDirAreWiring) {
  const ExecutorEnv e{.task_id = "worker:0", .am_address = "h:1", .secret_fd = 7,
                      .log_dir = "/home/u/.loom/jobs/job_1/tasks/worker-0"};
  std::map<std::string, std::string> env;
  e.AddTo(env);
  EXPECT_EQ(env["LOOM_SECRET_FD"], "7");
  auto back = ExecutorEnv::FromEnv(env);
  ASSERT_OK(back);  // a pipe is a source of the secret on its own
  EXPECT_EQ(back->secret_fd, 7);
  EXPECT_EQ(back->log_dir, e.log_dir);
  ExecutorEnv::RemoveWiring(env);
  EXPECT_EQ(env.count("LOOM_SECRET_FD") + env.count("LOOM_LOG_DIR"), 0u);
  env = {{"LOOM_TASK_ID", "worker:0"}, {"LOOM_AM_ADDRESS", "h:1"}, {"LOOM_SECRET_FD", "x"}};
  EXPECT_THAT(ExecutorEnv::FromEnv(env).status().message(), HasSubstr("LOOM_SECRET_FD=x"));
}

TEST(ReadSecretFd, ReadsThePipeToItsEndAndClosesIt) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string secret(64, 'c');
  ASSERT_EQ(::write(fds[1], (secret + "\n").data(), 65), 65);
  ::close(fds[1]);
  auto read = ReadSecretFd(fds[0]);
  ASSERT_OK(read);
  EXPECT_EQ(*read, secret);
  EXPECT_EQ(::fcntl(fds[0], F_GETFD), -1);  // closed: nothing started later inherits it
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "short\n", 6), 6);
  ::close(fds[1]);
  EXPECT_THAT(ReadSecretFd(fds[0]).status().message(), HasSubstr("too short"));
}

TEST(ExecutorEnv, NamesWhatIsMissingOrMalformed) {
  std::map<std::string, std::string> env = {{"LOOM_TASK_ID", "worker:0"}, {"LOOM_SECRET_FILE", "/s"}};
  EXPECT_THAT(ExecutorEnv::FromEnv(env).status().message(), HasSubstr("LOOM_AM_ADDRESS"));
  env["LOOM_AM_ADDRESS"] = "h:1";
  ASSERT_OK(ExecutorEnv::FromEnv(env));
  // Unset: registration is retried forever, metrics every 5 s, no GPU sampling, no TB port.
  EXPECT_EQ(ExecutorEnv::FromEnv(env)->registry_timeout_ms, 0);
  EXPECT_EQ(ExecutorEnv::FromEnv(env)->metrics_interval_ms, 5000);
  EXPECT_FALSE(ExecutorEnv::FromEnv(env)->gpu_metrics);
  EXPECT_FALSE(ExecutorEnv::FromEnv(env)->reserve_tb_port);
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"LOOM_REGISTRY_TIMEOUT_MS", "-1"}, {"LOOM_METRICS_INTERVAL_MS", "0"}, {"LOOM_GPU_METRICS", "yes"},
           {"LOOM_PLANNED_GPUS", "0,x"}, {"LOOM_PLANNED_GPUS", "-1"}}) {
    auto bad = env;
    bad[k] = v;
    EXPECT_THAT(ExecutorEnv::FromEnv(bad).status().message(), HasSubstr(k + "=" + v));
  }
  env.erase("LOOM_SECRET_FILE");
  EXPECT_THAT(ExecutorEnv::FromEnv(env).status().message(), HasSubstr("LOOM_SECRET_FILE"));
  env["LOOM_SECRET_CREDENTIAL"] = "loom.job.secret";  // the secret from the container's credentials
  EXPECT_OK(ExecutorEnv::FromEnv(env));
  env["LOOM_PORT_RANGE"] = "9-x";
  EXPECT_THAT(ExecutorEnv::FromEnv(env).status().message(), HasSubstr("LOOM_PORT_RANGE=9-x"));
  env["LOOM_PORT_RANGE"] = "100-200";
  env["LOOM_MEMORY_ENFORCED_BY"] = "magic";
  EXPECT_THAT(ExecutorEnv::FromEnv(env).status().message(), HasSubstr("LOOM_MEMORY_ENFORCED_BY"));
}

}  // namespace
}  // namespace loom::control
