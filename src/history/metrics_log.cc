#include "history/metrics_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "history/event_log.h"

namespace loom::history {

namespace {
constexpr int64_t kMaxBytes = int64_t{1} << 60;  // any byte count a sane writer gives

// A number of `key` in [lo, hi]; nothing when absent or not one.
std::optional<int64_t> IntIn(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) return std::nullopt;
  return v;
}
}  // namespace

std::string SampleLine(const TaskSample& s) {
  nlohmann::ordered_json line;
  line["ms"] = s.ms;
  line["task"] = s.task;
  if (s.cpu_cores && std::isfinite(*s.cpu_cores)) line["cpu"] = std::round(std::max(0.0, *s.cpu_cores) * 100) / 100;
  line["rss"] = s.rss_bytes;
  if (!s.gpus.empty()) {
    nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
    for (const GpuValue& g : s.gpus) {
      gpus.push_back({{"i", g.index}, {"util", g.utilization_percent}, {"mem", g.memory_bytes}});
    }
    line["gpus"] = std::move(gpus);
  }
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::optional<TaskSample> ParseSampleLine(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  TaskSample s;
  auto task = j.find("task");
  auto ms = IntIn(j, "ms", 0, int64_t{1} << 50);
  auto rss = IntIn(j, "rss", 0, kMaxBytes);
  if (task == j.end() || !task->is_string() || task->get<std::string>().empty() || !ms || !rss) return std::nullopt;
  s.task = task->get<std::string>();
  s.ms = *ms;
  s.rss_bytes = *rss;
  if (auto cpu = j.find("cpu"); cpu != j.end()) {
    if (!cpu->is_number() || !std::isfinite(cpu->get<double>()) || cpu->get<double>() < 0) return std::nullopt;
    s.cpu_cores = cpu->get<double>();
  }
  if (auto gpus = j.find("gpus"); gpus != j.end()) {
    if (!gpus->is_array()) return std::nullopt;
    for (const auto& g : *gpus) {
      if (!g.is_object()) return std::nullopt;
      auto i = IntIn(g, "i", 0, 1 << 20);
      auto util = IntIn(g, "util", 0, 100);
      auto mem = IntIn(g, "mem", 0, kMaxBytes);
      if (!i || !util || !mem) return std::nullopt;
      s.gpus.push_back({static_cast<int>(*i), static_cast<int>(*util), *mem});
    }
  }
  return s;
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

Status MetricsLog::Append(const TaskSample& s) {
  std::string text = SampleLine(s);
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) return Status::FromErrno("open " + path_, errno);
    struct stat st {};
    if (::fstat(fd_, &st) == 0) size_ = st.st_size;  // an AM attempt after another appends
  }
  if (size_ + static_cast<int64_t>(text.size()) > max_bytes_) {
    return Status::ResourceExhausted(path_ + " holds " + std::to_string(size_ >> 20) + " MiB, its limit: later samples are not kept");
  }
  ssize_t n = ::write(fd_, text.data(), text.size());
  if (n > 0) size_ += n;
  if (n != static_cast<ssize_t>(text.size())) return Status::FromErrno("append to " + path_, errno);
  return Status::Ok();
}

namespace {

// Calls `fn` with each complete line of the file at `path`, newest first, reading back from its
// end in chunks, until `fn` returns false or `max_scan` bytes were read. What follows the last
// newline (a line still being written, or cut by a crash) is never a line; a line cut by the
// scan's limit is passed as it is (it fails to parse).
template <typename Fn>
void ForEachLineBackward(const std::string& path, int64_t max_scan, Fn fn) {
  constexpr int64_t kChunk = 64 << 10;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  int64_t pos = ::fstat(fd, &st) == 0 ? st.st_size : 0;
  const int64_t stop = std::max<int64_t>(0, pos - max_scan);
  // `tail`: what follows the chunk read last up to the end of the lines not yet passed: the
  // start of a line that began in an earlier chunk. Empty at first.
  std::string tail;
  bool last_line_dropped = false;
  bool more = true;
  while (more && pos > stop) {
    const int64_t n = std::min(kChunk, pos - stop);
    pos -= n;
    std::string text = ReadAt(fd, pos, n);
    if (static_cast<int64_t>(text.size()) != n) break;
    text += tail;
    if (!last_line_dropped) {
      size_t nl = text.rfind('\n');
      if (nl == std::string::npos) {  // no line ends in what was read so far
        tail = std::move(text);
        continue;
      }
      text.resize(nl + 1);
      last_line_dropped = true;
    }
    // The first line of the chunk may have begun before it: kept for the next one, unless the
    // file (or the scan) starts here.
    size_t first = 0;
    if (pos > stop) {
      size_t nl = text.find('\n');
      tail = text.substr(0, nl + 1);
      first = nl + 1;
    } else {
      tail.clear();
    }
    size_t end = text.size();
    while (more && end > first) {
      // text[end - 1] ends the line; the one before it ends the line before.
      size_t begin = first;
      if (end - 1 > first) {
        size_t nl = text.rfind('\n', end - 2);
        if (nl != std::string::npos && nl >= first) begin = nl + 1;
      }
      std::string_view line(text.data() + begin, end - 1 - begin);
      end = begin;
      if (!line.empty()) more = fn(line);
    }
  }
  ::close(fd);
}

}  // namespace

std::map<std::string, TaskSample> ReadLatestSamples(const std::string& path, const std::set<std::string>& tasks,
                                                    int64_t max_scan) {
  std::map<std::string, TaskSample> found;
  if (tasks.empty()) return found;
  ForEachLineBackward(path, max_scan, [&](std::string_view line) {
    if (line.find("\"task\"") == std::string_view::npos) return true;
    std::optional<TaskSample> s = ParseSampleLine(line);
    if (s && tasks.count(s->task) && !found.count(s->task)) {
      std::string task = s->task;
      found.emplace(std::move(task), std::move(*s));
    }
    return found.size() < tasks.size();
  });
  return found;
}

std::vector<TaskSample> ReadSamplesAfter(const std::string& path, int64_t after_ms, size_t max_samples,
                                         bool* truncated) {
  std::vector<TaskSample> out;
  if (truncated) *truncated = false;
  // The AM appends in the order samples arrive, so "ms" only grows but for a sample a moment
  // late: a few seconds' grace before the scan stops.
  constexpr int64_t kLateMs = 10'000;
  ForEachLineBackward(path, int64_t{1} << 62, [&](std::string_view line) {
    std::optional<TaskSample> s = ParseSampleLine(line);
    if (!s) return true;
    if (s->ms <= after_ms) return s->ms > after_ms - kLateMs;
    if (out.size() == max_samples) {
      if (truncated) *truncated = true;
      return false;
    }
    out.push_back(std::move(*s));
    return true;
  });
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<TaskSample> ReadSamples(const std::string& path, int* skipped) {
  std::vector<TaskSample> out;
  if (skipped) *skipped = 0;
  auto text = ReadFile(path);
  if (!text.ok()) return out;
  size_t start = 0;
  for (size_t nl; (nl = text->find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(text->data() + start, nl - start);
    if (line.empty()) continue;
    if (auto s = ParseSampleLine(line)) {
      out.push_back(std::move(*s));
    } else if (skipped) {
      ++*skipped;
    }
  }
  return out;
}

}  // namespace loom::history
