#pragma once
// What the IPC client's tests against the scripted FakeIpcServer share (ipc_client_test,
// yarn_clients_test, rm_failover_test): its names, and a client of a server on this machine.
// Tests only.

#include <string>
#include <utility>

#include "hadoop/ipc/ipc_client.h"
#include "hadoop/testing/fake_ipc_server.h"

namespace loom::hadoop::fake_ipc_test {

using testing::FakeCall;
using testing::FakeIpcServer;
using testing::FakeReply;

// A client of `protocol` at 127.0.0.1:`port`: SIMPLE as `user` unless the test adds a token.
inline IpcOptions LoopbackOptions(int port, std::string protocol, std::string user) {
  return {.host = "127.0.0.1", .port = port, .protocol = std::move(protocol), .user = std::move(user)};
}

}  // namespace loom::hadoop::fake_ipc_test
