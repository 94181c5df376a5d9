// yarn_double_cluster: runs the YARN test double (RM, NodeManagers and WebHDFS, tests/yarn_double)
// as a process, for the benchmark of submit-to-running through the yarn backend (bench/run.py).
// Writes the HADOOP_CONF_DIR files into DIR/conf and prints "ready". Then, for each line
// "stats" on stdin, prints one JSON line:
//   {"hdfs_bytes_created": total bytes clients wrote into HDFS so far,
//    "hdfs_files_created": how many files,
//    "containers": [{"id", "app", "am", "node", "allocated_ns"}, ...]}
// where allocated_ns is the CLOCK_REALTIME (the clock of bench/stamp) at which a poll every
// millisecond first saw the container: its allocation by a NodeManager heartbeat, to within a
// millisecond and well below the heartbeat interval. Stops (killing every container) when
// stdin closes.
// Usage: yarn_double_cluster DIR [--nodes N] [--heartbeat-ms MS] [--node-memory-mb MB]
//                                [--node-vcores V] [--log-aggregation TFile|IFile]
// Defaults: 2 nodes of 8192 MB and 8 vcores (the double's node), heartbeats every 1000 ms
// (Hadoop's yarn.resourcemanager.nodemanagers.heartbeat-interval-ms), no log aggregation.
// tests/yarn_tests_on_a_cluster_process.sh runs the YARN integration tests against it as
// against a real cluster (LOOM_TEST_HADOOP_CONF_DIR=DIR/conf).

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "fake_hdfs.h"
#include "yarn_test_double.h"

namespace {

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

struct Seen {
  std::string app;
  bool am = false;
  int node = 0;
  int64_t allocated_ns = 0;
};

int Usage() {
  std::fprintf(stderr,
               "usage: yarn_double_cluster DIR [--nodes N] [--heartbeat-ms MS] [--node-memory-mb MB] "
               "[--node-vcores V] [--log-aggregation TFile|IFile]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc % 2 != 0) return Usage();
  std::string dir = argv[1];
  loom::yarn_double::YarnTestDouble::Options o;
  o.node_count = 2;
  o.nm_heartbeat_ms = 1000;
  o.node_memory_mb = 8192;
  o.node_vcores = 8;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--log-aggregation") {
      o.log_aggregation = argv[i + 1];
      if (o.log_aggregation != "TFile" && o.log_aggregation != "IFile") return Usage();
      continue;
    }
    long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--nodes") o.node_count = static_cast<int>(value);
    else if (flag == "--heartbeat-ms") o.nm_heartbeat_ms = static_cast<int>(value);
    else if (flag == "--node-memory-mb") o.node_memory_mb = value;
    else if (flag == "--node-vcores") o.node_vcores = static_cast<int>(value);
    else return Usage();
  }
  std::filesystem::create_directories(dir + "/conf");
  std::filesystem::create_directories(dir + "/hdfs");
  std::filesystem::create_directories(dir + "/yarn");
  loom::yarn_double::FakeHdfs hdfs(dir + "/hdfs");
  if (auto s = hdfs.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  o.work_dir = dir + "/yarn";
  o.hdfs = &hdfs;
  loom::yarn_double::YarnTestDouble yarn(o);
  if (auto s = yarn.Start(); !s.ok() || !(s = yarn.WriteHadoopConfDir(dir + "/conf")).ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }

  // Containers() has no allocation times, so a poller notes when each one first appears.
  std::mutex mu;
  std::map<std::string, Seen> seen;
  std::atomic<bool> stop{false};
  std::thread poller([&] {
    while (!stop) {
      auto containers = yarn.Containers();
      int64_t now = RealtimeNs();
      {
        std::lock_guard<std::mutex> lock(mu);
        for (const auto& c : containers) {
          if (!seen.count(c.id)) seen[c.id] = {c.app_id, c.is_am, c.node, now};
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });

  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line != "stats") continue;
    nlohmann::json out = {{"hdfs_bytes_created", hdfs.bytes_created()},
                          {"hdfs_files_created", hdfs.CreatedFiles().size()},
                          {"containers", nlohmann::json::array()}};
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [id, s] : seen) {
        out["containers"].push_back(
            {{"id", id}, {"app", s.app}, {"am", s.am}, {"node", s.node}, {"allocated_ns", s.allocated_ns}});
      }
    }
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
  }
  stop = true;
  poller.join();
  yarn.Stop();
  hdfs.Stop();
  return 0;
}
