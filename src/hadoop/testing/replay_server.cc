#include "hadoop/testing/replay_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <map>

#include "core/files.h"
#include "hadoop/testing/test_socket.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop::testing {

namespace {

// Splits a one-direction stream into frames; `request` selects the header type.
Result<std::vector<CapturedFrame>> SplitFrames(std::string_view stream, bool request) {
  std::vector<CapturedFrame> frames;
  FrameReader reader;
  reader.Feed(stream);
  size_t consumed = 0;
  for (;;) {
    LOOM_ASSIGN_OR_RETURN(std::optional<std::string> body, reader.Next());
    if (!body) break;
    CapturedFrame f;
    f.bytes = std::string(stream.substr(consumed, 4 + body->size()));
    consumed += f.bytes.size();
    LOOM_ASSIGN_OR_RETURN(std::vector<std::string_view> parts, SplitDelimited(*body));
    for (auto p : parts) f.messages.emplace_back(p);
    if (f.messages.empty()) return Status::InvalidArgument("empty frame");
    if (request) {
      RpcRequestHeaderProto h;
      if (!h.ParseFromString(f.messages[0])) return Status::InvalidArgument("bad request header");
      f.call_id = h.callid();
    } else {
      RpcResponseHeaderProto h;
      if (!h.ParseFromString(f.messages[0])) return Status::InvalidArgument("bad response header");
      f.call_id = ResponseCallId(h);
    }
    frames.push_back(std::move(f));
  }
  if (reader.buffered() != 0) return Status::InvalidArgument("truncated frame at the end");
  return frames;
}

}  // namespace

Result<Capture> LoadCapture(const std::string& dir, const std::string& stem) {
  const std::string base = dir.ends_with('/') ? dir + stem : dir + "/" + stem;
  LOOM_ASSIGN_OR_RETURN(std::string c2s, ReadFile(base + ".c2s.bin"));
  LOOM_ASSIGN_OR_RETURN(std::string s2c, ReadFile(base + ".s2c.bin"));
  Capture cap;
  std::string_view c2s_frames = c2s;
  if (c2s_frames.substr(0, 4) == "hrpc") {
    cap.preamble = std::string(c2s_frames.substr(0, 7));
    c2s_frames.remove_prefix(7);
  }
  LOOM_ASSIGN_OR_RETURN(cap.c2s, SplitFrames(c2s_frames, true));
  LOOM_ASSIGN_OR_RETURN(cap.s2c, SplitFrames(s2c, false));
  return cap;
}

std::vector<ReplayStep> ReplaySteps(const Capture& cap, const std::function<bool(int32_t)>& keep) {
  // Which client frame each server frame answers.
  std::vector<std::vector<size_t>> replies_after(cap.c2s.size());
  std::vector<size_t> sasl_requests;
  std::map<int32_t, size_t> by_call_id;
  for (size_t i = 0; i < cap.c2s.size(); ++i) {
    if (cap.c2s[i].call_id == kSaslCallId) sasl_requests.push_back(i);
    if (cap.c2s[i].call_id >= 0) by_call_id[cap.c2s[i].call_id] = i;
  }
  size_t sasl_replies = 0;
  size_t previous = 0;
  for (size_t j = 0; j < cap.s2c.size(); ++j) {
    int32_t id = cap.s2c[j].call_id;
    size_t after = cap.c2s.empty() ? 0 : cap.c2s.size() - 1;  // an auth failure: after everything
    if (id == kSaslCallId && sasl_replies < sasl_requests.size()) {
      after = sasl_requests[sasl_replies++];
    } else if (auto it = by_call_id.find(id); id >= 0 && it != by_call_id.end()) {
      after = it->second;
    }
    previous = std::max(previous, after);  // server frames keep their order
    replies_after[previous].push_back(j);
  }

  std::vector<ReplayStep> steps;
  if (!cap.preamble.empty()) steps.push_back({cap.preamble, ""});
  for (size_t i = 0; i < cap.c2s.size(); ++i) {
    if (keep && cap.c2s[i].call_id >= 0 && !keep(cap.c2s[i].call_id)) continue;
    ReplayStep step{cap.c2s[i].bytes, ""};
    for (size_t j : replies_after[i]) step.reply += cap.s2c[j].bytes;
    steps.push_back(std::move(step));
  }
  return steps;
}

ReplayServer::ReplayServer(std::vector<ReplayStep> steps, ReplayOptions options)
    : steps_(std::move(steps)), options_(options) {
  Result<int> fd = ListenLoopback(&port_);
  if (!fd.ok()) {
    result_ = fd.status();
    return;
  }
  listen_fd_ = *fd;
  thread_ = std::thread([this] { Serve(); });
}

ReplayServer::~ReplayServer() {
  if (thread_.joinable()) {
    // Unblock a session still waiting for the client.
    if (int fd = conn_fd_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Status ReplayServer::Wait() {
  if (thread_.joinable()) thread_.join();
  return result_;
}

void ReplayServer::Serve() {
  Result<int> fd = AcceptWithin(listen_fd_, options_.io_timeout);
  if (!fd.ok()) {
    result_ = fd.status();
    return;
  }
  conn_fd_ = *fd;
  result_ = Session(*fd);
  conn_fd_ = -1;
  ::close(*fd);
}

Status ReplayServer::Session(int fd) {
  for (size_t i = 0; i < steps_.size(); ++i) {
    const ReplayStep& step = steps_[i];
    const bool preamble = step.expect.size() == 7 && step.expect.substr(0, 4) == "hrpc";
    Result<std::string> unit =
        preamble ? ReadExactly(fd, 7, options_.io_timeout) : ReadFrameBytes(fd, options_.io_timeout);
    if (!unit.ok()) {
      return unit.status().WithContext("client stream at byte " + std::to_string(received_.size()) + " (step " +
                                       std::to_string(i) + ")");
    }
    const size_t offset = received_.size();
    received_ += *unit;
    if (options_.compare && *unit != step.expect) {
      return Status::InvalidArgument("client bytes differ from the recording at stream offset " +
                                     std::to_string(offset) + " (step " + std::to_string(i) + ")\n  recorded: " +
                                     Hex(step.expect) + "\n  sent:     " + Hex(*unit));
    }
    LOOM_RETURN_IF_ERROR(WriteAll(fd, step.reply));
  }
  if (options_.close_after_last_reply) ::shutdown(fd, SHUT_WR);
  std::string extra = ReadUntilEof(fd, options_.io_timeout);
  received_ += extra;
  if (!extra.empty()) {
    return Status::InvalidArgument("client sent " + std::to_string(extra.size()) +
                                   " bytes after the recording ended: " + Hex(extra.substr(0, 64)));
  }
  return Status::Ok();
}

}  // namespace loom::hadoop::testing
