#include "history/event_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iterator>

namespace loom::history {

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status EventLog::Append(const std::string& type, nlohmann::json fields) {
  nlohmann::ordered_json line;
  line["ts"] = NowMillis();
  line["event"] = type;
  for (auto& [k, v] : fields.items()) line[k] = v;
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) return Status::FromErrno("open " + path_, errno);
  }
  ssize_t n = ::write(fd_, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) return Status::FromErrno("append to " + path_, errno);
  return Status::Ok();
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

EventLines ReadEventLines(const std::string& path, int64_t offset, int64_t max_bytes) {
  EventLines out{"", offset};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  // No bigger a buffer than what is there: every `loom status|list` and the portal's index
  // read whole small files, and a 1 MiB buffer zeroed for each cost more than the reading.
  struct stat st {};
  const int64_t there = ::fstat(fd, &st) == 0 ? st.st_size - offset : max_bytes;
  if (there <= 0) {
    ::close(fd);
    return out;
  }
  std::string buf;
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(std::min(max_bytes, there), 4096));
  size_t complete = std::string::npos;
  // Read `chunk`; where it holds no newline (one line longer than it), read on to the next.
  while (true) {
    const size_t had = buf.size();
    buf.resize(had + chunk);
    ssize_t n = ::pread(fd, buf.data() + had, chunk, offset + static_cast<int64_t>(had));
    buf.resize(had + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    complete = buf.rfind('\n');
    if (n <= 0 || complete != std::string::npos) break;
  }
  ::close(fd);
  if (complete == std::string::npos) return out;
  buf.resize(complete + 1);
  out.end = offset + static_cast<int64_t>(buf.size());
  out.text = std::move(buf);
  return out;
}

std::vector<nlohmann::json> ParseEvents(std::string_view text, int* skipped) {
  std::vector<nlohmann::json> out;
  int bad = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    try {
      out.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception&) {
      ++bad;
    }
  }
  if (skipped) *skipped = bad;
  return out;
}

namespace {

// The complete events of `path` from `*offset` to its end, which `*offset` is moved to.
std::vector<nlohmann::json> ReadEventsFrom(const std::string& path, int64_t* offset, int* skipped) {
  std::vector<nlohmann::json> events;
  int bad = 0;
  for (EventLines lines = ReadEventLines(path, *offset); !lines.text.empty();
       lines = ReadEventLines(path, *offset)) {
    int b = 0;
    std::vector<nlohmann::json> more = ParseEvents(lines.text, &b);
    bad += b;
    events.insert(events.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    *offset = lines.end;
  }
  if (skipped) *skipped = bad;
  return events;
}

}  // namespace

std::vector<nlohmann::json> ReadEvents(const std::string& path, int* skipped) {
  int64_t offset = 0;
  return ReadEventsFrom(path, &offset, skipped);
}

std::vector<nlohmann::json> EventTail::Next() { return ReadEventsFrom(path_, &offset_, nullptr); }

int64_t EventInt(const nlohmann::json& j, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return fallback;
  if (it->is_number_unsigned()) {
    uint64_t u = it->get<uint64_t>();
    return hi >= 0 && u <= static_cast<uint64_t>(hi) && static_cast<int64_t>(u) >= lo ? static_cast<int64_t>(u) : fallback;
  }
  int64_t v = it->get<int64_t>();
  return v >= lo && v <= hi ? v : fallback;
}

int64_t EventMillis(const nlohmann::json& j, const char* key, int64_t fallback) {
  return EventInt(j, key, fallback, 0, int64_t{1} << 50);
}

}  // namespace loom::history
