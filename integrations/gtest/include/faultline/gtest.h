// faultline in a GoogleTest suite: run a command or a scenario under the
// faultline binary and assert on its report.json (docs/CONTRACT.md section 4).
//
//   #include <faultline/gtest.h>
//   TEST(MyTrainer, RankCrashIsDiagnosed) {
//     faultline::testing::Options o;
//     o.nproc = 2;
//     o.hang_timeout_s = 10;
//     auto run = faultline::testing::exec({"./my-trainer", "--steps", "8"}, o);
//     EXPECT_EQ(run.at("root_cause.rank"), 1);
//     EXPECT_EQ(run.at("teardown.clean"), true);
//   }
//   TEST(MyStack, Catalog) { FAULTLINE_EXPECT_SCENARIO_PASSES("scenarios/my-crash.toml", "torchrun@2.13"); }
//
// The helper diagnoses nothing itself: it starts the binary and reads what it
// wrote. CMake: find_package(faultline) and link faultline::gtest.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::testing {

// The command line's flags (docs/CONTRACT.md section 1); unset ones are left out.
struct Options {
  int nproc = 0;                  // --nproc (exec; 0: the binary's default)
  std::string launcher;           // --launcher builtin|external (exec)
  double hang_timeout_s = -1;     // --hang-timeout
  double deadline_s = -1;         // --deadline
  double grace_s = -1;            // --grace
  std::vector<std::string> faults;  // --fault, each (exec)
  bool no_instrument = false;     // --no-instrument
  std::string fail_on;            // --fail-on error|warning
  std::string out;                // -o (default: a fresh directory under ::testing::TempDir())
  std::vector<std::string> extra_args;  // anything else, as written
};

// faultline refused its input (exit 2) or wrote no report.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Run {
 public:
  Run(std::string dir, int exit_status, std::string output, nlohmann::json report)
      : dir_(std::move(dir)), exit_status_(exit_status), output_(std::move(output)), report_(std::move(report)) {}
  const nlohmann::json& report() const { return report_; }
  // The value at a report path, as a scenario's [expect] names it:
  // "root_cause.rank", "ranks[1].role", "findings[0].kind". Null when absent.
  nlohmann::json at(std::string_view path) const;
  int exitStatus() const { return exit_status_; }  // faultline's: 0 clean or pass, 1 a failure, 3 harness
  bool failed() const { return exit_status_ != 0; }
  const std::string& dir() const { return dir_; }
  const std::string& output() const { return output_; }  // faultline's stdout and stderr

 private:
  std::string dir_;
  int exit_status_;
  std::string output_;
  nlohmann::json report_;
};

// $FAULTLINE, else the binary of the installed package that this build found
// (FAULTLINE_INSTALLED_BINARY), else `faultline` on PATH.
std::string binaryPath(const char* installed);

Run execWith(const std::string& binary, const std::vector<std::string>& command, const Options& options);
Run runScenarioWith(const std::string& binary, const std::string& scenario, const std::string& stack,
                    const Options& options);

#ifdef FAULTLINE_INSTALLED_BINARY
inline const char* installedBinary() { return FAULTLINE_INSTALLED_BINARY; }
#else
inline const char* installedBinary() { return nullptr; }
#endif

// `faultline exec [FLAGS] -- COMMAND`; the run whatever its verdict.
inline Run exec(const std::vector<std::string>& command, const Options& options = {}) {
  return execWith(binaryPath(installedBinary()), command, options);
}
// `faultline run SCENARIO [--stack STACK]`.
inline Run runScenario(const std::string& scenario, const std::string& stack = "", const Options& options = {}) {
  return runScenarioWith(binaryPath(installedBinary()), scenario, stack, options);
}

// faultline's judgement of a scenario on a stack: passed (verdict pass),
// unsupported there (a skip, with the reason), or failed, the message listing
// the verdict, the root cause and every expectation that did not hold.
struct Judgement {
  bool passed = false;
  bool unsupported = false;
  std::string message;
};
Judgement judgeScenarioWith(const std::string& binary, const std::string& scenario, const std::string& stack);
inline Judgement judgeScenario(const std::string& scenario, const std::string& stack = "") {
  return judgeScenarioWith(binaryPath(installedBinary()), scenario, stack);
}

}  // namespace faultline::testing

// The scenario passes on the stack (default: its own); unsupported there is a
// GTEST_SKIP with the reason. Use in a TEST body (a skip returns from it).
#define FAULTLINE_EXPECT_SCENARIO_PASSES(...)                                  \
  do {                                                                         \
    const ::faultline::testing::Judgement fl_judgement_ =                      \
        ::faultline::testing::judgeScenario(__VA_ARGS__);                      \
    if (fl_judgement_.unsupported) GTEST_SKIP() << fl_judgement_.message;      \
    EXPECT_TRUE(fl_judgement_.passed) << fl_judgement_.message;                \
  } while (0)
