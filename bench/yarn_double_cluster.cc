// yarn_double_cluster: runs the YARN test double (RM + NM + WebHDFS, tests/yarn_double) as a
// process, for the benchmark of submit-to-running through the yarn backend. Writes the
// HADOOP_CONF_DIR files into DIR, prints "ready", and stops (killing every container) when
// stdin closes.
// Usage: yarn_double_cluster DIR

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "fake_hdfs.h"
#include "yarn_test_double.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: yarn_double_cluster DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  std::filesystem::create_directories(dir + "/conf");
  std::filesystem::create_directories(dir + "/hdfs");
  std::filesystem::create_directories(dir + "/yarn");
  loom::yarn_double::FakeHdfs hdfs(dir + "/hdfs");
  if (auto s = hdfs.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  loom::yarn_double::YarnTestDouble::Options o;
  o.work_dir = dir + "/yarn";
  o.hdfs = &hdfs;
  o.node_memory_mb = 65536;
  o.node_vcores = 64;
  loom::yarn_double::YarnTestDouble yarn(o);
  if (auto s = yarn.Start(); !s.ok() || !(s = yarn.WriteHadoopConfDir(dir + "/conf")).ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  char buf[64];
  while (::read(STDIN_FILENO, buf, sizeof(buf)) > 0) {
  }
  yarn.Stop();
  hdfs.Stop();
  return 0;
}
