// The GoogleTest helper: starts the faultline binary, waits, reads report.json.
#include "faultline/gtest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace faultline::testing {
namespace {

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string number(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

// A fresh directory for one run, named after the running test.
std::string freshRunDir() {
  std::string base = ::testing::TempDir();
  if (base.empty() || base.back() != '/') base += '/';
  std::string name = "faultline-run";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name) {
      if (c == '/' || c == ' ') c = '_';
    }
  }
  std::string templ = base + name + ".XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw Error("faultline::testing: cannot create a run directory under " + base + ": " + std::strerror(errno));
  return std::string(buf.data()) + "/run";
}

std::vector<std::string> flags(const Options& o) {
  std::vector<std::string> a;
  if (o.nproc > 0) a.insert(a.end(), {"--nproc", std::to_string(o.nproc)});
  if (!o.launcher.empty()) a.insert(a.end(), {"--launcher", o.launcher});
  if (o.hang_timeout_s >= 0) a.insert(a.end(), {"--hang-timeout", number(o.hang_timeout_s)});
  if (o.deadline_s >= 0) a.insert(a.end(), {"--deadline", number(o.deadline_s)});
  if (o.grace_s >= 0) a.insert(a.end(), {"--grace", number(o.grace_s)});
  for (const auto& f : o.faults) a.insert(a.end(), {"--fault", f});
  if (o.no_instrument) a.push_back("--no-instrument");
  if (!o.fail_on.empty()) a.insert(a.end(), {"--fail-on", o.fail_on});
  a.insert(a.end(), o.extra_args.begin(), o.extra_args.end());
  return a;
}

// Runs argv with stdout and stderr to `log`; the exit status (128+N for a signal).
int runProcess(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("faultline::testing: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execvp(args[0], args.data());
    const std::string msg = std::string("cannot execute ") + args[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(std::string("faultline::testing: waitpid failed: ") + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Run invoke(const std::string& binary, std::vector<std::string> args, const std::string& dir) {
  std::vector<std::string> argv{binary};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = dir + ".log";
  const int status = runProcess(argv, log);
  const std::string output = readAll(log);
  if (status == 2) throw Error("faultline " + args.front() + " refused its input (exit 2):\n" + output);
  const std::string report_path = dir + "/report.json";
  const std::string text = readAll(report_path);
  if (text.empty()) throw Error("faultline exited " + std::to_string(status) + " and wrote no " + report_path + "\n" + output);
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(report_path + ": not JSON: " + e.what());
  }
  return Run(dir, status, output, std::move(report));
}

}  // namespace

nlohmann::json Run::at(std::string_view path) const {
  const nlohmann::json* v = &report_;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      continue;
    }
    if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string_view::npos) return nullptr;
      const std::string idx(path.substr(i + 1, close - i - 1));
      char* end = nullptr;
      const long k = std::strtol(idx.c_str(), &end, 10);
      if (idx.empty() || *end != '\0' || !v->is_array() || k < 0 || static_cast<size_t>(k) >= v->size()) return nullptr;
      v = &(*v)[static_cast<size_t>(k)];
      i = close + 1;
      continue;
    }
    size_t end = path.find_first_of(".[", i);
    if (end == std::string_view::npos) end = path.size();
    const std::string key(path.substr(i, end - i));
    if (!v->is_object() || !v->contains(key)) return nullptr;
    v = &(*v)[key];
    i = end;
  }
  return *v;
}

std::string binaryPath(const char* installed) {
  if (const char* env = std::getenv("FAULTLINE"); env && *env) return env;
  if (installed && ::access(installed, X_OK) == 0) return installed;
  return "faultline";  // found on PATH by execvp
}

Run execWith(const std::string& binary, const std::vector<std::string>& command, const Options& options) {
  if (command.empty()) throw Error("faultline::testing::exec needs a command");
  const std::string dir = options.out.empty() ? freshRunDir() : options.out;
  std::vector<std::string> args{"exec"};
  for (auto& f : flags(options)) args.push_back(std::move(f));
  args.insert(args.end(), {"-o", dir, "--"});
  args.insert(args.end(), command.begin(), command.end());
  return invoke(binary, std::move(args), dir);
}

Run runScenarioWith(const std::string& binary, const std::string& scenario, const std::string& stack,
                    const Options& options) {
  const std::string dir = options.out.empty() ? freshRunDir() : options.out;
  std::vector<std::string> args{"run", scenario};
  if (!stack.empty()) args.insert(args.end(), {"--stack", stack});
  for (auto& f : flags(options)) args.push_back(std::move(f));
  args.insert(args.end(), {"-o", dir});
  return invoke(binary, std::move(args), dir);
}

Judgement judgeScenarioWith(const std::string& binary, const std::string& scenario, const std::string& stack) {
  Judgement j;
  const Run run = runScenarioWith(binary, scenario, stack, {});  // Error: refused, or no report
  const std::string verdict = run.at("verdict").is_string() ? run.at("verdict").get<std::string>() : "?";
  const std::string on = run.at("stack.launcher").is_string() ? run.at("stack.launcher").get<std::string>() : stack;
  std::ostringstream m;
  m << "scenario " << scenario << " on " << on << ": verdict " << verdict;
  if (verdict == "unsupported") {
    j.unsupported = true;
    const auto why = run.at("unsupported_reason");
    m << " (" << (why.is_string() ? why.get<std::string>() : "no reason given") << ")";
  }
  const auto rc = run.at("root_cause.summary");
  m << "\nroot cause: " << (rc.is_string() ? rc.get<std::string>() : "none");
  if (run.report().contains("expectations")) {
    for (const auto& e : run.report()["expectations"]) {
      if (e.value("ok", false)) continue;
      m << "\n" << e.value("status", "fail") << " " << e.value("what", "?") << ": expected " << e["expected"].dump()
        << ", got " << e["actual"].dump();
      if (e.contains("reason")) m << " (" << e["reason"].get<std::string>() << ")";
    }
  }
  m << "\nrun directory: " << run.dir();
  j.message = m.str();
  j.passed = !run.failed() && verdict == "pass";
  return j;
}

}  // namespace faultline::testing
