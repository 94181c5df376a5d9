#include "web/job_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "core/config/site_xml.h"
#include "core/files.h"
#include "core/strings.h"

namespace loom::web {

namespace {

bool BadComponent(const std::string& c) { return c.empty() || c == "." || c == ".."; }

int64_t FileSize(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_size : 0;
}

}  // namespace

Result<int> OpenBelow(const std::string& root, const std::string& relative) {
  std::vector<std::string> parts = Split(relative, '/', /*skip_empty=*/false);
  if (parts.empty()) return Status::InvalidArgument("no path");
  for (const std::string& p : parts) {
    if (BadComponent(p)) return Status::InvalidArgument("bad path component in " + relative);
  }
  int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return Status::NotFound("no directory " + root);
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY);
    int next = ::openat(dir, parts[i].c_str(), flags);
    const int err = errno;
    ::close(dir);
    if (next < 0) {
      // O_NOFOLLOW on a link: ELOOP; O_DIRECTORY on a link to a directory: ENOTDIR.
      if (err == ELOOP || err == ENOTDIR) return Status::PermissionDenied(relative + ": a link or not a directory");
      return Status::NotFound(relative + ": no such file");
    }
    dir = next;
  }
  struct stat st {};
  if (::fstat(dir, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(dir);
    return Status::PermissionDenied(relative + ": not a plain file");
  }
  return dir;
}

Status CheckRecordHasNoLinks(const std::string& root, const std::string& relative) {
  for (const char* file : {"job.json", "events.jsonl", "status.json", "metrics.jsonl", "config.xml"}) {
    auto fd = OpenBelow(root, relative.empty() ? file : relative + "/" + file);
    if (fd.ok()) {
      ::close(*fd);
    } else if (fd.status().code() != StatusCode::kNotFound) {
      return fd.status();
    }
  }
  return Status::Ok();
}

EventsChunk ReadEventsFrom(int fd, int64_t cursor, size_t max_events) {
  EventsChunk chunk;
  const int64_t size = FileSize(fd);
  if (cursor < 0 || cursor > size) cursor = 0;
  chunk.next = cursor;
  // At most 4 MiB a call: a long job's events.jsonl is megabytes, a poll wants the new lines.
  constexpr int64_t kMaxRead = 4 << 20;
  const std::string text = ReadAt(fd, cursor, std::min(kMaxRead, size - cursor));
  ::close(fd);
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (chunk.events.size() == max_events) {
      chunk.more = true;
      return chunk;
    }
    chunk.next = cursor + static_cast<int64_t>(nl + 1);
    nlohmann::json e = nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(start),
                                             text.begin() + static_cast<std::ptrdiff_t>(nl), nullptr,
                                             /*allow_exceptions=*/false);
    if (e.is_object()) chunk.events.push_back(std::move(e));
  }
  if (cursor + static_cast<int64_t>(text.size()) < size) {
    chunk.more = true;
    // One line longer than a whole read is no event anyone wrote: stepped over.
    if (start == 0) chunk.next = cursor + static_cast<int64_t>(text.size());
  }
  return chunk;
}

LogChunk ReadLogChunk(int fd, int64_t offset, int64_t limit) {
  LogChunk chunk;
  chunk.size = FileSize(fd);
  chunk.offset = offset < 0 ? std::max<int64_t>(0, chunk.size + offset) : std::min(offset, chunk.size);
  chunk.data = ReadAt(fd, chunk.offset, std::min(limit, chunk.size - chunk.offset));
  chunk.eof = chunk.offset + static_cast<int64_t>(chunk.data.size()) >= chunk.size;
  ::close(fd);
  return chunk;
}

bool IsSecretKey(const std::string& key) {
  std::string k = key;
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"password", "secret", "token", "credential", "passwd"}) {
    if (k.find(word) != std::string::npos) return true;
  }
  return false;
}

Result<nlohmann::json> ConfigEntries(const std::string& config_xml_text, const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::vector<config::SiteProperty> props, config::ParseSiteXml(config_xml_text, path));
  std::sort(props.begin(), props.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  nlohmann::json entries = nlohmann::json::array();
  for (const config::SiteProperty& p : props) {
    entries.push_back({{"key", p.name}, {"value", IsSecretKey(p.name) ? "<redacted>" : p.value}, {"source", p.source}});
  }
  return entries;
}

}  // namespace loom::web
