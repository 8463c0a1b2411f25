// Rank lists in report text.
#include "harness/diagnose/rank_list.h"

#include <algorithm>

namespace faultline::diagnose {

std::string joinRanks(const std::vector<int>& v, ListStyle style) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += style == ListStyle::kAnd && i + 1 == v.size() ? " and " : ", ";
    s += std::to_string(v[i]);
  }
  return s;
}

std::string ranksText(const std::vector<int>& ranks, ListStyle style) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + joinRanks(ranks, style);
}

std::string rankRangeText(const std::vector<int>& ranks) {
  std::vector<int> v = ranks;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(v[i]) + (j > i ? "-" + std::to_string(v[j]) : "");
    i = j + 1;
  }
  return (v.size() == 1 ? "rank " : "ranks ") + s;
}

}  // namespace faultline::diagnose
