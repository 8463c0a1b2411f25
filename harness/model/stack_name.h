// Stack names, parsed in one place for the scenario files and the command
// line: a launcher ("builtin", "torchrun", ...) optionally at a torch series,
// "torchrun@2.13". A stack without a series takes the newest installed torch.
#pragma once

#include <string>
#include <vector>

#include "harness/model/error.h"

namespace faultline {

struct StackName {
  std::string launcher;  // one of stackLaunchers()
  std::string series;    // "2.13"; "" = the newest installed (or none needed)
  std::string str() const { return series.empty() ? launcher : launcher + "@" + series; }
};

// The launchers a stack name may start with, and whether each runs at a torch
// series. Every name here has a launch::Launcher of that name (the launch
// stage's registry; a test checks that the two agree). The scenario files
// need the names and sit below the launch stage, hence the list lives here.
struct StackLauncherName {
  const char* name;
  bool versioned;  // takes @MAJOR.MINOR
};
const std::vector<StackLauncherName>& stackLaunchers();

// "builtin, torchrun, launch, spawn or external": for messages.
std::string stackLauncherList();
bool isStackLauncher(const std::string& name);
// Whether stacks of this launcher are named with their torch series ("torchrun@2.13").
bool isVersionedStack(const std::string& launcher);

// "torchrun@2.13" -> {torchrun, 2.13}. kBadUsage, worded for any caller to
// prefix with where the name came from:
//   unknown stack 'srun', expected builtin, ... or external, optionally @MAJOR.MINOR (torchrun@2.13)
//   'torchrun@2': '2' is not a torch version MAJOR.MINOR (torchrun@2.13)
//   'external@2.13': external has no torch version, expected 'external' alone
Result<StackName> parseStackName(const std::string& text);

}  // namespace faultline
