#include "core/user_name.h"

#include <unistd.h>

#include <cstdlib>

#include "core/files.h"
#include "core/strings.h"

namespace loom {

std::optional<std::string> PasswdUserName(std::string_view passwd, uid_t uid) {
  for (const std::string& line : Split(passwd, '\n')) {
    if (line.empty() || line[0] == '#' || line[0] == '+' || line[0] == '-') continue;  // NIS markers
    std::vector<std::string> fields = Split(line, ':', /*skip_empty=*/false);
    if (fields.size() < 3 || fields[0].empty()) continue;
    Result<int64_t> id = ParseInt(fields[2]);
    if (id.ok() && *id == static_cast<int64_t>(uid)) return fields[0];
  }
  return std::nullopt;
}

std::string CurrentUserName() {
  for (const char* var : {"USER", "LOGNAME"}) {
    const char* value = std::getenv(var);
    if (value && *value) return value;
  }
  uid_t uid = ::getuid();
  if (auto passwd = ReadFile("/etc/passwd"); passwd.ok()) {
    if (auto name = PasswdUserName(*passwd, uid)) return *name;
  }
  return "uid " + std::to_string(uid);
}

}  // namespace loom
