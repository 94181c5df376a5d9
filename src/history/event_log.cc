#include "history/event_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

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

std::vector<nlohmann::json> ReadEvents(const std::string& path, int* skipped) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  int bad = 0;
  while (std::getline(in, line)) {
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
