// The FAULTLINE_INJECT grammar: what parses, and where and why what does not.
#include "harness/probe/preload/inject_spec.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

namespace {

struct Parsed {
  int n = 0;
  fl_inject_rule rules[FL_INJECT_MAX_RULES];
  fl_inject_error err;
};

Parsed parse(const char* text) {
  Parsed p;
  p.n = fl_inject_parse(text, p.rules, FL_INJECT_MAX_RULES, &p.err);
  return p;
}

TEST(InjectSpec, TheIssueExamples) {
  Parsed p = parse("write:ENOSPC:rank=1:after=100");
  ASSERT_EQ(p.n, 1) << p.err.message;
  EXPECT_EQ(p.rules[0].call, FL_CALL_WRITE);
  EXPECT_EQ(p.rules[0].err, ENOSPC);
  EXPECT_EQ(p.rules[0].rank, 1);
  EXPECT_EQ(p.rules[0].after, 100);
  EXPECT_EQ(p.rules[0].count, 0);
  EXPECT_STREQ(p.rules[0].glob, "");
  EXPECT_STREQ(p.rules[0].text, "write:ENOSPC:rank=1:after=100");

  p = parse("connect:ECONNREFUSED; fsync:EIO");
  ASSERT_EQ(p.n, 2) << p.err.message;
  EXPECT_EQ(p.rules[0].call, FL_CALL_CONNECT);
  EXPECT_EQ(p.rules[0].err, ECONNREFUSED);
  EXPECT_EQ(p.rules[0].rank, -1);
  EXPECT_EQ(p.rules[1].call, FL_CALL_FSYNC);
  EXPECT_EQ(p.rules[1].err, EIO);
  EXPECT_STREQ(p.rules[1].text, "fsync:EIO");
}

// A rank killed while it writes its checkpoint, in the first attempt only.
TEST(InjectSpec, KilledInTheCallInOneAttempt) {
  Parsed p = parse("write:SIGKILL:rank=0:attempt=0:after=3:path=*/checkpoints/*");
  ASSERT_EQ(p.n, 1) << p.err.message;
  EXPECT_EQ(p.rules[0].err, FL_INJECT_KILL);
  EXPECT_STREQ(fl_inject_errno_name(FL_INJECT_KILL), "SIGKILL");
  EXPECT_EQ(p.rules[0].attempt, 0);
  EXPECT_EQ(p.rules[0].after, 3);
  EXPECT_STREQ(p.rules[0].glob, "*/checkpoints/*");
  EXPECT_EQ(parse("write:EIO").rules[0].attempt, -1);  // every attempt
  p = parse("write:EIO:attempt=x");
  EXPECT_EQ(p.n, -1);
  EXPECT_EQ(p.err.offset, 18);
  EXPECT_NE(std::string(p.err.message).find("an integer >= 0 (0: the first attempt)"), std::string::npos) << p.err.message;
}

TEST(InjectSpec, GlobsRunToTheEndOfTheSpec) {
  Parsed p = parse("connect:ETIMEDOUT:rank=all:count=2:addr=127.0.0.1:29*;open:EACCES:path=/ckpt/*.pt");
  ASSERT_EQ(p.n, 2) << p.err.message;
  EXPECT_STREQ(p.rules[0].glob, "127.0.0.1:29*");
  EXPECT_EQ(p.rules[0].count, 2);
  EXPECT_EQ(p.rules[0].rank, -1);
  EXPECT_EQ(p.rules[1].call, FL_CALL_OPEN);
  EXPECT_STREQ(p.rules[1].glob, "/ckpt/*.pt");
}

TEST(InjectSpec, EmptyMeansNoRules) {
  EXPECT_EQ(parse(nullptr).n, 0);
  EXPECT_EQ(parse("").n, 0);
  EXPECT_EQ(parse("  ").n, 0);
}

TEST(InjectSpec, NamesForEveryCallAndErrno) {
  for (int c = 0; c < FL_CALL_COUNT; ++c) {
    ASSERT_NE(fl_inject_call_name(c), nullptr);
    const std::string spec = std::string(fl_inject_call_name(c)) + ":EIO";
    EXPECT_EQ(parse(spec.c_str()).rules[0].call, c);
  }
  EXPECT_EQ(fl_inject_call_name(FL_CALL_COUNT), nullptr);
  EXPECT_STREQ(fl_inject_errno_name(ENOSPC), "ENOSPC");
  EXPECT_EQ(fl_inject_errno_name(0), nullptr);
}

struct Bad {
  const char* text;
  int offset;
  const char* says;
};

TEST(InjectSpec, ErrorsSayWhereAndWhatWasExpected) {
  const Bad cases[] = {
      {"wrte:ENOSPC", 0, "unknown call 'wrte', expected one of: write, read"},
      {"write", 5, "missing errno after 'write', expected CALL:ERRNO"},
      {"write:", 6, "missing errno, expected an errno name"},
      {"write:ENOSPACE", 6, "unknown errno 'ENOSPACE'"},
      {"write:ENOSPC:rank", 13, "bad option 'rank', expected key=value"},
      {"write:ENOSPC:rank=x", 18, "bad rank 'x', expected an integer >= 0, or all"},
      {"write:ENOSPC:rank=-1", 18, "bad rank '-1'"},
      {"write:ENOSPC:after=", 19, "bad after '', expected an integer >= 0"},
      {"write:ENOSPC:count=0", 19, "bad count '0', expected an integer >= 1"},
      {"write:ENOSPC:rank=1:rank=2", 20, "duplicate option 'rank'"},
      {"write:ENOSPC:when=3", 13, "unknown option 'when', expected rank, attempt, after, count, path or addr"},
      {"connect:ECONNREFUSED:path=/x", 21, "path= does not apply to connect, expected addr=GLOB"},
      {"write:EIO:addr=1.2.3.4:5", 10, "addr= applies to connect only"},
      {"write:EIO:path=", 15, "empty glob"},
      {"write:EIO;;fsync:EIO", 10, "empty spec, expected CALL:ERRNO"},
      {"write:EIO;", 10, "empty spec"},
      {"fsync:EIO; bogus:EIO", 11, "unknown call 'bogus'"},
  };
  for (const Bad& b : cases) {
    Parsed p = parse(b.text);
    EXPECT_EQ(p.n, -1) << b.text;
    EXPECT_EQ(p.err.offset, b.offset) << b.text << ": " << p.err.message;
    EXPECT_NE(std::string(p.err.message).find(b.says), std::string::npos) << b.text << ": " << p.err.message;
  }
}

TEST(InjectSpec, TooManySpecs) {
  std::string text;
  for (int i = 0; i <= FL_INJECT_MAX_RULES; ++i) text += (i ? ";" : "") + std::string("fsync:EIO");
  Parsed p = parse(text.c_str());
  EXPECT_EQ(p.n, -1);
  EXPECT_NE(std::string(p.err.message).find("at most 16"), std::string::npos) << p.err.message;
}

TEST(InjectSpec, NumbersAreBounded) {
  EXPECT_EQ(parse("write:EIO:after=999999999999999").rules[0].after, 999999999999999LL);
  EXPECT_EQ(parse("write:EIO:after=9999999999999999").n, -1);
  EXPECT_EQ(parse("write:EIO:rank=1000000").n, -1);
}

}  // namespace
