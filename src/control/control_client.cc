#include "control/control_client.h"

#include "control/auth.h"
#include "core/host_resolver.h"

namespace loom::control {

Result<std::unique_ptr<ControlClient>> ControlClient::Connect(const std::string& am_address, std::string secret,
                                                              Options options) {
  LOOM_ASSIGN_OR_RETURN(std::string target, GrpcTarget(am_address));
  grpc::ChannelArguments args;
  if (options.retries) args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  std::unique_ptr<ControlClient> client(new ControlClient());
  client->address_ = am_address;
  client->secret_ = std::move(secret);
  client->channel_ = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  client->stub_ = Control::NewStub(client->channel_);
  return client;
}

void ControlClient::Prepare(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) const {
  ctx.AddMetadata(kSecretMetadataKey, secret_);
  if (timeout.count() > 0) ctx.set_deadline(std::chrono::system_clock::now() + timeout);
}

bool ControlClient::Connected() const { return channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY; }

}  // namespace loom::control
