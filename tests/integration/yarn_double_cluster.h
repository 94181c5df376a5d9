#pragma once
// YarnDoubleCluster: a MiniLoom whose jobs go to a YARN cluster, for integration tests that run
// the real `loom` binary on the yarn backend. By default that cluster is the YARN test double
// (an in-process RM + NodeManagers, tests/yarn_double) with its FakeHdfs; the NodeManager's
// directories are under root()/yarn/nm-local.
//
// A real cluster instead, with the same tests unchanged: set
//   LOOM_TEST_HADOOP_CONF_DIR  the cluster's HADOOP_CONF_DIR (RM address, fs.defaultFS, WebHDFS)
//   LOOM_TEST_NM_LOG_DIR       its NodeManager's yarn.nodemanager.log-dirs, readable from here,
//                              for the tests that read container logs (ContainerLogs())
// Then no double and no FakeHdfs start; jobs run as $USER; Report(), WaitForAppEnd() ask the
// real RM over ApplicationClientProtocol and StagingFiles() lists HDFS over WebHDFS. Tests that
// look inside the double or configure it (yarn(), hdfs(), nm_local(), a tweak) start with
// LOOM_REQUIRE_YARN_DOUBLE(why), which skips them on a real cluster; reaching one of those
// without it is a test failure that says so, never a crash. Process checks through
// MiniLoom::JobProcesses see containers only on a single-node cluster on this machine.

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "cluster/yarn/yarn_job_submitter.h"
#include "core/strings.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/ipc/yarn_clients.h"
#include "mini_loom.h"
#include "yarn_test_double.h"

// Skips the calling test on a real cluster (returns from it): for tests that need the YARN test
// double. `why` says what of the double it needs; it goes into the skip message. Put it before
// the YarnDoubleCluster is constructed.
#define LOOM_REQUIRE_YARN_DOUBLE(why)                                                   \
  do {                                                                                  \
    if (::loom::testing::YarnDoubleCluster::RealClusterConfDir()) {                     \
      GTEST_SKIP() << "needs the YARN test double (" << (why)                           \
                   << "); LOOM_TEST_HADOOP_CONF_DIR names a real cluster";              \
    }                                                                                   \
  } while (0)

namespace loom::testing {

class YarnDoubleCluster {
 public:
  // The real cluster's configuration directory, when LOOM_TEST_HADOOP_CONF_DIR names one.
  static std::optional<std::string> RealClusterConfDir() {
    const char* dir = std::getenv("LOOM_TEST_HADOOP_CONF_DIR");
    if (dir == nullptr || *dir == '\0') return std::nullopt;
    return std::string(dir);
  }

  // `tweak` changes the double's options (more nodes, queues, log aggregation) before it starts;
  // a test that passes one needs the double (LOOM_REQUIRE_YARN_DOUBLE).
  explicit YarnDoubleCluster(const std::function<void(yarn_double::YarnTestDouble::Options&)>& tweak = {}) {
    root_ = std::filesystem::path(loom_.home()) / "cluster";
    if (auto conf_dir = RealClusterConfDir()) {
      StartReal(*conf_dir, static_cast<bool>(tweak));
      return;
    }
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
    if (yarn_) yarn_->Stop();
    if (hdfs_) hdfs_->Stop();
  }

  // Whether the jobs go to a real cluster (LOOM_TEST_HADOOP_CONF_DIR) rather than the double.
  bool real() const { return real_; }
  // The user the jobs run as, and their Loom staging root in HDFS.
  std::string user() const { return user_; }
  std::string StagingRoot() const { return "/user/" + user_ + "/.loom"; }

  MiniLoom& loom() { return loom_; }
  std::string root() const { return root_.string(); }
  std::map<std::string, std::string> Env() const {
    if (real_) return {{"HADOOP_CONF_DIR", conf_dir_}};
    return {{"HADOOP_CONF_DIR", (root_ / "conf").string()}, {"USER", "root"}};
  }
  // The NameNode's WebHDFS address, "http://host:port".
  std::string namenode() const {
    if (real_) return "http://" + conf_.namenode_http.ToString();
    return "http://127.0.0.1:" + std::to_string(hdfs_->namenode_http_port());
  }
  // `loom submit --cluster yarn ARGS...`
  RunResult Submit(std::vector<std::string> args) {
    args.insert(args.begin(), {"submit", "--cluster", "yarn"});
    return loom_.Run(args, Env());
  }

  // ---- the double only (a failure on a real cluster: guard with LOOM_REQUIRE_YARN_DOUBLE) ----
  yarn_double::YarnTestDouble& yarn() {
    DoubleOnly("yarn()");
    return *yarn_;
  }
  yarn_double::FakeHdfs& hdfs() {
    DoubleOnly("hdfs()");
    return *hdfs_;
  }
  std::string nm_local() const {
    DoubleOnly("nm_local()");
    return (root_ / "yarn" / "nm-local").string();
  }

  // The YARN application of a Loom job, from its job dir.
  std::string ApplicationId(const std::string& job_id) {
    auto record = cluster::yarn::YarnJobRecord::Read(loom_.Dir(job_id));
    EXPECT_OK(record);
    return record.ok() ? record->application_id : "";
  }
  // The RM's report of the job's application, asked over ApplicationClientProtocol as any YARN
  // client would (`yarn application -status`).
  ::hadoop::yarn::ApplicationReportProto Report(const std::string& job_id) {
    auto report = AppReport(ApplicationId(job_id));
    EXPECT_OK(report);
    return report.ok() ? *report : ::hadoop::yarn::ApplicationReportProto{};
  }
  Status WaitForAppEnd(const std::string& job_id, std::chrono::milliseconds timeout) {
    std::string app = ApplicationId(job_id);
    if (!real_) return yarn_->WaitForAppEnd(app, timeout);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      LOOM_ASSIGN_OR_RETURN(::hadoop::yarn::ApplicationReportProto report, AppReport(app));
      auto state = report.yarn_application_state();
      if (state == ::hadoop::yarn::FINISHED || state == ::hadoop::yarn::FAILED || state == ::hadoop::yarn::KILLED) {
        return Status::Ok();
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return Status::DeadlineExceeded(app + " still " + ::hadoop::yarn::YarnApplicationStateProto_Name(state));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  // Until the RM reports the job's application's logs aggregated (LOG_SUCCEEDED), as `yarn logs`
  // waits for them; an error if aggregation failed, timed out or is off.
  Status WaitForLogAggregation(const std::string& job_id, std::chrono::milliseconds timeout) {
    std::string app = ApplicationId(job_id);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      LOOM_ASSIGN_OR_RETURN(::hadoop::yarn::ApplicationReportProto report, AppReport(app));
      auto status = report.log_aggregation_status();
      if (status == ::hadoop::yarn::LOG_SUCCEEDED) return Status::Ok();
      if (status == ::hadoop::yarn::LOG_DISABLED || status == ::hadoop::yarn::LOG_FAILED ||
          status == ::hadoop::yarn::LOG_TIME_OUT || std::chrono::steady_clock::now() >= deadline) {
        return Status::FailedPrecondition(app + ": log aggregation " +
                                          ::hadoop::yarn::LogAggregationStatusProto_Name(status));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  // The cluster's HADOOP_CONF_DIR: the real one, or the double's.
  std::string ConfDir() const { return real_ ? conf_dir_ : (root_ / "conf").string(); }
  // The NodeManagers the RM reports RUNNING, for tests that size their asks to the cluster.
  std::vector<::hadoop::yarn::NodeReportProto> RunningNodes() const {
    hadoop::ApplicationClient rm(real_ ? conf_.rm.host : "127.0.0.1", real_ ? conf_.rm.port : yarn_->rm_port(),
                                        user_);
    auto nodes = rm.GetClusterNodes();
    EXPECT_OK(nodes);
    return nodes.ok() ? *nodes : std::vector<::hadoop::yarn::NodeReportProto>{};
  }
  // The cluster's env with another HADOOP_CONF_DIR, for tests that write a conf dir of their own.
  std::map<std::string, std::string> EnvWithConfDir(const std::string& dir) const {
    std::map<std::string, std::string> env = Env();
    env["HADOOP_CONF_DIR"] = dir;
    return env;
  }
  // Whether a real cluster aggregates logs in `format` (yarn.log-aggregation-enable and the first
  // of yarn.log-aggregation.file-formats, TFile by default), with the reason when it does not.
  std::optional<std::string> RealClusterDoesNotAggregateAs(const std::string& format) const {
    if (!real_) return std::nullopt;
    if (!conf_.log_aggregation_enable) return "yarn.log-aggregation-enable is not true";
    std::string first = conf_.log_aggregation_file_formats.empty() ? "TFile" : conf_.log_aggregation_file_formats[0];
    if (first != format) return "the cluster writes " + first + ", not " + format;
    return std::nullopt;
  }

  // Every file under the user's Loom staging root in HDFS. On a real cluster, which other jobs
  // share, the application dirs of other jobs than this test's are left out.
  std::vector<std::string> StagingFiles() const {
    if (!real_) return hdfs_->ListRecursive("/user/root/.loom");
    std::set<std::string> ours;
    for (const std::string& id : loom_.JobIds()) {
      auto record = cluster::yarn::YarnJobRecord::Read(loom_.Dir(id));
      if (record.ok()) ours.insert(record->application_id);
    }
    std::vector<std::string> files;
    hadoop::WebHdfs fs = hadoop::WebHdfs::ForConf(conf_, user_);
    auto entries = fs.ListStatus(StagingRoot());
    if (!entries.ok()) {
      EXPECT_EQ(entries.status().code(), StatusCode::kNotFound) << entries.status().ToString();
      return files;
    }
    for (const auto& e : *entries) {
      if (e.path_suffix.starts_with("application_") && !ours.count(e.path_suffix)) continue;
      ListFiles(fs, StagingRoot() + "/" + e.path_suffix, e, &files);
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  // StagingFiles() less the shared binary cache (<staging root>/cache/), which other jobs of a
  // real cluster fill: what a job refused at submit must not have left.
  std::vector<std::string> JobStagingFiles() const {
    std::vector<std::string> files = StagingFiles();
    std::erase_if(files, [&](const std::string& f) { return f.starts_with(StagingRoot() + "/cache/"); });
    return files;
  }

  // Every container log file named `name` (stdout, stderr, am.log), each after a "==> path"
  // line. On a real cluster those of this test's applications under LOOM_TEST_NM_LOG_DIR (a
  // comma-separated list, as yarn.nodemanager.log-dirs), or a line saying it is not set.
  std::string ContainerLogs(const std::string& name) const {
    std::string all;
    std::error_code ec;
    if (!real_) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(root_ / "yarn", ec)) {
        if (e.is_regular_file() && e.path().filename() == name &&
            e.path().string().find("/logs/") != std::string::npos) {
          all += "==> " + e.path().string() + "\n" + ReadFile(e.path().string()).value_or("") + "\n";
        }
      }
      return all;
    }
    const char* log_dirs = std::getenv("LOOM_TEST_NM_LOG_DIR");
    if (log_dirs == nullptr || *log_dirs == '\0') {
      // What a test that looks for a line in them then shows as the logs.
      return "(no container logs: LOOM_TEST_HADOOP_CONF_DIR names a real cluster; set LOOM_TEST_NM_LOG_DIR to its "
             "NodeManager's yarn.nodemanager.log-dirs)\n";
    }
    for (const std::string& id : loom_.JobIds()) {
      auto record = cluster::yarn::YarnJobRecord::Read(loom_.Dir(id));
      if (!record.ok()) continue;
      for (const std::string& dir : Split(log_dirs, ',')) {
        for (const auto& e : std::filesystem::recursive_directory_iterator(
                 std::filesystem::path(dir) / record->application_id, ec)) {
          if (e.is_regular_file() && e.path().filename() == name) {
            all += "==> " + e.path().string() + "\n" + ReadFile(e.path().string()).value_or("") + "\n";
          }
        }
      }
    }
    return all;
  }

 private:
  void StartReal(const std::string& conf_dir, bool tweaked) {
    real_ = true;
    conf_dir_ = conf_dir;
    const char* u = std::getenv("USER");
    user_ = u && *u ? u : std::to_string(::getuid());
    if (tweaked) {
      ADD_FAILURE() << "this test configures the YARN test double, which a real cluster cannot be: start it with "
                       "LOOM_REQUIRE_YARN_DOUBLE (LOOM_TEST_HADOOP_CONF_DIR="
                    << conf_dir << ")";
    }
    auto conf = hadoop::HadoopConf::Load(conf_dir);
    if (!conf.ok()) {
      ADD_FAILURE() << "LOOM_TEST_HADOOP_CONF_DIR=" << conf_dir << ": " << conf.status().ToString();
      return;
    }
    conf_ = *conf;
    hadoop::ApplicationClient rm(conf_.rm.host, conf_.rm.port, user_);
    auto metrics = rm.GetClusterMetrics();
    if (!metrics.ok()) {
      ADD_FAILURE() << "the ResourceManager of LOOM_TEST_HADOOP_CONF_DIR=" << conf_dir << " (" << conf_.rm.ToString()
                    << ") does not answer: " << metrics.status().ToString();
    }
  }

  // A test reached what only the double has; the double's objects exist, never started, so
  // the test goes on to fail rather than crash.
  void DoubleOnly(const char* what) const {
    if (!real_) return;
    ADD_FAILURE() << "this test uses the YARN test double's " << what
                  << ", which a real cluster does not have: start it with LOOM_REQUIRE_YARN_DOUBLE";
    if (!yarn_) {
      hdfs_ = std::make_unique<yarn_double::FakeHdfs>((root_ / "hdfs-unused").string());
      yarn_double::YarnTestDouble::Options o;
      o.work_dir = (root_ / "yarn-unused").string();
      yarn_ = std::make_unique<yarn_double::YarnTestDouble>(o);
    }
  }

  Result<::hadoop::yarn::ApplicationReportProto> AppReport(const std::string& app_id) const {
    LOOM_ASSIGN_OR_RETURN(auto app, hadoop::ParseApplicationId(app_id));
    if (!real_) {
      hadoop::ApplicationClient rm("127.0.0.1", yarn_->rm_port(), "root");
      return rm.GetApplicationReport(app);
    }
    hadoop::ApplicationClient rm(conf_.rm.host, conf_.rm.port, user_);
    return rm.GetApplicationReport(app);
  }

  // The files at and below `path` (whose status is `st`), as full paths.
  static void ListFiles(hadoop::WebHdfs& fs, const std::string& path, const hadoop::HdfsFileStatus& st,
                        std::vector<std::string>* out) {
    if (st.type != "DIRECTORY") {
      out->push_back(path);
      return;
    }
    auto children = fs.ListStatus(path);
    EXPECT_OK(children);
    if (!children.ok()) return;
    for (const auto& c : *children) ListFiles(fs, path + "/" + c.path_suffix, c, out);
  }

  MiniLoom loom_;
  std::filesystem::path root_;
  bool real_ = false;
  std::string conf_dir_;  // real cluster only
  hadoop::HadoopConf conf_;
  std::string user_ = "root";
  mutable std::unique_ptr<yarn_double::FakeHdfs> hdfs_;
  mutable std::unique_ptr<yarn_double::YarnTestDouble> yarn_;
};

}  // namespace loom::testing
