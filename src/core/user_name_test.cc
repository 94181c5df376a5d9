#include "core/user_name.h"

#include "core/testing.h"

namespace loom {
namespace {

constexpr char kPasswd[] =
    "root:x:0:0:root:/root:/bin/bash\n"
    "# a comment\n"
    "+nisuser::::::\n"
    "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    "alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash\n"
    "broken line\n";

TEST(PasswdUserName, FindsTheNameOfAUid) {
  EXPECT_EQ(PasswdUserName(kPasswd, 0), "root");
  EXPECT_EQ(PasswdUserName(kPasswd, 1000), "alice");
  EXPECT_EQ(PasswdUserName(kPasswd, 1), "daemon");
}

TEST(PasswdUserName, UnknownUidOrBadLinesGiveNothing) {
  EXPECT_EQ(PasswdUserName(kPasswd, 4242), std::nullopt);
  EXPECT_EQ(PasswdUserName("", 0), std::nullopt);
  EXPECT_EQ(PasswdUserName("bob:x:notanumber:1::/:/bin/sh\n", 0), std::nullopt);
}

TEST(FindPasswdEntry, GivesTheHomeBesideTheName) {
  auto alice = FindPasswdEntry(kPasswd, 1000);
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->name, "alice");
  EXPECT_EQ(alice->home, "/home/alice");
  // A short line has a name but no home.
  auto short_line = FindPasswdEntry("carol:x:7\n", 7);
  ASSERT_TRUE(short_line.has_value());
  EXPECT_EQ(short_line->name, "carol");
  EXPECT_EQ(short_line->home, "");
}

}  // namespace
}  // namespace loom
