#pragma once
// Plain blocking socket helpers for the test servers in this folder (loopback only).

#include <chrono>
#include <string>
#include <string_view>

#include "core/status.h"

namespace loom::hadoop::testing {

// A listening socket on 127.0.0.1 with a kernel-chosen port. listen=false: the port only
// bound, reserved (FakeHdfs's NameNode RPC address, never served unless something takes it over).
Result<int> ListenLoopback(int* port, bool listen = true);
// A loopback port that was free a moment ago and is closed again: a connection to it is refused
// at once (unless another process took it since). 0 if no port could be bound.
int ClosedLoopbackPort();
// A connection to 127.0.0.1:port.
Result<int> ConnectLoopback(int port);
// Accepts one connection, waiting at most `timeout`.
Result<int> AcceptWithin(int listen_fd, std::chrono::milliseconds timeout);
// Reads exactly `n` bytes; kUnavailable at end of stream, kDeadlineExceeded on timeout.
Result<std::string> ReadExactly(int fd, size_t n, std::chrono::milliseconds timeout);
// Reads one IPC frame (4-byte big-endian length and body); returns the whole frame.
Result<std::string> ReadFrameBytes(int fd, std::chrono::milliseconds timeout);
// Reads whatever arrives until end of stream or `timeout`.
std::string ReadUntilEof(int fd, std::chrono::milliseconds timeout);
Status WriteAll(int fd, std::string_view bytes);
// "00 01 ff ..." for failure messages.
std::string Hex(std::string_view bytes);

}  // namespace loom::hadoop::testing
