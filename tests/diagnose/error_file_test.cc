// torchelastic error files (TORCHELASTIC_ERROR_FILE) from @record.
#include "harness/diagnose/error_file.h"

#include <gtest/gtest.h>

#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

using testing::fixture;
using testing::readFile;

TEST(ErrorFile, RealRecordOutput) {
  auto e = parseErrorFile(readFile(fixture("builtin_name_error/ranks/1/error.json")));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, Kind::kPythonException);
  EXPECT_EQ(e->type, "NameError");
  EXPECT_EQ(e->message, "name 'c' is not defined");
  ASSERT_TRUE(e->location);
  EXPECT_EQ(e->location->line, 20);
  EXPECT_FALSE(e->collateral);
  ASSERT_TRUE(e->t_ns);
  EXPECT_EQ(*e->t_ns % 1'000'000'000, 0);  // whole seconds only
}

TEST(ErrorFile, CollateralRank) {
  auto e = parseErrorFile(readFile(fixture("builtin_name_error/ranks/0/error.json")));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "RuntimeError");
  EXPECT_TRUE(e->collateral);
}

TEST(ErrorFile, PlainStringMessage) {
  auto e = parseErrorFile(R"({"message": "ValueError: bad value"})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "ValueError");
  EXPECT_EQ(e->message, "bad value");
}

TEST(ErrorFile, MalformedTruncatedAndNonUtf8) {
  EXPECT_FALSE(parseErrorFile(""));
  EXPECT_FALSE(parseErrorFile("not json"));
  EXPECT_FALSE(parseErrorFile(R"({"message": {"message": "NameError: x", "extraInfo": {"py_callst)"));
  EXPECT_FALSE(parseErrorFile(R"({"other": 1})"));
  EXPECT_FALSE(parseErrorFile(R"([1, 2])"));
  auto e = parseErrorFile("{\"message\": \"ValueError: caf\xFF\"}");
  ASSERT_TRUE(e);  // invalid bytes are repaired, not fatal
  EXPECT_EQ(e->type, "ValueError");
}

// Caught by tests/fuzz/error_file_fuzz (UBSan): a timestamp past year 2262 overflowed
// when converted to nanoseconds (undefined behaviour); it gives no time now.
TEST(ErrorFile, TimestampBeyondInt64NanosecondsIsNoTime) {
  auto e = parseErrorFile(R"({"message": {"message": "x", "extraInfo": {"timestamp": "99999999999999"}}})");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->t_ns);
  e = parseErrorFile(R"({"message": {"message": "x", "extraInfo": {"timestamp": 1700000000}}})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->t_ns, 1700000000LL * 1000000000);
}

}  // namespace
}  // namespace faultline::diagnose
