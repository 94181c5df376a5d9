#include "cluster/yarn/capacity_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cluster/yarn/staging.h"
#include "hadoop/ipc/yarn_clients.h"

namespace loom::cluster::yarn {

namespace ypb = ::hadoop::yarn;

namespace {

struct Amount {
  int64_t memory = 0;
  int64_t vcores = 0;
  int64_t gpus = 0;
};

// What YARN will hand out for `r`: memory rounded up to the minimum allocation, at least one
// vcore (the scheduler's normalization).
Amount Normalized(const Resources& r, const CapacityRules& rules) {
  int64_t step = std::max<int64_t>(1, rules.min_allocation_mb);
  int64_t memory = std::max<int64_t>(step, (r.memory_mib + step - 1) / step * step);
  return {memory, std::max(1, r.vcores), r.gpus};
}

bool Running(const ypb::NodeReportProto& n) { return n.node_state() == ypb::NS_RUNNING; }

// Single containers are checked for vcores even without the DominantResourceCalculator: the
// RM refuses an ask above its maximum allocation, which follows the largest node.
bool FitsNode(const Amount& a, const ypb::NodeReportProto& n) {
  const auto& cap = n.capability();
  return a.memory <= cap.memory() && a.vcores <= cap.virtual_cores() && a.gpus <= GpusOf(cap);
}

std::string Mib(int64_t mb) { return std::to_string(mb) + " MiB"; }

std::string DescribeAmount(const Amount& a, bool vcores) {
  std::string s = Mib(a.memory);
  if (vcores) s += ", " + std::to_string(a.vcores) + " vcores";
  if (a.gpus > 0) s += ", " + std::to_string(a.gpus) + " GPUs";
  return s;
}

const ypb::QueueConfigurationsProto* DefaultPartition(const ypb::QueueInfoProto& queue) {
  for (const auto& m : queue.queueconfigurationsmap()) {
    if (m.partitionname().empty() && m.has_queueconfigurations()) return &m.queueconfigurations();
  }
  return nullptr;
}

std::string Percent(float fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%%", static_cast<double>(fraction) * 100.0);
  return buf;
}

}  // namespace

std::string DescribeNodes(const std::vector<ypb::NodeReportProto>& nodes) {
  std::string out;
  for (const auto& n : nodes) {
    if (!Running(n)) continue;
    out += (out.empty() ? "" : ", ") + hadoop::NodeIdString(n.nodeid()) + " " + Mib(n.capability().memory()) + "/" +
           std::to_string(n.capability().virtual_cores()) + " vcores/" + std::to_string(GpusOf(n.capability())) +
           " GPUs";
  }
  return out;
}

int64_t QueueMaxMemoryMb(const ypb::QueueInfoProto& queue, int64_t cluster_memory_mb) {
  if (const ypb::QueueConfigurationsProto* c = DefaultPartition(queue)) {
    if (c->has_effectivemaxcapacity() && c->effectivemaxcapacity().memory() > 0) {
      return std::min(cluster_memory_mb, c->effectivemaxcapacity().memory());
    }
    if (c->has_absolutemaxcapacity()) {
      return static_cast<int64_t>(std::floor(static_cast<double>(c->absolutemaxcapacity()) * cluster_memory_mb));
    }
  }
  // maximumCapacity is relative to the parent queue: exact for queues right under root.
  float max = queue.has_maximumcapacity() ? queue.maximumcapacity() : 1.0f;
  return static_cast<int64_t>(std::floor(static_cast<double>(max) * cluster_memory_mb));
}

bool HasRunningNode(const std::vector<ypb::NodeReportProto>& nodes) {
  return std::any_of(nodes.begin(), nodes.end(), Running);
}

Status CheckJobFits(const JobSpec& spec, const std::vector<ypb::NodeReportProto>& nodes,
                    const ypb::QueueInfoProto& queue, const CapacityRules& rules) {
  std::vector<ypb::NodeReportProto> running;
  for (const auto& n : nodes) {
    if (Running(n)) running.push_back(n);
  }
  if (running.empty()) return Status::FailedPrecondition("the YARN cluster has no running NodeManager");
  const std::string queue_name = queue.queuename().empty() ? "?" : queue.queuename();
  if (queue.has_state() && queue.state() != ypb::Q_RUNNING) {
    return Status::FailedPrecondition("YARN queue '" + queue_name + "' is " +
                                      (queue.state() == ypb::Q_STOPPED ? "STOPPED" : "DRAINING") +
                                      ": it accepts no applications");
  }
  const std::string node_list = DescribeNodes(running);
  auto fits_some_node = [&](const Amount& a) {
    return std::any_of(running.begin(), running.end(), [&](const auto& n) { return FitsNode(a, n); });
  };

  // Each container on its own.
  Amount am = Normalized(spec.am_resources, rules);
  if (!fits_some_node(am)) {
    return Status::ResourceExhausted("the AM needs " + spec.am_resources.ToString() +
                                     " but no YARN node is that large (" + node_list + ")");
  }
  Amount total = am;
  std::string parts = "AM " + Mib(am.memory);
  for (const TaskTypeSpec& t : spec.types) {
    Amount one = Normalized(t.resources, rules);
    if (!fits_some_node(one)) {
      return Status::ResourceExhausted("a " + t.name + " task needs " + t.resources.ToString() +
                                       " but no YARN node is that large (" + node_list + ")");
    }
    total.memory += one.memory * t.instances;
    total.vcores += one.vcores * t.instances;
    total.gpus += one.gpus * t.instances;
    parts += " + " + std::to_string(t.instances) + " " + t.name + " x " + Mib(one.memory);
  }
  if (!spec.gang) return Status::Ok();

  // The whole gang at once: against the cluster, then against the queue's maximum share.
  Amount cluster;
  for (const auto& n : running) {
    cluster.memory += n.capability().memory();
    cluster.vcores += n.capability().virtual_cores();
    cluster.gpus += GpusOf(n.capability());
  }
  const std::string needs = "the job needs " + DescribeAmount(total, rules.count_vcores) + " at once (" + parts + ")";
  const std::string nodes_note = std::to_string(running.size()) + " running node" + (running.size() == 1 ? "" : "s");
  bool too_big = total.memory > cluster.memory || total.gpus > cluster.gpus ||
                 (rules.count_vcores && total.vcores > cluster.vcores);
  if (too_big) {
    return Status::ResourceExhausted(needs + " but the YARN cluster has " +
                                     DescribeAmount(cluster, rules.count_vcores) + " in all (" + nodes_note +
                                     "): its tasks would wait forever");
  }
  int64_t queue_max = QueueMaxMemoryMb(queue, cluster.memory);
  if (total.memory > queue_max) {
    const ypb::QueueConfigurationsProto* c = DefaultPartition(queue);
    float share = c && c->has_absolutemaxcapacity() ? c->absolutemaxcapacity() : queue.maximumcapacity();
    return Status::ResourceExhausted(needs + " but YARN queue '" + queue_name + "' may use at most " + Mib(queue_max) +
                                     " (maximum capacity " + Percent(share) + " of the cluster's " +
                                     Mib(cluster.memory) + "): its tasks would wait forever");
  }
  return Status::Ok();
}

}  // namespace loom::cluster::yarn
