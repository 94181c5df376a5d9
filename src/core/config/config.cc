#include "core/config/config.h"

#include <algorithm>
#include <cctype>
#include <pugixml.hpp>
#include <sstream>

#include "core/files.h"
#include "core/strings.h"

namespace loom::config {

std::string CanonicalKey(const std::string& key) {
  if (StartsWith(key, "tony.")) return "loom." + key.substr(5);
  return key;
}

void Config::Set(const std::string& key, const std::string& value, const std::string& source) {
  entries_[CanonicalKey(Trim(key))] = ConfigEntry{value, source, Trim(key)};
}

void Config::Unset(const std::string& key) { entries_.erase(CanonicalKey(key)); }

Status Config::MergeXmlFile(const std::string& path, bool recorded_sources) {
  LOOM_ASSIGN_OR_RETURN(std::vector<SiteProperty> properties, ReadSiteXmlFile(path));
  Merge(properties, path, recorded_sources);
  return Status::Ok();
}

Status Config::MergeXmlString(const std::string& xml, const std::string& source, bool recorded_sources) {
  LOOM_ASSIGN_OR_RETURN(std::vector<SiteProperty> properties, ParseSiteXml(xml, source));
  Merge(properties, source, recorded_sources);
  return Status::Ok();
}

void Config::Merge(const std::vector<SiteProperty>& properties, const std::string& source, bool recorded_sources) {
  for (const SiteProperty& p : properties) {
    Set(p.name, p.value, recorded_sources && !p.source.empty() ? p.source : source);
  }
}

bool Config::Has(const std::string& key) const { return entries_.count(CanonicalKey(key)) > 0; }

bool Config::IsExplicit(const std::string& key) const {
  const ConfigEntry* e = Entry(key);
  return e && e->source != kDefaultSource;
}

std::optional<std::string> Config::Get(const std::string& key) const {
  auto it = entries_.find(CanonicalKey(key));
  if (it == entries_.end()) return std::nullopt;
  return it->second.value;
}

const ConfigEntry* Config::Entry(const std::string& key) const {
  auto it = entries_.find(CanonicalKey(key));
  return it == entries_.end() ? nullptr : &it->second;
}

std::string Config::ToXml() const {
  pugi::xml_document doc;
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  pugi::xml_node root = doc.append_child("configuration");
  for (const auto& [key, e] : entries_) {
    pugi::xml_node p = root.append_child("property");
    p.append_child("name").text() = (e.original_key.empty() ? key : e.original_key).c_str();
    p.append_child("value").text() = e.value.c_str();
    p.append_child("source").text() = e.source.c_str();
  }
  std::ostringstream ss;
  doc.save(ss, "  ");
  return ss.str();
}

namespace {

// A flag of `loom submit` (--src_dir, --shell_env, ...) set the entry under its loom.* name;
// --conf is where the user spells keys themselves.
bool SetByFlag(const ConfigEntry& e) { return StartsWith(e.source, "--") && e.source != "--conf"; }

}  // namespace

std::string UserPrefix(const Config& conf) {
  int tony = 0, loom = 0;
  for (const auto& [key, e] : conf.entries()) {
    if (e.source == kDefaultSource || SetByFlag(e)) continue;
    if (StartsWith(e.original_key, "tony.")) {
      ++tony;
    } else if (StartsWith(e.original_key, "loom.")) {
      ++loom;
    }
  }
  return tony > loom ? "tony." : "loom.";
}

std::string Spelled(const Config& conf, const std::string& canonical_key) {
  std::string key = CanonicalKey(canonical_key);
  if (const ConfigEntry* e = conf.Entry(key); e && e->source != kDefaultSource) {
    if (SetByFlag(*e)) return e->source;
    if (!e->original_key.empty()) return e->original_key;
  }
  return Respell(key, UserPrefix(conf));
}

std::string Respell(const std::string& text, const std::string& prefix) {
  if (prefix == "loom.") return text;
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t at = text.find("loom.", i);
    if (at == std::string::npos) break;
    // Only a key's start: not the tail of another word or path (".loom.secret", "x/loom.d").
    char before = at == 0 ? ' ' : text[at - 1];
    bool starts_key = !(std::isalnum(static_cast<unsigned char>(before)) || before == '.' || before == '/' ||
                        before == '_' || before == '-');
    out += text.substr(i, at - i);
    out += starts_key ? prefix : std::string("loom.");
    i = at + 5;
  }
  out += text.substr(i);
  return out;
}

}  // namespace loom::config
