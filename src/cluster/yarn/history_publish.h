#pragma once
// A YARN job's final record in its history location in HDFS (loom.history.location,
// core/history_location.h): <location>/<job id>/ with the files of HistoryRecordFiles(), for
// `loom portal` (portal/history_mirror.h) to read, whoever's job it was. Written as the job
// ends by whoever writes its final record, under the rule UploadHistory follows for the
// staging dir's copy: the AM first (`replace` false: a status.json there stands), then the
// client that followed or killed the job (`replace` true: its status.json is the record, as
// it knows why a killed job was killed).
//
// Never half a record: every file is written under a hidden temporary name in the job's dir
// and renamed into place, status.json last; a replacing writer first removes the status.json
// there, so that a reader, which takes a record only with its status.json and checks that
// status.json did not change while it read the rest, never mixes two writers' files.

#include <optional>
#include <string>

#include "core/history_location.h"
#include "core/status.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/wire/credentials.h"
#include "history/job_dir.h"

namespace loom::cluster::yarn {

struct HistoryPublish {
  std::string webhdfs;   // the NameNodes' WebHDFS bases (fs.defaultFS's; hadoop::WebHdfsBaseList)
  std::string user;      // user.name= without a token
  std::string location;  // the location's HDFS path, "/a/b" (HistoryLocation::path)
  std::string job_id;    // the record's dir under it; IsHistoryJobId, else InvalidArgument
  bool replace = false;  // false: a record with a status.json there stands, and nothing is written
  // The AM's HDFS delegation token on a Kerberized cluster (it has no ticket).
  std::optional<hadoop::Token> delegation;
  // Where events.jsonl comes from when this writer's own copy lacks lines of the AM's (a client
  // that could not follow the AM): that HDFS file (<staging>/history/events.jsonl), taken only
  // when the location has no events.jsonl yet. "": the job dir's.
  std::string events_from_hdfs;
};

// The forms of loom.history.location the yarn backend takes (refused at submit, exit 2, with
// `key` as the user wrote it): an HDFS path on fs.defaultFS (hdfs:///path, /path, or
// hdfs://<fs.defaultFS's authority>/path). Not file:// (a directory on the client's machine,
// which the AM cannot reach), nor another file system's authority (the record goes through
// fs.defaultFS's WebHDFS, with its delegation token on a Kerberized cluster).
Status CheckHistoryLocation(const HistoryLocation& location, const hadoop::HadoopConf& conf, const std::string& key);

// Writes `dir`'s final record as `p` says. The location is made when missing (its parent
// 755, itself 1777, as TonY's history root: every user's jobs add their records, the sticky
// bit keeps them from removing each other's), the record's dir 755, its files 644. A
// metrics.jsonl there that is longer than this writer's is kept. FailedPrecondition while
// `dir` has no status.json.
Status PublishHistory(const HistoryPublish& p, const history::JobDir& dir);

}  // namespace loom::cluster::yarn
