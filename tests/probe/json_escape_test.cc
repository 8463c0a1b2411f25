// The C JSON string escaper that the probe and the interposer write events
// with (harness/probe/json_escape.h), on hostile bytes: what it writes is
// always one JSON string a strict reader takes, and its text is what
// harness/model's sanitizeUtf8 makes of the same bytes.
#include "harness/probe/json_escape.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/model/utf8.h"

namespace {

using nlohmann::json;

std::string escaped(const std::string& s) {
  const size_t need = fl_json_string_n(nullptr, 0, 0, s.data(), s.size());
  std::string out(need, '\0');
  EXPECT_EQ(fl_json_string_n(out.data(), out.size(), 0, s.data(), s.size()), need);
  return out;
}

// What a strict reader (nlohmann rejects ill-formed UTF-8) reads back.
std::string decoded(const std::string& literal) { return json::parse(literal).get<std::string>(); }

const std::string kFffd = "\xef\xbf\xbd";

TEST(JsonEscape, ControlCharactersQuotesAndBackslashes) {
  EXPECT_EQ(escaped("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(escaped("\n\t\r"), "\"\\n\\t\\r\"");
  EXPECT_EQ(escaped(std::string("\0\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(escaped("caf\xc3\xa9 \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
}

TEST(JsonEscape, CodePointsNotBytePatternsDecideWhatIsValid) {
  // Each of these has the lead and continuation bit patterns of a sequence, so
  // a check of the patterns alone passed them into the events file.
  EXPECT_EQ(escaped("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");          // a UTF-16 surrogate
  EXPECT_EQ(escaped("\xed\xbf\xbf"), "\"\\ufffd\\ufffd\\ufffd\"");          // the last surrogate
  EXPECT_EQ(escaped("\xc0\xaf"), "\"\\ufffd\\ufffd\"");                      // overlong '/'
  EXPECT_EQ(escaped("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"");          // overlong, 3 bytes
  EXPECT_EQ(escaped("\xf0\x80\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // overlong, 4 bytes
  EXPECT_EQ(escaped("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // above U+10FFFF
  EXPECT_EQ(escaped("\xf8\x88\x80\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");  // a 5-byte form
  // Truncated sequences: one \ufffd per maximal subpart, then what follows.
  EXPECT_EQ(escaped("\xe2\x82"), "\"\\ufffd\"");
  EXPECT_EQ(escaped("\xe2\x82" "a"), "\"\\ufffda\"");
  EXPECT_EQ(escaped("\xf0\x9f\x98\"x"), "\"\\ufffd\\\"x\"");
  EXPECT_EQ(escaped("x\xc3"), "\"x\\ufffd\"");
  // The edges of table 3-7 stay as they are.
  const std::string edges = "\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xf0\x90\x80\x80\xf4\x8f\xbf\xbf";
  EXPECT_EQ(escaped(edges), "\"" + edges + "\"");
}

TEST(JsonEscape, NulTerminatedAndNull) {
  char buf[64];
  size_t n = fl_json_string(buf, sizeof buf, 0, "a\xed\xa0\x80");
  EXPECT_EQ(std::string(buf, n), "\"a\\ufffd\\ufffd\\ufffd\"");
  n = fl_json_string(buf, sizeof buf, 0, nullptr);
  EXPECT_EQ(std::string(buf, n), "null");
  // A truncated sequence right before the terminator reads no further.
  n = fl_json_string(buf, sizeof buf, 0, "\xf0\x9f");
  EXPECT_EQ(std::string(buf, n), "\"\\ufffd\"");
}

TEST(JsonEscape, StoresOnlyBelowCapAndCountsPastIt) {
  char buf[8];
  std::memset(buf, '#', sizeof buf);
  const size_t n = fl_json_string(buf, 4, 2, "abcdef");
  EXPECT_EQ(n, 2u + 8u);  // the whole literal counted
  EXPECT_EQ(std::string(buf + 2, 2), "\"a");
  EXPECT_EQ(std::string(buf + 4, 4), "####");  // nothing at or past cap
}

// Every string of up to three bytes from the bytes at each range's edge, and
// each of them between text: one string a strict reader takes, whose text is
// sanitizeUtf8 of the input.
TEST(JsonEscape, AgreesWithSanitizeUtf8OnEveryShortHostileString) {
  const unsigned char kBytes[] = {0x00, 0x0a, 0x22, 0x41, 0x5c, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0,
                                  0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff};
  size_t checked = 0;
  for (unsigned char a : kBytes) {
    for (unsigned char b : kBytes) {
      for (unsigned char c : kBytes) {
        for (int n = 1; n <= 3; ++n) {
          const unsigned char all[] = {a, b, c};
          const std::string raw(reinterpret_cast<const char*>(all), n);
          for (const std::string& s : {raw, "x" + raw + "\xe2\x82\xac"}) {
            const std::string lit = escaped(s);
            std::string text;
            ASSERT_NO_THROW(text = decoded(lit)) << ::testing::PrintToString(s) << " -> " << lit;
            ASSERT_EQ(text, faultline::sanitizeUtf8(s)) << ::testing::PrintToString(s) << " -> " << lit;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 30000u);
}

}  // namespace
