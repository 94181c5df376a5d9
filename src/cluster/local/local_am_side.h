#pragma once
// LocalAmSide: the AM of a local job runs beside its job dir; executors are its children.

#include "cluster/am_side.h"

namespace loom::cluster::local {

class LocalAmSide : public AmSide {
 public:
  Result<AmSetup> Prepare(const history::JobDir& dir, const std::map<std::string, std::string>& env) override;
  Result<std::unique_ptr<ContainerBroker>> MakeBroker(const history::JobDir& dir, const config::Config& conf,
                                                      std::function<int()> am_port,
                                                      const std::string& tracking_url) override;
};

}  // namespace loom::cluster::local
