#pragma once
// metrics.jsonl: the samples of a job's tasks over time, so that they outlive the job. The AM
// writes one line per task per sample, as heartbeats bring them (each executor samples every
// loom.task.metrics-interval-ms, 5 s by default); `loom status` reads each running task's
// latest. A line, in this order, keys kept short since there are many:
//
//   {"ms":1764412345678,"task":"worker:0","cpu":1.02,"rss":524288000,
//    "gpus":[{"i":0,"util":87,"mem":17179869184}]}
//
// ms: when the AM received it (the clock of events.jsonl's "ts"); cpu: cores, two decimals,
// absent on a task's first sample (nothing to measure over yet); rss: bytes; gpus: each of the
// task's GPUs (index, utilisation %, memory used in bytes), absent without GPU metrics.
//
// Size: a line is about 70 bytes, 40 more per GPU: at the default interval one task writes
// about 50 KiB an hour (1.2 MiB a day), 100 tasks with 8 GPUs each about 25 MiB an hour. The
// writer stops at 256 MiB (kDefaultMaxBytes), days of a large job at the default interval; the
// samples after that are dropped (the AM says so once, in a JOB_WARNING), the peaks in the
// exit reports stay exact.

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace loom::history {

struct GpuValue {
  int index = 0;
  int utilization_percent = 0;
  int64_t memory_bytes = 0;
  bool operator==(const GpuValue&) const = default;
};

struct TaskSample {
  int64_t ms = 0;
  std::string task;  // "worker:0"
  std::optional<double> cpu_cores;
  int64_t rss_bytes = 0;
  std::vector<GpuValue> gpus;
};

// The sample as its line, newline included.
std::string SampleLine(const TaskSample& s);
// A line back (without its newline); nothing for a malformed one (no task, a value of the
// wrong type or out of range).
std::optional<TaskSample> ParseSampleLine(std::string_view line);

// Appends samples to metrics.jsonl, each line with one write(2) on an O_APPEND descriptor (a
// reader never sees half a line, except where a crash left one). Thread-safe: the AM appends
// from its gRPC threads.
class MetricsLog {
 public:
  static constexpr int64_t kDefaultMaxBytes = int64_t{256} << 20;

  explicit MetricsLog(std::string path, int64_t max_bytes = kDefaultMaxBytes)
      : path_(std::move(path)), max_bytes_(max_bytes) {}
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // ResourceExhausted once the file holds max_bytes (nothing more is written; a file already
  // that large when first opened counts); the error of open or write otherwise.
  Status Append(const TaskSample& s);

 private:
  std::mutex mu_;
  std::string path_;
  int64_t max_bytes_;
  int fd_ = -1;      // opened on first use, kept
  int64_t size_ = 0;  // of the file, once opened
};

// The last complete sample of each of `tasks` in the file at `path`, read back from its end in
// chunks until every one is found or `max_scan` bytes were read (a task not found by then is
// left out, as one the file does not name). Lines of other tasks, malformed lines and an
// unfinished last line are skipped; no file: nothing.
std::map<std::string, TaskSample> ReadLatestSamples(const std::string& path, const std::set<std::string>& tasks,
                                                    int64_t max_scan = int64_t{16} << 20);

// The samples newer than `after_ms` (all with 0), oldest first: the newest `max_samples` of
// them, read back from the file's end (`truncated` says whether older ones were left out).
// What a dashboard asks for every few seconds: the cost is that of the new lines, not of the file.
std::vector<TaskSample> ReadSamplesAfter(const std::string& path, int64_t after_ms, size_t max_samples,
                                         bool* truncated = nullptr);

// Every complete sample of the file, in order; malformed lines are skipped (and counted).
std::vector<TaskSample> ReadSamples(const std::string& path, int* skipped = nullptr);

}  // namespace loom::history
