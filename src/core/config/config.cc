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

std::string XmlErrorPlace(std::string_view text, ptrdiff_t offset) {
  size_t end = offset < 0 ? 0 : std::min(static_cast<size_t>(offset), text.size());
  int line = 1, column = 1;
  for (size_t i = 0; i < end; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {  // a UTF-8 continuation byte is not a column of its own
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

void Config::Set(const std::string& key, const std::string& value, const std::string& source) {
  entries_[CanonicalKey(Trim(key))] = ConfigEntry{value, source, Trim(key)};
}

void Config::Unset(const std::string& key) { entries_.erase(CanonicalKey(key)); }

Status Config::MergeXmlFile(const std::string& path, bool recorded_sources) {
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_file(path.c_str());
  if (r.status == pugi::status_file_not_found) {
    return Status::InvalidArgument("config file " + path + " does not exist");
  }
  if (r.status == pugi::status_io_error) {
    return Status::InvalidArgument("config file " + path + " cannot be read");
  }
  std::ostringstream ss;
  doc.save(ss);
  if (!r) {
    // pugixml's offset counts bytes of the file as read: place it in the same bytes.
    std::string text = ReadFile(path).value_or("");
    return Status::InvalidArgument("config file " + path + ": malformed XML at " + XmlErrorPlace(text, r.offset) +
                                   ": " + r.description());
  }
  return MergeXmlString(ss.str(), path, recorded_sources);
}

Status Config::MergeXmlString(const std::string& xml, const std::string& source, bool recorded_sources) {
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_string(xml.c_str());
  if (!r) {
    return Status::InvalidArgument(source + ": malformed XML at " + XmlErrorPlace(xml, r.offset) + ": " +
                                   r.description());
  }
  pugi::xml_node root = doc.child("configuration");
  if (!root) return Status::InvalidArgument(source + ": no <configuration> root element");
  int index = 0;
  for (pugi::xml_node prop : root.children("property")) {
    ++index;
    std::string name = Trim(prop.child_value("name"));
    if (name.empty()) {
      return Status::InvalidArgument(source + ": <property> #" + std::to_string(index) +
                                     " has no <name>");
    }
    // As Hadoop's Configuration: a property without a <value> (tony-default.xml's
    // tony.other.namenodes) leaves the key unset; an empty <value></value> sets it empty.
    if (!prop.child("value")) continue;
    std::string recorded = recorded_sources ? Trim(prop.child_value("source")) : "";
    Set(name, Trim(prop.child_value("value")), recorded.empty() ? source : recorded);
  }
  return Status::Ok();
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
