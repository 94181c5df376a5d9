#pragma once
// How `loom submit` shows the job's events when it prints one line per transition (a pipe or a
// file): every kind of history/events.h says what happened, with its values; none is shown as
// its bare name.

#include <string>

#include <nlohmann/json.hpp>

namespace loom::cli {

// One event of events.jsonl as "HH:MM:SS.mmm  <what happened>" (local time), possibly with
// indented continuation lines. Throws nlohmann::json::exception on an event of the wrong shape.
std::string DescribeEvent(const nlohmann::json& event);

}  // namespace loom::cli
