// What the launch tests plan on: two torch installs as discoverTorch gives
// them, and a scenario from its [stack] table.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "harness/launch/stack_plan.h"

namespace faultline::launch {

// Two installs, newest first.
inline Tools twoTorches() {
  Tools t;
  t.torches.push_back({"/opt/t2/bin/python", "2.13.0+cpu", "2.13", "/opt/t2/bin/torchrun", "/b/faultline-trainer-torch2.13", true, ""});
  t.torches.push_back({"/usr/bin/python3", "1.13.0a0", "1.13", "/usr/bin/torchrun", "/b/faultline-trainer-torch1.13", true, ""});
  return t;
}

// twoTorches, and beside them a venv of the newest torch with these
// frameworks (distribution -> version), as ci/deps installs them.
inline Tools withFrameworks(std::map<std::string, std::string> frameworks) {
  Tools t = twoTorches();
  TorchInstall fw = t.torches[0];
  fw.python = "/opt/fw/bin/python";
  fw.frameworks = std::move(frameworks);
  t.torches.insert(t.torches.begin() + 1, fw);
  return t;
}

// A directory holding the launch stage's scripts (empty runners: planning
// only checks that they are there).
inline std::string launchScriptsDir() {
  const std::string dir = testing::TempDir() + "launch_scripts";
  std::filesystem::create_directories(dir);
  for (const char* runner : {"/spawn_runner.py", "/ray_runner.py", "/ray_script.py", "/lightning_script.py", "/reference_trainer.py"}) {
    std::ofstream(dir + runner) << "";
  }
  return dir;
}

inline scenario::Scenario parse(const std::string& stack_table) {
  auto s = scenario::parseScenarioText("name = \"x\"\n[stack]\n" + stack_table + "\n[expect]\n\"verdict\" = \"pass\"\n", "s.toml");
  EXPECT_TRUE(s.has_value()) << s.error().message;
  return *s;
}

}  // namespace faultline::launch
