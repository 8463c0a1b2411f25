// The UTF-8 policy (harness/model/utf8.h): what is well-formed, and one
// U+FFFD per maximal subpart of what is not.
#include "harness/model/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace faultline {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, SanitizeKeepsValidUtf8) {
  EXPECT_EQ(sanitizeUtf8("plain"), "plain");
  EXPECT_EQ(sanitizeUtf8("caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80");
  // The edges of each range of table 3-7, and control characters, stay as they are.
  const std::string edges =
      "\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF";
  EXPECT_EQ(sanitizeUtf8(edges), edges);
  EXPECT_EQ(sanitizeUtf8(std::string("\0\x01\n\x1b", 4)), std::string("\0\x01\n\x1b", 4));
}

TEST(Utf8, SanitizeReplacesInvalidBytes) {
  EXPECT_EQ(sanitizeUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(sanitizeUtf8("\xC3"), "\xEF\xBF\xBD");                 // truncated sequence
  EXPECT_EQ(sanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  EXPECT_EQ(sanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(Utf8, OneReplacementPerMaximalSubpart) {
  EXPECT_EQ(sanitizeUtf8("\xE2\x82"), kFffd);                       // a truncated U+20AC: one subpart
  EXPECT_EQ(sanitizeUtf8("\xE2\x82" "a"), kFffd + "a");
  EXPECT_EQ(sanitizeUtf8("\xF0\x9F\x98"), kFffd);                   // a truncated U+1F600
  EXPECT_EQ(sanitizeUtf8("\xF0\x9F\x98\xE2\x82\xAC"), kFffd + "\xE2\x82\xAC");
  EXPECT_EQ(sanitizeUtf8("\xE0\x80\xAF"), kFffd + kFffd + kFffd);   // overlong: E0 takes only A0..BF
  EXPECT_EQ(sanitizeUtf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  EXPECT_EQ(sanitizeUtf8("\xF5\x80"), kFffd + kFffd);               // F5 never leads
  EXPECT_EQ(sanitizeUtf8("\x80\xBF"), kFffd + kFffd);               // stray continuation bytes
  // Unicode's own example (chapter 3, "U+FFFD Substitution of Maximal Subparts").
  EXPECT_EQ(sanitizeUtf8("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + kFffd + kFffd + kFffd + "b" + kFffd + "c" + kFffd + kFffd + "d");
}

TEST(Utf8, SequenceAndInvalidLengths) {
  const auto len = [](const char* s, size_t n) { return utf8SequenceLength(reinterpret_cast<const unsigned char*>(s), n); };
  const auto bad = [](const char* s, size_t n) { return utf8InvalidLength(reinterpret_cast<const unsigned char*>(s), n); };
  EXPECT_EQ(len("", 0), 0u);
  EXPECT_EQ(len("a", 1), 1u);
  EXPECT_EQ(len("\xC3\xA9", 2), 2u);
  EXPECT_EQ(len("\xC3\xA9", 1), 0u);  // the length bounds the read
  EXPECT_EQ(len("\xF0\x9F\x98\x80", 4), 4u);
  EXPECT_EQ(len("\xED\xA0\x80", 3), 0u);
  EXPECT_EQ(bad("\xF0\x9F\x98\x80", 3), 3u);
  EXPECT_EQ(bad("\xE2\x82" "a", 3), 2u);
  EXPECT_EQ(bad("\xED\xA0\x80", 3), 1u);
  EXPECT_EQ(bad("\xFF", 1), 1u);
}

// Every string of up to three bytes drawn from bytes at each range's edges:
// the result is well-formed, idempotent, and the same as the input when the
// input was well-formed.
TEST(Utf8, SanitizeIsWellFormedAndIdempotentOnEdgeBytes) {
  const unsigned char kBytes[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2,
                                  0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  const auto wellFormed = [](const std::string& s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    for (size_t i = 0; i < s.size();) {
      const size_t l = utf8SequenceLength(p + i, s.size() - i);
      if (l == 0) return false;
      i += l;
    }
    return true;
  };
  std::string s;
  size_t checked = 0;
  for (unsigned char a : kBytes) {
    for (unsigned char b : kBytes) {
      for (unsigned char c : kBytes) {
        for (int n = 1; n <= 3; ++n) {
          const unsigned char all[] = {a, b, c};
          s.assign(reinterpret_cast<const char*>(all), n);
          const std::string fixed = sanitizeUtf8(s);
          ASSERT_TRUE(wellFormed(fixed)) << ::testing::PrintToString(s);
          ASSERT_EQ(sanitizeUtf8(fixed), fixed) << ::testing::PrintToString(s);
          if (wellFormed(s)) {
            ASSERT_EQ(fixed, s);
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 10000u);
}

}  // namespace
}  // namespace faultline
