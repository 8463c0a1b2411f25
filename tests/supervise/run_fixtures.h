// In-process supervised runs of the hostile fixture, shared by the
// supervision tests: the options of a builtin run, and a rank of its record.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/supervise/supervisor.h"
#include "tests/supervise/test_support.h"

namespace faultline::supervise {

// `nproc` hostile ranks under the builtin launcher, ARGS as hostile.c reads
// them, OUT in `dir`/run, a 1 s grace and a 60 s deadline.
inline SuperviseOptions builtin(const testing::TempDir& dir, int nproc, std::vector<std::string> args) {
  SuperviseOptions o;
  o.launch.launcher = "builtin";
  o.launch.nproc = nproc;
  o.launch.command = {testing::hostilePath()};
  for (auto& a : args) o.launch.command.push_back(std::move(a));
  o.out_dir = dir / "run";
  o.grace_s = 1;
  o.deadline_s = 60;
  return o;
}

// The record's rank `rank`; a missing one fails the test and reads as a rank
// with nothing known (never a read past the end).
inline const SupervisedRank& rankOf(const SupervisorRecord& rec, int rank) {
  auto it = std::find_if(rec.ranks.begin(), rec.ranks.end(), [&](const SupervisedRank& r) { return r.rank == rank; });
  if (it != rec.ranks.end()) return *it;
  ADD_FAILURE() << "no rank " << rank;
  static const SupervisedRank kMissing{};
  return kMissing;
}

}  // namespace faultline::supervise
