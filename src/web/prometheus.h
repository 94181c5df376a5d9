#pragma once
// Prometheus' text exposition format (version 0.0.4), which `promtool check metrics` reads:
// each family once, its # HELP and # TYPE lines first, then its samples; label values escape
// backslash, double quote and newline; values in Go's float spelling (NaN, +Inf, -Inf).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::web {

using PrometheusLabels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  // Starts a family; its samples follow. `type`: gauge or counter (a counter's name ends in
  // _total). The caller keeps each family's samples together.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, const PrometheusLabels& labels, double value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// A label value as the format writes it between its quotes.
std::string EscapeLabelValue(std::string_view value);

inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace loom::web
