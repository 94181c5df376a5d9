#include "core/config/config.h"

#include <pugixml.hpp>
#include <sstream>

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

Status Config::MergeXmlFile(const std::string& path) {
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
    return Status::InvalidArgument("config file " + path + ": malformed XML at offset " +
                                   std::to_string(r.offset) + ": " + r.description());
  }
  return MergeXmlString(ss.str(), path);
}

Status Config::MergeXmlString(const std::string& xml, const std::string& source) {
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_string(xml.c_str());
  if (!r) {
    return Status::InvalidArgument(source + ": malformed XML at offset " + std::to_string(r.offset) +
                                   ": " + r.description());
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
    if (!prop.child("value")) {
      return Status::InvalidArgument(source + ": property " + name + " has no <value>");
    }
    Set(name, Trim(prop.child_value("value")), source);
  }
  return Status::Ok();
}

bool Config::Has(const std::string& key) const { return entries_.count(CanonicalKey(key)) > 0; }

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
    p.append_child("name").text() = key.c_str();
    p.append_child("value").text() = e.value.c_str();
    p.append_child("source").text() = e.source.c_str();
  }
  std::ostringstream ss;
  doc.save(ss, "  ");
  return ss.str();
}

}  // namespace loom::config
