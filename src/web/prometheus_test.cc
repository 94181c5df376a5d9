#include "web/prometheus.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace loom::web {
namespace {

TEST(PrometheusText, FamiliesThenSamplesWithEscapedLabels) {
  PrometheusText t;
  t.Family("loom_task_rss_bytes", "gauge", "Resident memory\nof a task \\ its processes.");
  t.Sample("loom_task_rss_bytes", {{"job", "job_1"}, {"task", "a\"b\\c\nd"}}, 524288000);
  t.Sample("loom_task_rss_bytes", {}, 0.25);
  EXPECT_EQ(t.text(),
            "# HELP loom_task_rss_bytes Resident memory\\nof a task \\\\ its processes.\n"
            "# TYPE loom_task_rss_bytes gauge\n"
            "loom_task_rss_bytes{job=\"job_1\",task=\"a\\\"b\\\\c\\nd\"} 524288000\n"
            "loom_task_rss_bytes 0.25\n");
}

TEST(PrometheusText, ValuesInTheFormatsSpelling) {
  PrometheusText t;
  t.Sample("x", {}, std::numeric_limits<double>::quiet_NaN());
  t.Sample("x", {}, std::numeric_limits<double>::infinity());
  t.Sample("x", {}, -std::numeric_limits<double>::infinity());
  t.Sample("x", {}, 1.0 / 3);
  EXPECT_EQ(t.text(), "x NaN\nx +Inf\nx -Inf\nx 0.3333333333333333\n");
}

TEST(EscapeLabelValue, LeavesOtherBytesAlone) {
  EXPECT_EQ(EscapeLabelValue("worker:0 <é>"), "worker:0 <é>");
  EXPECT_EQ(EscapeLabelValue("\\\"\n"), "\\\\\\\"\\n");
}

}  // namespace
}  // namespace loom::web
