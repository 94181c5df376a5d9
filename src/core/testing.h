#pragma once
// Test helpers for Status and Result (Debian's abseil has no status matchers).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/status.h"

namespace loom::testing {
inline Status ToStatus(const Status& s) { return s; }
template <typename T>
Status ToStatus(const Result<T>& r) { return r.status(); }
}  // namespace loom::testing

#define ASSERT_OK(expr)                                  \
  do {                                                   \
    const auto& loom_s_ = (expr);                             \
    ASSERT_TRUE(loom_s_.ok()) << ::loom::testing::ToStatus(loom_s_).ToString();     \
  } while (0)
#define EXPECT_OK(expr)                                  \
  do {                                                   \
    const auto& loom_s_ = (expr);                             \
    EXPECT_TRUE(loom_s_.ok()) << ::loom::testing::ToStatus(loom_s_).ToString();     \
  } while (0)


// EXPECT_STATUS(expr, kInvalidArgument, HasSubstr("..."))
#define EXPECT_STATUS(expr, code_, matcher)                                        \
  do {                                                                             \
    ::loom::Status loom_s2_ = ::loom::testing::ToStatus((expr));                   \
    EXPECT_EQ(loom_s2_.code(), ::loom::StatusCode::code_) << loom_s2_.ToString();   \
    EXPECT_THAT(loom_s2_.message(), matcher);                                      \
  } while (0)
