#include "yarn_double_test_fixture.h"

#include <cstdio>

#include "core/files.h"

namespace loom::yarn_double {

std::string MustRead(const std::string& path) {
  Result<std::string> r = ReadFile(path);
  EXPECT_TRUE(r.ok()) << path;
  return r.ok() ? *r : std::string();
}

namespace {

// Frames with their 4-byte length prefix.
std::vector<std::string> SplitFrames(std::string_view b) {
  std::vector<std::string> out;
  while (b.size() >= 4) {
    uint32_t len = (uint32_t{static_cast<uint8_t>(b[0])} << 24) | (uint32_t{static_cast<uint8_t>(b[1])} << 16) |
                   (uint32_t{static_cast<uint8_t>(b[2])} << 8) | uint32_t{static_cast<uint8_t>(b[3])};
    out.emplace_back(b.substr(0, 4 + len));
    b.remove_prefix(4 + len);
  }
  return out;
}

}  // namespace

Capture LoadCapture(const std::string& stem) {
  Capture c;
  std::string c2s = MustRead(CaptureDir() + stem + ".c2s.bin");
  if (c2s.rfind("hrpc", 0) == 0) {
    c.preamble = c2s.substr(0, 7);
    c2s = c2s.substr(7);
  }
  c.c2s = SplitFrames(c2s);
  c.s2c = SplitFrames(MustRead(CaptureDir() + stem + ".s2c.bin"));
  return c;
}

std::string HexDiff(const std::string& got, const std::string& want) {
  auto hex = [](const std::string& s) {
    std::string out;
    char b[4];
    for (unsigned char c : s) {
      std::snprintf(b, sizeof(b), "%02x", c);
      out += b;
    }
    return out;
  };
  return "\n got: " + hex(got) + "\nwant: " + hex(want);
}

hadoop::Token NmTokenOf(const yp::AllocateResponseProto& r) {
  const auto& t = r.nm_tokens(0).token();
  return hadoop::Token{t.identifier(), t.password(), t.kind(), t.service()};
}

}  // namespace loom::yarn_double
