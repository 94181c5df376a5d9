#pragma once
// loom.am.startup-timeout (TonY's tony.am.startup-timeout, ms; 0: none): a job whose AM has not
// started within this long of the backend taking it is ended, as TonY's client kills an
// application still ACCEPTED. Whichever client looks at the job enforces it, on every backend:
// the `loom submit` that follows it, and any later `loom status|list|logs|kill` (their Sync),
// so a job whose submitting client is gone still ends.
//
// "Started" is read from the job dir alone: the AM's AM_STARTED event, or the backend saying
// RUNNING (YARN: the AM registered). A job still waiting for the cluster (YARN: SUBMITTED or
// ACCEPTED, the scheduler's reason beside it; local: QUEUED for GPUs or memory) has not. The
// clock starts when the backend took the job (BACKEND_SUBMITTED, else JOB_SUBMITTED): staging
// time is not the AM's.

#include <cstdint>
#include <optional>
#include <string>

#include "cluster/backend.h"
#include "history/job_dir.h"

namespace loom::cli {

// The job's loom.am.startup-timeout in ms, as its config.xml records it; 0 when none (or the
// file cannot be read).
int64_t AmStartupTimeoutOf(const history::JobDir& dir);

// Why the job must end now (its final diagnostics), or nullopt: it ended already, its AM
// started, `timeout_ms` is 0, or `now_ms` is still within it. E.g. "the AM did not start within
// loom.am.startup-timeout=5000 ms (YARN: still ACCEPTED: <the scheduler's reason>)".
std::optional<std::string> AmStartupExpired(const history::JobDir& dir, int64_t timeout_ms, int64_t now_ms);

// Enforces `timeout_ms` (AmStartupTimeoutOf) now: when AmStartupExpired says so, records the job
// FAILED with that reason (first, so that the kill's own record does not win), with its
// JOB_FINISHED event (the AM it stops writes none: events.jsonl and status.json agree; FAILED,
// not KILLED: no one asked for the kill, the job could not start), kills it through
// `backend` (which waits for the cluster to confirm) and returns the reason. Call from one
// client thread.
std::optional<std::string> EnforceAmStartupTimeout(const history::JobDir& dir, cluster::Backend& backend,
                                                   int64_t timeout_ms);

}  // namespace loom::cli
