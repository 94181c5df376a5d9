#pragma once
// The raw Hadoop IPC client of the double's own tests (yarn_test_double_test,
// yarn_double_input_test, the replays, kerberos_double_test): no Loom backend in the way, so a
// test sees the double's bytes as a Hadoop client would. Checks what it reads with gtest's
// EXPECT/ASSERT as it goes. Reads through the test servers' socket helpers
// (hadoop/testing/test_socket.h). Tests only.

#include <cstdint>
#include <optional>
#include <string>

#include <google/protobuf/message.h>

#include "core/status.h"
#include "core/testing.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/wire/credentials.h"

namespace loom::yarn_double {

// A server frame: its header (parsed, and as sent) and the message after it, if any.
struct Reply {
  ::hadoop::common::RpcResponseHeaderProto header;
  std::string header_bytes;
  std::optional<std::string> body;
};

// `frame` (with its length prefix) split into header and body.
Reply Decode(const std::string& frame);

// A plain TCP client that reads whole IPC frames.
class Socket {
 public:
  explicit Socket(int port);
  ~Socket();
  bool connected() const { return connected_; }
  void Send(const std::string& b);
  // A SASL message as a client sends it (callId -33, no clientId, retryCount -1).
  void SendSasl(const ::hadoop::common::RpcSaslProto& msg);
  // The next frame (with its length prefix); nullopt on EOF or after 10 s.
  std::optional<std::string> ReadFrame();
  // The next frame's header and body ("" when it has none); false on EOF or after 10 s.
  bool Read(::hadoop::common::RpcResponseHeaderProto* header, std::string* body);
  // The next frame's SASL message (empty when none came).
  ::hadoop::common::RpcSaslProto ReadSasl(::hadoop::common::RpcResponseHeaderProto* header);
  // Every byte read so far, to compare with a recording.
  const std::string& received() const { return received_; }
  // True when the server closed the connection (FIN) with nothing more to read.
  bool ClosedByServer();

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string received_;
};

// A minimal Hadoop IPC client for the tests (no Loom backend): SIMPLE or TOKEN, then calls.
class TestIpc {
 public:
  explicit TestIpc(int port) : socket_(port) {}

  void Simple(const std::string& user, const std::string& protocol);

  // SASL DIGEST-MD5 with `token`; the FATAL reply as a Status if the server refuses.
  Status Token(const hadoop::Token& token, const std::string& protocol);

  // One call; the reply's header and body.
  Reply Call(const std::string& method, const std::string& protocol, const google::protobuf::Message& request);

  template <typename T>
  T CallOk(const std::string& method, const std::string& protocol, const google::protobuf::Message& request) {
    Reply r = Call(method, protocol, request);
    EXPECT_EQ(r.header.status(), ::hadoop::common::RpcResponseHeaderProto::SUCCESS)
        << method << ": " << r.header.errormsg();
    T resp;
    if (r.body) resp.ParseFromString(*r.body);
    return resp;
  }

  Socket& socket() { return socket_; }

 private:
  void SendContext(const std::string& user, const std::string& protocol);

  Socket socket_;
  std::string client_id_ = "0123456789abcdef";
  int32_t next_call_ = 0;
};

}  // namespace loom::yarn_double
