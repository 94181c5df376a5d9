#pragma once
// YarnDoubleCluster: a MiniLoom whose jobs go to the YARN test double (an in-process RM + NM,
// tests/yarn_double) and its FakeHdfs, for integration tests that run the real `loom` binary
// on the yarn backend. The NodeManager's directories are under root()/yarn/nm-local.

#include <filesystem>
#include <functional>
#include <memory>

#include "cluster/yarn/rpc/yarn_clients.h"
#include "cluster/yarn/yarn_job_submitter.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "mini_loom.h"
#include "yarn_test_double.h"

namespace loom::testing {

class YarnDoubleCluster {
 public:
  // `tweak` changes the double's options (more nodes, queues, log aggregation) before it starts.
  explicit YarnDoubleCluster(const std::function<void(yarn_double::YarnTestDouble::Options&)>& tweak = {}) {
    root_ = std::filesystem::path(loom_.home()) / "cluster";
    std::filesystem::create_directories(root_ / "hdfs");
    std::filesystem::create_directories(root_ / "yarn");
    std::filesystem::create_directories(root_ / "conf");
    hdfs_ = std::make_unique<yarn_double::FakeHdfs>((root_ / "hdfs").string());
    EXPECT_OK(hdfs_->Start());
    yarn_double::YarnTestDouble::Options o;
    o.work_dir = (root_ / "yarn").string();
    o.hdfs = hdfs_.get();
    o.node_memory_mb = 16384;
    o.node_vcores = 8;
    if (tweak) tweak(o);
    yarn_ = std::make_unique<yarn_double::YarnTestDouble>(o);
    EXPECT_OK(yarn_->Start());
    EXPECT_OK(yarn_->WriteHadoopConfDir((root_ / "conf").string()));
  }
  ~YarnDoubleCluster() {
    yarn_->Stop();
    hdfs_->Stop();
  }

  MiniLoom& loom() { return loom_; }
  yarn_double::FakeHdfs& hdfs() { return *hdfs_; }
  std::string root() const { return root_.string(); }
  std::string nm_local() const { return (root_ / "yarn" / "nm-local").string(); }
  std::string namenode() const { return "http://127.0.0.1:" + std::to_string(hdfs_->namenode_http_port()); }
  std::map<std::string, std::string> Env() const {
    return {{"HADOOP_CONF_DIR", (root_ / "conf").string()}, {"USER", "root"}};
  }
  // `loom submit --cluster yarn ARGS...`
  RunResult Submit(std::vector<std::string> args) {
    args.insert(args.begin(), {"submit", "--cluster", "yarn"});
    return loom_.Run(args, Env());
  }

  yarn_double::YarnTestDouble& yarn() { return *yarn_; }

  // The YARN application of a Loom job, from its job dir.
  std::string ApplicationId(const std::string& job_id) {
    auto record = cluster::yarn::YarnJobRecord::Read(loom_.Dir(job_id));
    EXPECT_OK(record);
    return record.ok() ? record->application_id : "";
  }
  // The RM's report of the job's application, asked over ApplicationClientProtocol as any YARN
  // client would (`yarn application -status`).
  hadoop::yarn::ApplicationReportProto Report(const std::string& job_id) {
    auto app = cluster::yarn::ParseApplicationId(ApplicationId(job_id));
    EXPECT_OK(app);
    if (!app.ok()) return {};
    cluster::yarn::ApplicationClient rm("127.0.0.1", yarn_->rm_port(), "root");
    auto report = rm.GetApplicationReport(*app);
    EXPECT_OK(report);
    return report.ok() ? *report : hadoop::yarn::ApplicationReportProto{};
  }
  Status WaitForAppEnd(const std::string& job_id, std::chrono::milliseconds timeout) {
    return yarn_->WaitForAppEnd(ApplicationId(job_id), timeout);
  }
  // Every file under the users' Loom staging roots in HDFS.
  std::vector<std::string> StagingFiles() const { return hdfs_->ListRecursive("/user/root/.loom"); }

  // Every container log file named `name` (stdout, stderr, am.log), for failure messages.
  std::string ContainerLogs(const std::string& name) const {
    std::string all;
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root_ / "yarn", ec)) {
      if (e.is_regular_file() && e.path().filename() == name &&
          e.path().string().find("/logs/") != std::string::npos) {
        all += "==> " + e.path().string() + "\n" + ReadFile(e.path().string()).value_or("") + "\n";
      }
    }
    return all;
  }

 private:
  MiniLoom loom_;
  std::filesystem::path root_;
  std::unique_ptr<yarn_double::FakeHdfs> hdfs_;
  std::unique_ptr<yarn_double::YarnTestDouble> yarn_;
};

}  // namespace loom::testing
