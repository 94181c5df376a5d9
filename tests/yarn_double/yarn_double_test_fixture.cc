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

std::string Submit(TestIpc& rm, const std::string& command, int64_t memory_mb,
                   const yp::ContainerLaunchContextProto& base) {
  auto na = rm.CallOk<yp::GetNewApplicationResponseProto>("getNewApplication", kClientProtocol,
                                                           yp::GetNewApplicationRequestProto());
  yp::SubmitApplicationRequestProto sub;
  auto* asc = sub.mutable_application_submission_context();
  *asc->mutable_application_id() = na.application_id();
  asc->set_application_name("e2e");
  asc->set_queue("default");
  asc->add_applicationtags("Loom-Test");
  asc->mutable_resource()->set_memory(memory_mb);
  asc->mutable_resource()->set_virtual_cores(1);
  *asc->mutable_am_container_spec() = base;
  asc->mutable_am_container_spec()->add_command(command);
  rm.CallOk<yp::SubmitApplicationResponseProto>("submitApplication", kClientProtocol, sub);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "application_%lld_%04d",
                static_cast<long long>(na.application_id().cluster_timestamp()), na.application_id().id());
  return buf;
}

yp::ApplicationReportProto Report(TestIpc& rm, const std::string& app_id) {
  yp::GetApplicationReportRequestProto req;
  size_t a = app_id.find('_'), b = app_id.rfind('_');
  req.mutable_application_id()->set_cluster_timestamp(std::stoll(app_id.substr(a + 1, b - a - 1)));
  req.mutable_application_id()->set_id(std::stoi(app_id.substr(b + 1)));
  return rm.CallOk<yp::GetApplicationReportResponseProto>("getApplicationReport", kClientProtocol, req)
      .application_report();
}

}  // namespace loom::yarn_double
