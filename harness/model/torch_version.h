// torch versions as stacks and scenarios name them: "2.13.0+cpu" is in the
// series "2.13"; a scenario may restrict itself with ">=2.0", "<2", "1.13".
#pragma once

#include <string>
#include <vector>

#include "harness/model/error.h"

namespace faultline {

// "1.13.0a0" -> "1.13"; "" when the text does not start MAJOR.MINOR.
std::string torchSeries(const std::string& version);

// Orders versions by their leading numeric parts ("2.9" < "2.13", "1.13.0a0" == "1.13"); -1, 0, 1.
int compareVersions(const std::string& a, const std::string& b);

// One comparison of a constraint: op is one of == != < <= > >=.
struct VersionBound {
  std::string op;
  std::string version;
};

// "A constraint is comparisons joined by ','": ">=1.13,<2.14". A bare version
// "1.13" means "==1.13", which any 1.13.x satisfies (versions compare on the
// parts the bound gives). kBadInput names the part that is wrong.
Result<std::vector<VersionBound>> parseVersionConstraint(const std::string& text);
bool satisfies(const std::string& version, const std::vector<VersionBound>& bounds);

}  // namespace faultline
