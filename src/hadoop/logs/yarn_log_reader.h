#pragma once
// YarnLogReader: the log files of one container of a YARN application, wherever they are now.
//   1. The NodeManager's web services, while it serves the container (it runs; or it has
//      finished and its application's logs are not aggregated yet / aggregation is off and
//      yarn.nodemanager.log.retain-seconds has not passed).
//   2. Otherwise the aggregated logs in HDFS (TFile or IFile, see aggregated_logs.h), when the
//      cluster aggregates logs.
// Used by `loom logs JOB [--task T:I] [--stderr] [-f]`; follow mode calls ReadFrom about
// once a second, which costs one small HTTP request while the container runs.
// Not thread-safe (it caches aggregated files); use one per thread.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/logs/aggregated_logs.h"
#include "hadoop/logs/nm_web_logs.h"

namespace loom::hadoop {

struct ContainerLogLocation {
  std::string container_id;
  // "host:port" of the NodeManager's IPC server (the container's NodeId): names its
  // aggregated file, host_port. Empty: every node's aggregated file is searched.
  std::string node_id;
  // "host:port" of the NodeManager's web server (ContainerProto.node_http_address). Empty:
  // the node_id's host with the port of yarn.nodemanager.webapp.address; with both empty
  // only the aggregated logs are read.
  std::string node_http_address;
};

enum class LogSource { kNodeManager, kAggregated };

struct LogChunk {
  std::string bytes;         // the file from `offset` to its current end
  int64_t offset = 0;        // where `bytes` starts: the offset asked for, or 0 when the file is
                             // now shorter than that (replaced or truncated: start over)
  int64_t file_length = 0;   // the whole file's length at this read
  LogSource source = LogSource::kNodeManager;
  // The file will not grow any more: it comes from the aggregated logs, or the NodeManager
  // says the container no longer runs.
  bool complete = false;
};

class YarnLogReader {
 public:
  // `user` owns the application (the aggregated logs are under <remote-app-log-dir>/<user>/)
  // and is sent to NodeManagers as user.name.
  YarnLogReader(const HadoopConf& conf, std::string user);
  // For tests: WebHDFS at a given NameNode (a FakeHdfs).
  YarnLogReader(const HadoopConf& conf, std::string user, WebHdfs hdfs);

  // The whole current content of `file` ("stdout", "stderr", "am.log", ...) of one container.
  // NotFound says why when neither place has it: no such file (naming the files there are),
  // the NodeManager no longer serves it and log aggregation is off, or the aggregated logs
  // are not in HDFS (yet). Unavailable when the NodeManager cannot be reached and HDFS has
  // nothing either; InvalidArgument for a malformed id.
  Result<std::string> Read(const std::string& app_id, const ContainerLogLocation& where, const std::string& file);

  // The same from byte `offset` on; for following a growing file. Errors as Read.
  Result<LogChunk> ReadFrom(const std::string& app_id, const ContainerLogLocation& where, const std::string& file,
                            int64_t offset);

  // The names of the container's log files (the NodeManager's directory order, or the
  // aggregated file's order). Errors as Read.
  Result<std::vector<std::string>> List(const std::string& app_id, const ContainerLogLocation& where);

  // How many bytes from the end a follow-mode read asks the NodeManager for (size=-N); more
  // new bytes than that cost a second, whole-file request.
  void set_tail_window_for_test(int64_t bytes) { tail_window_ = bytes; }

 private:
  // The NodeManager's web address for `where`, or "" when there is none to ask.
  std::string HttpAddress(const ContainerLogLocation& where) const;
  // Why the NodeManager was not the answer, to go with an aggregated-logs NotFound.
  std::string NmGoneReason(const ContainerLogLocation& where, const std::string& nm_said) const;
  Result<LogChunk> FromAggregated(const std::string& app_id, const ContainerLogLocation& where, const std::string& file,
                                  int64_t offset, const Status& nm_status, const std::string& nm_said);

  HadoopConf conf_;
  std::string user_;
  AggregatedLogs aggregated_;
  int64_t tail_window_ = 64 << 10;
};

}  // namespace loom::hadoop
