#pragma once
// Unix stream sockets addressed by a path of any length, and the length-prefixed framing of
// the messages `loom mpi-rsh` and its executor exchange (control.proto's AgentRequest and
// AgentReply). A socket path may be longer than sockaddr_un holds (a YARN container's directory
// is): such a path is reached through its directory's descriptor, /proc/self/fd/N/NAME.

#include <cstdint>
#include <string>

#include "core/status.h"

namespace loom::executor {

// A listening socket at `path` (which must not exist), with mode 0600; the descriptor is
// close-on-exec. Its directory should be private (0700): the mode is set after bind.
Result<int> ListenUnix(const std::string& path);
// A socket connected to `path`. Unavailable when nothing listens there.
Result<int> ConnectUnix(const std::string& path);
// Whether the process at the other end of `fd` runs as this process's user (SO_PEERCRED).
bool PeerIsSameUser(int fd);

// One frame: the 4-byte big-endian length of `payload`, then its bytes (at most 16 MiB).
Status WriteFrame(int fd, const std::string& payload);
// Reads one frame. NotFound when the peer closed the connection before a frame began;
// DataLoss when it closed in the middle; InvalidArgument for a frame over 16 MiB.
Result<std::string> ReadFrame(int fd);

}  // namespace loom::executor
