#pragma once
// Whether a job can ever run on a YARN cluster, decided before anything is staged. YARN itself
// accepts a gang that can never fit: the AM starts, asks for its tasks, and waits forever
// (README rm-rest 08: an AM holding 6144 MB with two 4096 MB containers pending on an 8192 MB
// cluster). The client refuses such a job at submit instead, from getClusterNodes and
// getQueueInfo. Pure functions, no I/O.

#include <cstdint>
#include <string>
#include <vector>

#include "core/job_spec.h"
#include "core/status.h"
#include "hadoop/proto/yarn.pb.h"

namespace loom::cluster::yarn {

struct CapacityRules {
  // yarn.scheduler.minimum-allocation-mb: YARN rounds every container's memory up to a
  // multiple of it (128 on the recorded cluster, 1024 in Hadoop's yarn-default.xml).
  int64_t min_allocation_mb = 128;
  // Whether the scheduler counts vcores (DominantResourceCalculator). The CapacityScheduler's
  // default, DefaultResourceCalculator, schedules on memory alone, so a gang with more vcores
  // in all than the cluster has still runs there; single containers are checked either way.
  bool count_vcores = false;
};

// OK when every task and the AM fit some running node, and the AM plus every task together
// (memory, GPUs, and vcores when `rules.count_vcores`) fit both the cluster's running nodes
// and the queue's maximum capacity. `nodes` are getClusterNodes' reports (nodes not RUNNING
// are ignored); `queue` is getQueueInfo's answer for the job's queue.
// Returns:
//   ResourceExhausted naming what does not fit, what it needs and what there is: a task type
//     or the AM larger than every node ("no YARN node is that large"), or the whole job larger
//     than the cluster or than the queue may ever use;
//   FailedPrecondition when no node is running or the queue is not RUNNING.
// The totals apply to gang jobs (`spec.gang`): FCFS tasks need not run at the same time.
Status CheckJobFits(const JobSpec& spec, const std::vector<::hadoop::yarn::NodeReportProto>& nodes,
                    const ::hadoop::yarn::QueueInfoProto& queue, const CapacityRules& rules = {});

// Whether any of getClusterNodes' reports is a RUNNING NodeManager (CheckJobFits refuses a
// cluster without one).
bool HasRunningNode(const std::vector<::hadoop::yarn::NodeReportProto>& nodes);

// The most the queue may ever use of `cluster` (its running nodes' total), in MiB: the queue's
// effective maximum capacity for the default partition when the RM reports it, else its
// absolute maximum capacity (a fraction) times the cluster's memory.
int64_t QueueMaxMemoryMb(const ::hadoop::yarn::QueueInfoProto& queue, int64_t cluster_memory_mb);

// "localhost:45454 8192 MiB/4 vcores/0 GPUs, ..." for messages.
std::string DescribeNodes(const std::vector<::hadoop::yarn::NodeReportProto>& nodes);

}  // namespace loom::cluster::yarn
