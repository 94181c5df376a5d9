#pragma once
// Test-only, for the log readers' tests against the recordings (log-aggregation/, nm-web/): the
// recorded cluster's configuration of aggregated logs, and the text a NodeManager wraps around a
// container's log file.

#include <cstdint>
#include <string>

#include "hadoop/conf/hadoop_conf.h"

namespace loom::hadoop {

// Where the recorded cluster aggregated its logs: HDFS at 127.0.0.1:9000, /tmp/logs/<user>/
// bucket-logs-tfile (suffix "logs"), TFile.
inline HadoopConf RecordedLogsConf() {
  HadoopConf c;
  c.default_fs = "hdfs://127.0.0.1:9000";
  c.fs_scheme = "hdfs";
  c.fs_host = "127.0.0.1";
  c.fs_port = 9000;
  c.remote_app_log_dir = "/tmp/logs";
  c.remote_app_log_dir_suffix = "logs";
  c.log_aggregation_file_formats = {"TFile"};
  return c;
}

// `bytes` of `file` as a NodeManager sends them (NMWebServices.getLogs in 3.3, as in the
// recording nm-web/04): its header and trailer, rules as long as the line above / "End of
// LogType:<file>" + 50; `length` is the whole file's (LogLength).
inline std::string NmWrapped(const std::string& cid, const std::string& file, const std::string& bytes,
                             int64_t length, bool running) {
  std::string head = "Container: " + cid + " on localhost:45454";
  std::string end = "End of LogType:" + file;
  return head + "\nLogAggregationType: LOCAL\n" + std::string(head.size(), '=') + "\nLogType:" + file +
         "\nLogLastModifiedTime:Sun Nov 22 18:46:25 +0000 2026\nLogLength:" + std::to_string(length) +
         "\nLogContents:\n" + bytes + end + "." +
         (running ? "This log file belongs to a running container (" + cid + ") and so may not be complete.\n" : "\n") +
         std::string(end.size() + 50, '*') + "\n\n";
}

}  // namespace loom::hadoop
