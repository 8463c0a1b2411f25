// Rank lists as the report's text writes them ("ranks 0, 2" / "ranks 0, 1 and 3").
#pragma once

#include <string>
#include <vector>

namespace faultline::diagnose {

enum class ListStyle {
  kCommas,  // "0, 1, 3": evidence and finding summaries
  kAnd,     // "0, 1 and 3": sentences of a collective's verdict
};

// The ranks in the order given, joined by `style`; "" for none.
std::string joinRanks(const std::vector<int>& ranks, ListStyle style = ListStyle::kCommas);
// "rank 2" / "ranks 0, 2" (`style` joining them), in the order given.
std::string ranksText(const std::vector<int>& ranks, ListStyle style = ListStyle::kCommas);
// "rank 2", "ranks 2-3", "ranks 0-1, 4": sorted, runs collapsed.
std::string rankRangeText(const std::vector<int>& ranks);

}  // namespace faultline::diagnose
