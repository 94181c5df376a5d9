#include "core/config/site_xml.h"

#include "core/files.h"
#include "core/testing.h"

namespace loom::config {
namespace {

using ::testing::HasSubstr;

TEST(SiteXml, ReadsNamesValuesAndSourcesTrimmed) {
  Result<std::vector<SiteProperty>> p = ParseSiteXml(R"(<configuration>
  <property><name> fs.defaultFS </name><value> hdfs://nn:8020 </value></property>
  <property><name>loom.worker.instances</name><value>2</value><source>--conf</source></property>
</configuration>)",
                                                     "site.xml");
  ASSERT_OK(p);
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[0].name, "fs.defaultFS");
  EXPECT_EQ((*p)[0].value, "hdfs://nn:8020");
  EXPECT_EQ((*p)[0].source, "");
  EXPECT_EQ((*p)[1].source, "--conf");
}

// Hadoop's Configuration: no <value> leaves the key unset; an empty one sets it empty.
TEST(SiteXml, NoValueIsSkippedAnEmptyValueIsKept) {
  Result<std::vector<SiteProperty>> p = ParseSiteXml(
      "<configuration><property><name>a</name></property><property><name>b</name><value></value></property>"
      "</configuration>",
      "site.xml");
  ASSERT_OK(p);
  ASSERT_EQ(p->size(), 1u);
  EXPECT_EQ((*p)[0].name, "b");
  EXPECT_EQ((*p)[0].value, "");
}

TEST(SiteXml, ErrorsNameTheSourceAndWhatIsWrong) {
  EXPECT_STATUS(ParseSiteXml("<configuration><property><value>1</value></property></configuration>", "x.xml"),
                kInvalidArgument, HasSubstr("x.xml: <property> #1 has no <name>"));
  EXPECT_STATUS(ParseSiteXml("<conf></conf>", "x.xml"), kInvalidArgument,
                HasSubstr("x.xml: no <configuration> root element"));
  EXPECT_STATUS(ParseSiteXml("<configuration>\n  <property>\n</configuration>", "x.xml"), kInvalidArgument,
                HasSubstr("x.xml: malformed XML at line 3, column "));
}

TEST(SiteXml, AMissingFileIsNamed) {
  std::string path = ::testing::TempDir() + "/site_xml_test_absent.xml";
  EXPECT_STATUS(ReadSiteXmlFile(path), kInvalidArgument, HasSubstr("config file " + path + " does not exist"));
  ASSERT_OK(WriteFileAtomic(path, "<configuration><property><name>k</name><value>v</value></property></configuration>"));
  Result<std::vector<SiteProperty>> p = ReadSiteXmlFile(path);
  ASSERT_OK(p);
  EXPECT_EQ(p->at(0).value, "v");
  (void)RemoveTree(path);
}

}  // namespace
}  // namespace loom::config
