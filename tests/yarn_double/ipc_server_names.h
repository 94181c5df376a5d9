#pragma once
// The double's IPC ports run the shared test server (src/hadoop/testing/ipc_server.h): its names,
// once for the ResourceManager's records (yarn_records.h) and the NameNode's port (namenode_rpc.h).

#include "hadoop/testing/ipc_server.h"

namespace loom::yarn_double {

using hadoop::testing::CallResult;
using hadoop::testing::ConnectionInfo;
using hadoop::testing::IpcServer;
using hadoop::testing::IpcServerOptions;
using hadoop::testing::PasswordLookup;
using hadoop::testing::RpcError;

}  // namespace loom::yarn_double
