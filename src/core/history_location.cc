#include "core/history_location.h"

#include <sys/random.h>
#include <unistd.h>

#include <cstdio>

#include "core/config/key_registry.h"
#include "core/strings.h"

namespace loom {

namespace {

constexpr char kKey[] = "loom.history.location";
// tony-default.xml's value: a placeholder that asks for nothing.
constexpr char kTonyPlaceholder[] = "/path/to/tony-history";

}  // namespace

const std::vector<std::string>& HistoryRecordFiles() {
  static const std::vector<std::string> kFiles = {"job.json", "config.xml", "events.jsonl", "metrics.jsonl",
                                                  kHistoryStatusFile};
  return kFiles;
}

std::string HistoryTempSuffix() {
  unsigned int r = 0;
  (void)!::getrandom(&r, sizeof(r), 0);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%d-%08x", static_cast<int>(::getpid()), r);
  return buf;
}

bool IsHistoryJobId(std::string_view name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.';
    if (!ok) return false;
  }
  return true;
}

Result<HistoryLocation> ParseHistoryLocation(const config::Config& conf) {
  HistoryLocation loc;
  loc.value = Trim(config::GetString(conf, "loom.history.location"));
  if (loc.value.empty() || loc.value == kTonyPlaceholder) return loc;
  std::string source;
  if (const config::ConfigEntry* e = conf.Entry(kKey)) source = " (from " + e->source + ")";
  auto refuse = [&](const std::string& why) {
    return Status::InvalidArgument(config::Spelled(conf, kKey) + "='" + loc.value + "'" + source + ": " + why +
                                   "; expected a directory: hdfs:///path, hdfs://<fs.defaultFS's host:port>/path or "
                                   "/path (HDFS) for --cluster yarn, /path or file:///path for --cluster local");
  };
  for (char c : loc.value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return refuse("it holds a control character");
  }
  std::string rest = loc.value;
  if (size_t colon = rest.find(':'); colon != std::string::npos && rest[0] != '/') {
    std::string scheme = ToLower(rest.substr(0, colon));
    rest = rest.substr(colon + 1);
    if (scheme != "hdfs" && scheme != "file") return refuse("Loom writes job records to HDFS or a local directory, not " + scheme);
    if (!StartsWith(rest, "//")) return refuse(scheme + ": needs " + scheme + ":///path");
    rest = rest.substr(2);
    size_t slash = rest.find('/');
    loc.authority = slash == std::string::npos ? rest : rest.substr(0, slash);
    rest = slash == std::string::npos ? "" : rest.substr(slash);
    if (scheme == "file" && !loc.authority.empty() && ToLower(loc.authority) != "localhost") {
      return refuse("file:// names a directory on this machine (file:///path), not on " + loc.authority);
    }
    if (scheme == "file") loc.authority.clear();
    loc.scheme = scheme == "hdfs" ? HistoryLocation::Scheme::kHdfs : HistoryLocation::Scheme::kFile;
  } else {
    loc.scheme = HistoryLocation::Scheme::kPath;
  }
  if (rest.find_first_of("?#") != std::string::npos) return refuse("a directory has no query or fragment");
  if (rest.empty() || rest[0] != '/') return refuse("the directory must be an absolute path");
  std::string normal;
  for (const std::string& part : Split(rest, '/')) {
    if (part == "." || part == "..") return refuse("no '.' or '..' in the path");
    normal += "/" + part;
  }
  if (normal.empty()) return refuse("the root directory itself would mix job records with everything else");
  loc.path = normal;
  return loc;
}

}  // namespace loom
