#pragma once
// Replays recorded Hadoop IPC traffic (tests/data/yarn-captures) to a client under test: the
// recording split into frames, and a one-connection TCP server that checks every unit the
// client sends (the preamble, then each frame) against the recorded client bytes and answers
// with the recorded server frames, in the recorded order.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace loom::hadoop::testing {

struct CapturedFrame {
  int32_t call_id = 0;                // from the request or response header
  std::string bytes;                  // the whole frame, 4-byte length included
  std::vector<std::string> messages;  // the delimited messages of its body (header first)
};

struct Capture {
  std::string preamble;            // the client's 7 bytes, or empty
  std::vector<CapturedFrame> c2s;  // client frames in order
  std::vector<CapturedFrame> s2c;  // server frames in order
};

// Loads `<dir>/<stem>.c2s.bin` and `.s2c.bin`, e.g. stem "dshell/05-am-rm-8030".
Result<Capture> LoadCapture(const std::string& dir, const std::string& stem);

struct ReplayStep {
  std::string expect;  // what the client must send next: the preamble or one frame
  std::string reply;   // what the server then sends (possibly nothing)
};

// The recording as steps. Each server frame follows the client frame it answers (same call id;
// SASL replies in turn; an auth failure on call id -1 after the last client frame). `keep`
// selects calls by call id: the frames of the others and their replies are left out.
std::vector<ReplayStep> ReplaySteps(const Capture& capture, const std::function<bool(int32_t)>& keep = nullptr);

struct ReplayOptions {
  bool compare = true;                 // false: only read each unit, whatever its bytes
  bool close_after_last_reply = false;  // send FIN after the last reply, as after a FATAL
  std::chrono::milliseconds io_timeout{10000};
};

class ReplayServer {
 public:
  explicit ReplayServer(std::vector<ReplayStep> steps, ReplayOptions options = {});
  ~ReplayServer();
  ReplayServer(const ReplayServer&) = delete;
  ReplayServer& operator=(const ReplayServer&) = delete;

  int port() const { return port_; }
  // Waits until the session ended (all steps done and the client closed, or a failure) and
  // says what differed: the first differing unit with both byte strings, missing or extra bytes.
  Status Wait();
  // Everything the client sent; valid after Wait().
  const std::string& received() const { return received_; }

 private:
  void Serve();
  Status Session(int fd);

  std::vector<ReplayStep> steps_;
  ReplayOptions options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> conn_fd_{-1};
  std::thread thread_;
  Status result_;
  std::string received_;
};

}  // namespace loom::hadoop::testing
