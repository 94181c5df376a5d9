#include "core/user_name.h"

#include <unistd.h>

#include <cstdlib>

#include "core/files.h"
#include "core/strings.h"

namespace loom {

std::optional<PasswdEntry> FindPasswdEntry(std::string_view passwd, uid_t uid) {
  for (const std::string& line : Split(passwd, '\n')) {
    if (line.empty() || line[0] == '#' || line[0] == '+' || line[0] == '-') continue;  // NIS markers
    std::vector<std::string> fields = Split(line, ':', /*skip_empty=*/false);
    if (fields.size() < 3 || fields[0].empty()) continue;
    Result<int64_t> id = ParseInt(fields[2]);
    if (id.ok() && *id == static_cast<int64_t>(uid)) return PasswdEntry{fields[0], fields.size() > 5 ? fields[5] : ""};
  }
  return std::nullopt;
}

std::optional<std::string> PasswdUserName(std::string_view passwd, uid_t uid) {
  if (auto entry = FindPasswdEntry(passwd, uid)) return entry->name;
  return std::nullopt;
}

std::optional<PasswdEntry> CurrentPasswdEntry() {
  auto passwd = ReadFile("/etc/passwd");
  if (!passwd.ok()) return std::nullopt;
  return FindPasswdEntry(*passwd, ::getuid());
}

std::string CurrentUserName() {
  for (const char* var : {"USER", "LOGNAME"}) {
    const char* value = std::getenv(var);
    if (value && *value) return value;
  }
  if (auto entry = CurrentPasswdEntry()) return entry->name;
  return "uid " + std::to_string(::getuid());
}

}  // namespace loom
