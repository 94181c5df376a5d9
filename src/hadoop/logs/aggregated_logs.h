#pragma once
// An application's aggregated container logs in HDFS, found and read over WebHDFS.
//
// Where: for each log aggregation file format (yarn.log-aggregation.file-formats, then TFile
// and IFile if not listed, as Hadoop 3.3's readers do), with <root> =
// yarn.log-aggregation.<format>.remote-app-log-dir or yarn.nodemanager.remote-app-log-dir
// and <suffix> = yarn.log-aggregation.<format>.remote-app-log-dir-suffix or
// yarn.nodemanager.remote-app-log-dir-suffix + "-" + lowercase(format):
//   <root>/<user>/bucket-<suffix>/<app seq % 10000, 4 digits>/<appId>/   Hadoop 3.3
//   <root>/<user>/<suffix>/<appId>/                                     older 3.x (include-older)
//   <root>/<user>/<yarn.nodemanager.remote-app-log-dir-suffix>/<appId>/  Hadoop 2.x TFile
// Each directory holds one file per NodeManager, named <host>_<port> (rolling uploads add
// _<timestamp>); ".tmp" files (uploads in progress) and IFile "-checksum" side files are skipped.
// The format of a file is read from its bytes, not guessed from its directory.
//
// Not thread-safe (it caches what it read); one per thread.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/logs/aggregated_log_file.h"

namespace loom::hadoop {

// The HDFS directories that may hold `app_id`'s aggregated logs, most likely first;
// InvalidArgument for an app id that is not application_<ts>_<n>, or a remote log dir
// on another file system than HDFS.
Result<std::vector<std::string>> AggregatedLogDirs(const HadoopConf& conf, const std::string& user,
                                                   const std::string& app_id);

// "host:port" -> "host_port", the name of a NodeManager's aggregated file.
std::string NodeFileName(const std::string& node_id);

struct AggregatedNodeFile {
  std::string path;  // full HDFS path
  std::string name;  // "localhost_45454"
  int64_t length = 0;
  int64_t mtime_ms = 0;
};

// One container's log file as aggregated.
struct AggregatedLog {
  std::string bytes;
  int64_t mtime_ms = 0;  // IFile: the file's own; TFile: the aggregated file's HDFS mtime
  std::string path;      // the aggregated file it came from
};

class AggregatedLogs {
 public:
  AggregatedLogs(const HadoopConf& conf, std::string user);
  // For tests: a WebHdfs of one's own (e.g. at a FakeHdfs).
  AggregatedLogs(const HadoopConf& conf, std::string user, WebHdfs hdfs);

  // The aggregated files of `app_id`, from every directory that exists (sorted by name).
  // NotFound (naming the directories looked at) when none holds any; Unavailable etc. from
  // WebHDFS when HDFS cannot be asked.
  Result<std::vector<AggregatedNodeFile>> NodeFiles(const std::string& app_id);

  // The aggregated files of `node_id` ("host:port"; empty: every node), decoded. NotFound as
  // NodeFiles, or when no file is for that node.
  Result<std::vector<std::pair<AggregatedNodeFile, std::shared_ptr<const AggregatedLogFile>>>> Files(
      const std::string& app_id, const std::string& node_id);

  // `file` of `container_id`, concatenated over the files it appears in (rolling uploads).
  // NotFound says what is there instead (other containers, other files).
  Result<AggregatedLog> Read(const std::string& app_id, const std::string& node_id, const std::string& container_id,
                             const std::string& file);
  // The log file names of `container_id`, in file order, without repeats.
  Result<std::vector<std::string>> List(const std::string& app_id, const std::string& node_id,
                                        const std::string& container_id);

  // Files up to this size are read in one request; larger IFiles are read piece by piece
  // (trailer, index, then only the wanted log), larger TFiles still whole (their index
  // cannot locate a container).
  void set_whole_file_limit_for_test(int64_t bytes) { whole_file_limit_ = bytes; }
  // How many WebHDFS requests this object has made (for tests of the caching).
  int64_t requests_for_test() const { return requests_; }

 private:
  struct Cached {
    int64_t length = 0, mtime_ms = 0;
    std::shared_ptr<const AggregatedLogFile> file;
  };
  Result<std::shared_ptr<const AggregatedLogFile>> Load(const AggregatedNodeFile& f);
  Result<std::string> OpenRange(const std::string& path, int64_t offset, int64_t length);
  Status FillBytes(const AggregatedNodeFile& f, AggregatedLogFile& file, const std::string& container_id,
                   const std::string& log_file);

  HadoopConf conf_;
  std::string user_;
  WebHdfs hdfs_;
  int64_t whole_file_limit_ = 4 << 20;
  int64_t requests_ = 0;
  std::map<std::string, std::string> app_dir_;  // app id -> the directory found last time
  std::map<std::string, Cached> cache_;        // by path
};

}  // namespace loom::hadoop
