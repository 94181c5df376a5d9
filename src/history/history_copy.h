#pragma once
// A job's final record in its history location (loom.history.location, core/history_location.h)
// on this machine's file system: the local backend's, where the location is a local directory.
// The record is <location>/<job id>/ with the files of HistoryRecordFiles() and nothing else,
// built under a hidden temporary name beside it and renamed into place whole, so that a reader
// sees either no record or all of it. The first record of a job stands: on the local backend
// every writer copies the same job dir, whose status.json is written once (WriteFinalStatus).
//
// Readers skip names that start with "." (a writer's temporary dirs) and take only job ids
// that pass IsHistoryJobId.

#include <string>

#include "core/history_location.h"
#include "core/status.h"
#include "history/job_dir.h"

namespace loom::history {

// The history location `dir`'s config.xml names; unset when there is none (no config.xml, or
// no key), InvalidArgument for a value its submit would have refused.
Result<HistoryLocation> HistoryLocationOf(const JobDir& dir);

// The job's id as its record names it (job.json's job_id), else the dir's name. On YARN the
// AM's job dir is the container's ("loom-job"), and only the record knows the id.
std::string RecordJobId(const JobDir& dir);

// Copies `dir`'s final record to `location_dir`/`job_id`/. Creates `location_dir` when it is
// missing (its parents 0755, itself 01777: every user's jobs may add their records, none may
// remove another's), the record's dir 0755 and its files 0644; only regular files are copied
// (a symlink in the job dir is not followed). OK when the record is already there.
// FailedPrecondition while the job has no status.json; InvalidArgument for a job id that is
// not a plain name (IsHistoryJobId).
Status CopyRecordToDirectory(const JobDir& dir, const std::string& location_dir, const std::string& job_id);

// The local backend's rule, for whoever ends a job (its AM, or the client that kills it):
// when `dir`'s config names a local history location (/path or file:///path), copies the
// record there (CopyRecordToDirectory); otherwise nothing. Errors are the caller's to log: a
// record that cannot be copied never changes the job's outcome.
Status CopyRecordToHistoryLocation(const JobDir& dir);

}  // namespace loom::history
