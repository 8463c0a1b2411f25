// Text helpers: line splitting, rank prefixes, bounded reads, rank lists.
#include "harness/diagnose/text.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "harness/diagnose/rank_list.h"

namespace faultline::diagnose {
namespace {

TEST(RankList, CommasOrAnd) {
  EXPECT_EQ(joinRanks({}), "");
  EXPECT_EQ(joinRanks({3}), "3");
  EXPECT_EQ(joinRanks({0, 1, 3}), "0, 1, 3");
  EXPECT_EQ(joinRanks({0, 1, 3}, ListStyle::kAnd), "0, 1 and 3");
  EXPECT_EQ(joinRanks({0, 2}, ListStyle::kAnd), "0 and 2");
  EXPECT_EQ(joinRanks({2}, ListStyle::kAnd), "2");
}

TEST(Text, SplitLinesHandlesCrLfAndNoFinalNewline) {
  auto lines = splitLines("a\r\nb\n\nc");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "a");
  EXPECT_EQ(lines[1], "b");
  EXPECT_EQ(lines[2], "");
  EXPECT_EQ(lines[3], "c");
  EXPECT_TRUE(splitLines("").empty());
}

TEST(Text, RankPrefix) {
  auto p = splitRankPrefix("[default1]:Traceback (most recent call last):");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rank, 1);
  EXPECT_EQ(p->kind, PrefixKind::kRole);
  EXPECT_EQ(p->text, "Traceback (most recent call last):");
  EXPECT_EQ(splitRankPrefix("[trainer12]:x")->rank, 12);
  EXPECT_EQ(splitRankPrefix("[default0]:  File \"x.py\", line 1")->text, "  File \"x.py\", line 1");
  EXPECT_FALSE(splitRankPrefix("[1]:"));  // torchrun's failure entries, not a rank prefix
  EXPECT_FALSE(splitRankPrefix("[./gloo/transport/tcp/pair.cc:598] Connection closed"));
  EXPECT_FALSE(splitRankPrefix("[W1201 21:06:32.664 ProcessGroupNCCL.cpp:1496] Warning: x"));
  EXPECT_FALSE(splitRankPrefix("no prefix"));
  EXPECT_FALSE(splitRankPrefix("[default]:x"));
}

TEST(Text, Torch2RankPrefixes) {
  // torch 2.x's excepthook: "[rank1]: " + the line, global rank.
  auto p = splitRankPrefix("[rank1]:   File \"/app/train.py\", line 18, in main");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rank, 1);
  EXPECT_EQ(p->kind, PrefixKind::kRank);
  EXPECT_EQ(p->text, "  File \"/app/train.py\", line 18, in main");
  // c10's log prefix has no space.
  EXPECT_EQ(splitRankPrefix("[rank0]:[W604 08:55:15.856186408 ProcessGroupNCCL.cpp:1496] Warning: x")->text,
            "[W604 08:55:15.856186408 ProcessGroupNCCL.cpp:1496] Warning: x");
  // TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[${rank}]:" puts text after "[N]:".
  auto t = splitRankPrefix("[3]:hello");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->rank, 3);
  EXPECT_EQ(t->kind, PrefixKind::kRank);
  // --tee and the excepthook together, as on torchrun 2.13's console.
  EXPECT_EQ(stripRankPrefixes("[default1]:[rank1]: NameError: name 'c' is not defined"),
            "NameError: name 'c' is not defined");
  EXPECT_EQ(stripRankPrefixes("[default1]:[rank1]:     b = c"), "    b = c");
  EXPECT_EQ(stripRankPrefixes("plain line"), "plain line");
  EXPECT_EQ(stripRankPrefixes("[1]:"), "[1]:");
  EXPECT_EQ(stripRankPrefixes(""), "");
}

TEST(Text, ReadTailCutsAtLineStart) {
  const std::string path = ::testing::TempDir() + "/tail.txt";
  {
    std::ofstream out(path);
    for (int i = 0; i < 1000; ++i) out << "line " << i << "\n";
  }
  auto t = readTail(path, 100);
  ASSERT_TRUE(t);
  EXPECT_LE(t->size(), 100u);
  EXPECT_EQ(t->substr(0, 5), "line ");
  EXPECT_EQ(t->substr(t->size() - 9), "line 999\n");
  EXPECT_FALSE(readTail(path + ".missing"));
  std::remove(path.c_str());
}

TEST(Text, StripAnsiAndTail) {
  EXPECT_EQ(stripAnsi("\x1b[31mred\x1b[0m"), "red");
  EXPECT_EQ(tailOf("aaa\nbbb\nccc", 6), "ccc");
  EXPECT_EQ(tailOf("short", 100), "short");
}

}  // namespace
}  // namespace faultline::diagnose
