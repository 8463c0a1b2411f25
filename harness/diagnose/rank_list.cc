// Rank lists in report text.
#include "harness/diagnose/rank_list.h"

namespace faultline::diagnose {

std::string joinRanks(const std::vector<int>& v, ListStyle style) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += style == ListStyle::kAnd && i + 1 == v.size() ? " and " : ", ";
    s += std::to_string(v[i]);
  }
  return s;
}

}  // namespace faultline::diagnose
