#include "executor/mpi_rsh.h"

#include <unistd.h>

#include "control/control.pb.h"
#include "core/strings.h"
#include "executor/unix_socket.h"
#include "runtime/mpi.h"

namespace loom::executor {

Result<RshCommand> ParseRshArgs(const std::vector<std::string>& args) {
  // ssh's options that take a value (ssh(1)); every other option is a flag.
  static const std::string kWithValue = "bcDEeFIiJLlmOopQRSWw";
  size_t i = 0;
  while (i < args.size() && args[i].size() >= 2 && args[i][0] == '-') {
    if (args[i] == "--") {
      ++i;
      break;
    }
    bool takes_value = args[i].size() == 2 && kWithValue.find(args[i][1]) != std::string::npos;
    i += takes_value ? 2 : 1;
  }
  if (i >= args.size() || args[i].empty()) {
    return Status::InvalidArgument("usage: loom mpi-rsh HOST COMMAND... (Open MPI's rsh agent in an MPI launcher)");
  }
  RshCommand out;
  out.host = args[i++];
  std::vector<std::string> words;
  for (; i < args.size(); ++i) {
    if (Trim(args[i]) == "--daemonize") continue;
    words.push_back(args[i]);
  }
  out.command = Trim(Join(words, " "));
  if (out.command.empty()) {
    return Status::InvalidArgument("no command for " + out.host + ": loom mpi-rsh runs commands, not logins");
  }
  return out;
}

int RunMpiRsh(const std::vector<std::string>& args, const std::map<std::string, std::string>& env, std::FILE* err) {
  auto fail = [err](const std::string& why) {
    std::fprintf(err, "loom mpi-rsh: %s\n", why.c_str());
    std::fflush(err);
    return kRshFailed;
  };
  Result<RshCommand> cmd = ParseRshArgs(args);
  if (!cmd.ok()) return fail(cmd.status().message());
  auto socket = env.find(runtime::kExecSocketEnv);
  if (socket == env.end() || socket->second.empty()) {
    return fail(std::string(runtime::kExecSocketEnv) +
                " is not set: this is Open MPI's rsh agent inside the launcher of a Loom MPI job "
                "(loom.application.framework=mpi), and runs nowhere else");
  }
  Result<int> fd = ConnectUnix(socket->second);
  if (!fd.ok()) return fail("cannot reach the launcher's executor: " + fd.status().message());
  control::AgentRequest req;
  req.set_host(cmd->host);
  req.set_command(cmd->command);
  Status sent = WriteFrame(*fd, req.SerializeAsString());
  Result<std::string> frame = sent.ok() ? ReadFrame(*fd) : Result<std::string>(sent);
  ::close(*fd);
  if (!frame.ok()) return fail("the launcher's executor went away: " + frame.status().message());
  control::AgentReply reply;
  if (!reply.ParseFromString(*frame)) return fail("malformed reply from the launcher's executor");
  if (!reply.error().empty()) return fail(reply.error());
  return reply.signal() ? 128 + reply.signal() : reply.exit_code();
}

}  // namespace loom::executor
