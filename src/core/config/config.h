#pragma once
// Config: Hadoop-style key/value configuration (TonY's tony.xml format), built in layers:
// built-in defaults < --conf_file < --conf K=V. Every `tony.*` key is stored under its `loom.*`
// name; where a value came from and how the user spelt its key are remembered, so errors can
// name the file or flag and the key as the user wrote it.
// Not thread-safe; build it once, then share it read-only.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/site_xml.h"
#include "core/status.h"

namespace loom::config {

// `tony.worker.memory` -> `loom.worker.memory`; other keys are returned unchanged.
std::string CanonicalKey(const std::string& key);

// The source of an entry Loom filled in itself (WithDefaults), not the user.
inline constexpr char kDefaultSource[] = "default";

struct ConfigEntry {
  std::string value;
  std::string source;        // "--conf", a flag such as "--src_dir", a file path, or "default"
  std::string original_key;  // as the user wrote it (may be a tony.* alias)
};

class Config {
 public:
  void Set(const std::string& key, const std::string& value, const std::string& source);
  void Unset(const std::string& key);
  // Reads <configuration><property><name/><value/></property>... from a file or a string
  // (site_xml.h, Hadoop's rules: a property without <value> sets nothing).
  // Each entry's source is `source` (the file's path); with `recorded_sources`, a property's own
  // <source> wins: only for Loom's own config.xml, which records where each key came from
  // (Hadoop's dumps carry <source> values such as "programmatically" that mean nothing here).
  Status MergeXmlFile(const std::string& path, bool recorded_sources = false);
  Status MergeXmlString(const std::string& xml, const std::string& source, bool recorded_sources = false);

  bool Has(const std::string& key) const;
  // Set by the user (a flag, --conf or a config file), not filled in as a default.
  bool IsExplicit(const std::string& key) const;
  // The explicit value, or nullopt. Use KeyRegistry for defaults.
  std::optional<std::string> Get(const std::string& key) const;
  const ConfigEntry* Entry(const std::string& key) const;
  const std::map<std::string, ConfigEntry>& entries() const { return entries_; }

  // Serialises as Hadoop configuration XML: each key as the user wrote it (as TonY's
  // tony-final.xml), with its <source>.
  std::string ToXml() const;

 private:
  void Merge(const std::vector<SiteProperty>& properties, const std::string& source, bool recorded_sources);

  std::map<std::string, ConfigEntry> entries_;
};

// "tony." when most keys the user wrote themselves (--conf and config files; flags and
// defaults do not count) are tony.* keys, else "loom.".
std::string UserPrefix(const Config& conf);

// How a message names `canonical_key` (a loom.* key): as the user wrote it when they set it, the
// flag when a flag set it (e.g. "--src_dir"), else in UserPrefix(conf). Use it in every message
// that names a key.
std::string Spelled(const Config& conf, const std::string& canonical_key);

// `text` with every "loom." key replaced by its spelling in `prefix` ("tony." or "loom.").
std::string Respell(const std::string& text, const std::string& prefix);

}  // namespace loom::config
