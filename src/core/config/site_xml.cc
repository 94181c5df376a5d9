#include "core/config/site_xml.h"

#include <algorithm>
#include <pugixml.hpp>

#include "core/files.h"
#include "core/strings.h"

namespace loom::config {

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

Result<std::vector<SiteProperty>> ParseSiteXml(std::string_view xml, const std::string& source) {
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_buffer(xml.data(), xml.size());
  if (!r) {
    return Status::InvalidArgument(source + ": malformed XML at " + XmlErrorPlace(xml, r.offset) + ": " +
                                   r.description());
  }
  pugi::xml_node root = doc.child("configuration");
  if (!root) return Status::InvalidArgument(source + ": no <configuration> root element");
  std::vector<SiteProperty> properties;
  int index = 0;
  for (pugi::xml_node prop : root.children("property")) {
    ++index;
    std::string name = Trim(prop.child_value("name"));
    if (name.empty()) {
      return Status::InvalidArgument(source + ": <property> #" + std::to_string(index) + " has no <name>");
    }
    if (!prop.child("value")) continue;
    properties.push_back({name, Trim(prop.child_value("value")), Trim(prop.child_value("source"))});
  }
  return properties;
}

Result<std::vector<SiteProperty>> ReadSiteXmlFile(const std::string& path) {
  if (!PathExists(path)) return Status::InvalidArgument("config file " + path + " does not exist");
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return Status::InvalidArgument("config file " + path + " cannot be read");
  return ParseSiteXml(*text, "config file " + path);
}

}  // namespace loom::config
