#pragma once
// YarnAmSide: the AM in its YARN container. The client shipped the job's files as
// LocalResources into the container's working dir and the job secret in its credentials; the
// AM keeps its own job dir beside them, registers with the RM scheduler through the broker,
// keeps a copy of its history in HDFS while it runs, and at the end cleans the staging
// directory and unregisters with the job's outcome.

#include <memory>
#include <optional>

#include "cluster/am_side.h"
#include "cluster/yarn/history_upload.h"
#include "cluster/yarn/staging.h"
#include "cluster/yarn/yarn_container_broker.h"

namespace loom::cluster::yarn {

class YarnAmSide : public AmSide {
 public:
  Result<AmSetup> Prepare(const history::JobDir& dir, const std::map<std::string, std::string>& env) override;
  Result<std::unique_ptr<ContainerBroker>> MakeBroker(const history::JobDir& dir, const config::Config& conf,
                                                      std::function<int()> am_port,
                                                      const std::string& tracking_url) override;
  void Finish(const history::JobDir& dir, const std::string& state, const std::string& diagnostics) override;
  // From the NodeManager's web services (hadoop/logs/nm_web_logs.h), while it serves them.
  Result<TaskLogPiece> ReadTaskLog(const std::string& container, const std::string& node_http, const std::string& file,
                                   std::optional<int64_t> size) const override;

 private:
  // The job's final record to its history location in HDFS, when its config names one.
  Status PublishToHistoryLocation(const history::JobDir& dir);

  std::string nm_web_scheme_ = "http";              // HTTPS_ONLY clusters: "https"
  StagingManifest manifest_;                        // what the client staged, from Prepare
  std::optional<YarnBrokerOptions> options_;        // from Prepare, moved into the broker
  YarnContainerBroker* broker_ = nullptr;           // owned by the AM's caller
  std::optional<HistoryUploader> history_copy_;
  // fs.defaultFS's HDFS delegation token (DefaultFsToken), for the AM's own WebHDFS calls on a
  // Kerberized cluster, where the AM has no ticket; nullopt without Kerberos.
  std::optional<hadoop::Token> hdfs_token_;
};

}  // namespace loom::cluster::yarn
