#pragma once
// The one reader of Hadoop's configuration XML, for every file in that format Loom reads: the
// job config (tony.xml, loom.xml, a recorded config.xml) and the cluster's *-site.xml files.
// The rules are those of Hadoop's Configuration, so a file one reader accepts no other refuses:
//   <configuration><property><name>k</name><value>v</value>[<source>s</source>]</property>...
// names and values are trimmed; a property without <value> is skipped (it leaves the key
// unset, as tony-default.xml's tony.other.namenodes); <value></value> is the empty string; a
// property without <name> is an error naming its index; so is malformed XML (line and column)
// and a root other than <configuration>. ${var} expansion is the caller's (Hadoop expands on get).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace loom::config {

struct SiteProperty {
  std::string name;
  std::string value;
  std::string source;  // the <source> element ("" when absent): where a recorded config got the key
};

// InvalidArgument "<source>: ..." naming what is wrong.
Result<std::vector<SiteProperty>> ParseSiteXml(std::string_view xml, const std::string& source);
// The file at `path`; InvalidArgument naming the file when it does not exist or cannot be read.
Result<std::vector<SiteProperty>> ReadSiteXmlFile(const std::string& path);

// Where byte `offset` of `text` is, as an editor shows it: "line 3, column 14" (both from 1;
// columns count characters, not UTF-8 bytes). For XML parse errors.
std::string XmlErrorPlace(std::string_view text, ptrdiff_t offset);

}  // namespace loom::config
