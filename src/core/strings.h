#pragma once
// Small string helpers shared by every component.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace loom {

std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty = true);
std::string Trim(std::string_view s);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
bool StartsWith(std::string_view s, std::string_view prefix);
// RFC 3986: unreserved characters stay, every other byte (space, '%', '?', '#', '/', non-ASCII)
// becomes %XX, so that a server decodes back exactly these bytes.
std::string PercentEncode(std::string_view s);
bool EndsWith(std::string_view s, std::string_view suffix);
std::string ToLower(std::string_view s);

// Edit distance, for "did you mean" suggestions.
size_t EditDistance(std::string_view a, std::string_view b);

Result<int64_t> ParseInt(std::string_view s);
Result<bool> ParseBool(std::string_view s);

// Parses "2g", "512m", "1024" (MiB when no unit), "1.5g"; returns MiB.
Result<int64_t> ParseMemoryMib(std::string_view s);
std::string FormatMib(int64_t mib);
// Milliseconds as the seconds of a *-sec key the user wrote: "2", "1.5".
std::string FormatSeconds(int64_t ms);

// Parses "K=V,K2=V2" (TonY's tony.execution.envs format) and a single "K=V".
Result<std::pair<std::string, std::string>> ParseKeyValue(std::string_view s);

// Quotes a string for /bin/sh.
std::string ShellQuote(std::string_view s);

}  // namespace loom
