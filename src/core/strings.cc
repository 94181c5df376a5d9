#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace loom {

std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    std::string part(s.substr(start, end - start));
    if (!skip_empty || !Trim(part).empty()) out.push_back(skip_empty ? Trim(part) : part);
    start = end + 1;
  }
  return out;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

Result<int64_t> ParseInt(std::string_view s) {
  std::string t = Trim(s);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) {
    return Status::InvalidArgument("'" + std::string(s) + "' is not an integer");
  }
  return v;
}

Result<bool> ParseBool(std::string_view s) {
  std::string t = ToLower(Trim(s));
  if (t == "true" || t == "1" || t == "yes") return true;
  if (t == "false" || t == "0" || t == "no") return false;
  return Status::InvalidArgument("'" + std::string(s) + "' is not a boolean (true/false)");
}

Result<int64_t> ParseMemoryMib(std::string_view s) {
  std::string t = ToLower(Trim(s));
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(s) +
                                   "' is not a memory size (expected e.g. 512m, 2g, 2048)");
  };
  if (t.empty()) return bad();
  double mult = 1;  // MiB, YARN's unit when none is given.
  char unit = t.back();
  if (std::isalpha(static_cast<unsigned char>(unit))) {
    t.pop_back();
    if (!t.empty() && (unit == 'b') && std::isalpha(static_cast<unsigned char>(t.back()))) {
      unit = t.back();  // "gb", "mb"
      t.pop_back();
    }
    switch (unit) {
      case 'k': mult = 1.0 / 1024; break;
      case 'm': mult = 1; break;
      case 'g': mult = 1024; break;
      case 't': mult = 1024 * 1024; break;
      default: return bad();
    }
  }
  if (t.empty()) return bad();
  double v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || ptr != t.data() + t.size() || v < 0 || !std::isfinite(v)) return bad();
  return static_cast<int64_t>(std::llround(v * mult));
}

std::string FormatMib(int64_t mib) {
  if (mib >= 1024 && mib % 1024 == 0) return std::to_string(mib / 1024) + "g";
  return std::to_string(mib) + "m";
}

std::string FormatSeconds(int64_t ms) {
  std::string s = std::to_string(ms / 1000);
  if (ms % 1000) {
    std::string frac = std::to_string(1000 + ms % 1000).substr(1);
    while (frac.back() == '0') frac.pop_back();
    s += "." + frac;
  }
  return s;
}

Result<std::pair<std::string, std::string>> ParseKeyValue(std::string_view s) {
  size_t eq = s.find('=');
  std::string key = Trim(s.substr(0, eq == std::string_view::npos ? s.size() : eq));
  if (eq == std::string_view::npos || key.empty()) {
    return Status::InvalidArgument("'" + std::string(s) + "' is not of the form KEY=VALUE");
  }
  return std::make_pair(key, std::string(s.substr(eq + 1)));
}

std::string ShellQuote(std::string_view s) {
  bool safe = !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("@%_-+=:,./").find(c) != std::string_view::npos;
  });
  if (safe) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string PercentEncode(std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace loom
