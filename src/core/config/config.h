#pragma once
// Config: Hadoop-style key/value configuration (TonY's tony.xml format), built in layers:
// built-in defaults < --conf_file < --conf K=V. Every `tony.*` key is stored under its `loom.*`
// name; where a value came from is remembered so errors can name the file or flag.
// Not thread-safe; build it once, then share it read-only.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom::config {

// `tony.worker.memory` -> `loom.worker.memory`; other keys are returned unchanged.
std::string CanonicalKey(const std::string& key);

struct ConfigEntry {
  std::string value;
  std::string source;        // "--conf", a file path, or "default"
  std::string original_key;  // as the user wrote it (may be a tony.* alias)
};

class Config {
 public:
  void Set(const std::string& key, const std::string& value, const std::string& source);
  void Unset(const std::string& key);
  // Reads <configuration><property><name/><value/></property>... from a file or a string.
  Status MergeXmlFile(const std::string& path);
  Status MergeXmlString(const std::string& xml, const std::string& source);

  bool Has(const std::string& key) const;
  // The explicit value, or nullopt. Use KeyRegistry for defaults.
  std::optional<std::string> Get(const std::string& key) const;
  const ConfigEntry* Entry(const std::string& key) const;
  const std::map<std::string, ConfigEntry>& entries() const { return entries_; }

  // Serialises as Hadoop configuration XML, with each entry's <source>.
  std::string ToXml() const;

 private:
  std::map<std::string, ConfigEntry> entries_;
};

}  // namespace loom::config
