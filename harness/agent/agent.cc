// The agent's run: start the command through the launch stage, forward stop
// signals, pass its output on (and copy it to the node's files: output_copy.h),
// watch /proc for ranks and the link for changes, then check for survivors.
#include "harness/agent/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>

#include "harness/agent/agent_event.h"
#include "harness/agent/node_procs.h"
#include "harness/agent/output_copy.h"
#include "harness/agent/slurm_task_env.h"
#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"
#include "harness/model/outcome.h"
#include "harness/model/run_layout.h"

extern char** environ;

namespace faultline::agent {

namespace {

constexpr int kPollMs = 50;
// How long a process of the run may take to finish dying after the child ends.
constexpr int64_t kSurvivorSettleMs = 1000;

int64_t nowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t monotonicMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

EnvMap currentEnv() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

std::optional<std::string> envVar(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

// One event, one write(2) to a file opened O_APPEND: lines never interleave.
class EventFile {
 public:
  EventFile(int fd, AgentIdentity id) : fd_(fd), id_(std::move(id)) {}
  ~EventFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  void write(const std::string& event, const nlohmann::json& fields) {
    const std::string line = agentEventLine(id_, nowNs(), event, fields);
    ssize_t n;
    do {
      n = ::write(fd_, line.data(), line.size());
    } while (n < 0 && errno == EINTR);
  }

 private:
  int fd_;
  AgentIdentity id_;
};

std::string readOperstate(const std::string& ifname) {
  const int fd = ::open(("/sys/class/net/" + ifname + "/operstate").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "absent";
  char buf[64] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  std::string s(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "unknown" : s;
}

bool validNodeName(const std::string& node) {
  return !node.empty() && node != "." && node != ".." && node.find('/') == std::string::npos &&
         node.find('\0') == std::string::npos;
}

struct TrackedRank {
  int rank = 0;
  bool ended = false;
};

}  // namespace

std::string resolveNode(const AgentOptions& opts, const char* slurmd_nodename) {
  if (!opts.node.empty()) return opts.node;
  if (opts.slurm_task && slurmd_nodename) return slurmd_nodename;
  return {};
}

namespace {

// One node agent's run, phase by phase: what it was asked (setup), its
// events file, the command started through the launch stage, the watch
// until the command ends, and the node's own teardown proof.
class NodeAgent {
 public:
  NodeAgent(const AgentOptions& opts, std::ostream& err) : opts_(opts), err_(err), env_(currentEnv()) {}

  int run() {
    if (int bad = setup(); bad != 0) return bad;
    if (int bad = openEvents(); bad != 0) return bad;
    writeStart();
    blockStopSignals();
    int status = 0;
    if (auto started = startCommand()) {
      child_ = *started;
      noteSlurmRank();
      status = watchUntilExit();
    } else {
      status = started.error();
    }
    recordEnd(status);
    drainOutput();
    recordSurvivors();
    const int code = exitStatusFor(status);
    events_->write("agent_exit", {{"exit_code", code}});
    // The stop signals stay blocked: one still pending (Slurm sends SIGTERM to
    // every task process) must not turn the child's status into the agent's death.
    if (sfd_ >= 0) ::close(sfd_);
    return code;
  }

 private:
  // The node, the run directory, the command and (under Slurm) the task's
  // rank variables; 2 and why on err when something is missing.
  int setup() {
    node_ = resolveNode(opts_, std::getenv("SLURMD_NODENAME"));
    if (node_.empty()) {
      err_ << "faultline agent: no node name (--node NAME, or SLURMD_NODENAME with --slurm-task)\n";
      return 2;
    }
    if (!validNodeName(node_)) {
      err_ << "faultline agent: --node '" << node_ << "' is not a valid node name (no '/', not '.' or '..')\n";
      return 2;
    }
    out_ = opts_.out_dir.empty() ? envVar(env_, "FAULTLINE_RUN_DIR").value_or("") : opts_.out_dir;
    if (out_.empty()) {
      err_ << "faultline agent: no run directory (--out OUT, or FAULTLINE_RUN_DIR)\n";
      return 2;
    }
    if (opts_.command.empty()) {
      err_ << "faultline agent: no command given (faultline agent --node NAME [options] -- COMMAND [ARGS...])\n";
      return 2;
    }
    if (opts_.slurm_task) {
      auto mapped = slurmTaskEnv(env_);
      if (!mapped) {
        err_ << "faultline agent: " << mapped.error().str() << "\n";
        return 2;
      }
      overrides_ = *mapped;
      slurm_rank_ = std::stoi(env_.at("SLURM_PROCID"));
      slurm_local_rank_ = std::stoi(env_.at("SLURM_LOCALID"));
    }
    if (auto pid = envVar(env_, launch::kSupervisorPidVar)) supervisor_ = static_cast<pid_t>(std::atoi(pid->c_str()));
    overrides_.emplace_back("FAULTLINE_NODE", node_);
    overrides_.emplace_back("FAULTLINE_AGENT_PID", std::to_string(self_));
    return 0;
  }

  // OUT/nodes/NAME/agent-PID.jsonl; 3 when it cannot be written.
  int openEvents() {
    const RunLayout layout(out_);
    std::error_code ec;
    std::filesystem::create_directories(layout.nodeDir(node_), ec);
    if (ec) {
      err_ << "faultline agent: cannot create " << layout.nodeDir(node_) << ": " << ec.message() << "\n";
      return 3;
    }
    const std::string path = layout.nodeAgentEvents(node_, self_);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      err_ << "faultline agent: cannot open " << path << ": " << std::strerror(errno) << "\n";
      return 3;
    }
    events_ = std::make_unique<EventFile>(fd, AgentIdentity{node_, hostName(), self_});
    return 0;
  }

  void writeStart() {
    nlohmann::json start = {{"command", opts_.command}};
    if (!opts_.link.empty()) start["link"] = opts_.link;
    if (const auto job = envVar(env_, "SLURM_JOB_ID")) start["slurm_job"] = *job;
    if (const auto step = envVar(env_, "SLURM_STEP_ID")) start["slurm_step"] = *step;
    events_->write("agent_start", start);
  }

  // The stop signals and SIGCHLD arrive on a signalfd; the command gets
  // default dispositions and an empty mask from the launch stage.
  void blockStopSignals() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&mask, s);
    ::sigprocmask(SIG_BLOCK, &mask, nullptr);
    sfd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  }

  // COMMAND in a process group of its own, with the agent's stdio and the
  // node's variables, through the launch stage (launch::spawnProcess); a
  // command that cannot run is said on err and ends as a shell's would: the
  // wait status of exit 127 (not found) or 126 (not runnable).
  tl::expected<pid_t, int> startCommand() {
    EnvMap merged = env_;
    for (const auto& [k, v] : overrides_) merged[k] = v;
    launch::SpawnSpec spec;
    spec.argv = opts_.command;
    for (const auto& [k, v] : merged) spec.env.push_back(k + "=" + v);
    spec.inherit_stdio = true;
    // A node's launcher (not a Slurm task, which is one rank): its output
    // passed on through the agent and copied to the node's directory.
    if (!opts_.slurm_task) {
      const RunLayout layout(out_);
      if (out_copy_.open(STDOUT_FILENO, layout.nodeLauncherStdout(node_))) spec.stdout_fd = out_copy_.writeEnd();
      if (err_copy_.open(STDERR_FILENO, layout.nodeLauncherStderr(node_))) spec.stderr_fd = err_copy_.writeEnd();
    }
    const std::string& cmd = opts_.command[0];
    Result<pid_t> pid = launch::resolveExecutable(cmd, envVar(merged, "PATH").value_or("/usr/bin:/bin"))
                            .and_then([&](std::string exe) {
                              spec.executable = std::move(exe);
                              return launch::spawnProcess(spec, launch::Placement{});
                            });
    out_copy_.closeWriteEnd();
    err_copy_.closeWriteEnd();
    if (pid) return *pid;
    err_ << "faultline agent: cannot run " << cmd << ": " << pid.error().message << "\n";
    // As a shell says it: 127 for a command that is not there, 126 for one
    // that is but cannot be run (not executable, a bad interpreter line).
    const bool there = spec.executable.empty()
                           ? cmd.find('/') != std::string::npos && ::access(cmd.c_str(), F_OK) == 0
                           : pid.error().message.find("No such file") == std::string::npos;
    return tl::unexpected((there ? 126 : 127) << 8);  // as W_EXITCODE(code, 0)
  }

  void noteSlurmRank() {
    if (!slurm_rank_) return;
    ranks_[child_] = {*slurm_rank_, false};
    nlohmann::json f = {{"rank", *slurm_rank_}, {"pid", child_}};
    if (slurm_local_rank_) f["local_rank"] = *slurm_local_rank_;
    events_->write("rank_start", f);
  }

  // Until the command ends: the link sampled and the ranks below looked for
  // every kPollMs, the stop signals forwarded to its whole group.
  int watchUntilExit() {
    std::optional<int> status;
    int64_t next_tick = 0;
    while (!status) {
      const int64_t now = monotonicMs();
      if (now >= next_tick) {
        sampleLink();
        scanRanks(false);
        next_tick = now + kPollMs;
      }
      pollfd pfds[3] = {{sfd_, POLLIN, 0}, {out_copy_.readFd(), POLLIN, 0}, {err_copy_.readFd(), POLLIN, 0}};
      const int timeout = static_cast<int>(std::max<int64_t>(0, next_tick - monotonicMs()));
      ::poll(pfds, 3, timeout);  // a negative fd is skipped
      out_copy_.pump();
      err_copy_.pump();
      forwardSignals();
      int ws = 0;
      pid_t w;
      do {
        w = ::waitpid(child_, &ws, WNOHANG);
      } while (w < 0 && errno == EINTR);
      if (w == child_) status = ws;
      if (w < 0 && errno == ECHILD) status = 0;  // cannot happen: it is ours
    }
    return *status;
  }

  // A stop signal from the supervisor is not passed on: its teardown sends
  // one to every process of the run itself, and a second SIGTERM that lands
  // while torch's agent is already shutting down (its handler raises into
  // _shutdown) leaves that agent hung in its log tailer, past the grace.
  // One from anyone else (Slurm's step signal, a user) reaches the group.
  void forwardSignals() {
    signalfd_siginfo si{};
    while (sfd_ >= 0 && ::read(sfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      const int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) continue;
      if (supervisor_ > 0 && static_cast<pid_t>(si.ssi_pid) == supervisor_) {
        events_->write("signal", {{"signal", signalName(sig)}, {"from_supervisor", true}});
        continue;
      }
      // The whole group, as a terminal's Ctrl-C reaches every process of a job.
      if (::kill(-child_, sig) != 0) ::kill(child_, sig);
      events_->write("signal", {{"signal", signalName(sig)}, {"forwarded_to", child_}});
    }
  }

  // Descendants are found by polling: a rank seen once keeps its pid; a
  // process that has not exec'd yet (no RANK) is read again next time.
  void scanRanks(bool final_pass) {
    static const std::set<std::string> kRankVars = {"RANK", "LOCAL_RANK"};
    auto procs = scanProcesses();
    std::set<pid_t> alive;
    for (const auto& p : procs) {
      if (p.state != 'Z') alive.insert(p.pid);
    }
    if (!opts_.slurm_task && !final_pass) {
      // Only what is below the agent is read further.
      std::map<pid_t, pid_t> parent;
      for (const auto& p : procs) parent[p.pid] = p.ppid;
      std::vector<ProcInfo> below;
      for (auto& p : procs) {
        pid_t up = p.ppid;
        for (int depth = 0; depth < 4096 && up > 0 && up != self_; ++depth) {
          const auto it = parent.find(up);
          up = it == parent.end() ? 0 : it->second;
        }
        if (up == self_ && p.state != 'Z' && readEnviron(p, kRankVars)) below.push_back(p);
        else if (up == self_) below.push_back(p);
      }
      for (const auto& r : ranksBelow(below, self_)) {
        if (ranks_.count(r.pid)) continue;
        ranks_[r.pid] = {r.rank, false};
        nlohmann::json f = {{"rank", r.rank}, {"pid", r.pid}};
        if (r.local_rank) f["local_rank"] = *r.local_rank;
        events_->write("rank_start", f);
      }
    }
    for (auto& [pid, r] : ranks_) {
      if (r.ended || pid == child_ || alive.count(pid)) continue;
      r.ended = true;
      events_->write("rank_exit", {{"rank", r.rank}, {"pid", pid}, {"gone", true}});
    }
  }

  void sampleLink() {
    if (opts_.link.empty()) return;
    const std::string now = readOperstate(opts_.link);
    if (now == link_state_) return;
    nlohmann::json f = {{"ifname", opts_.link}, {"state", now}};
    if (!link_state_.empty()) f["previous"] = link_state_;
    events_->write("link", f);
    link_state_ = now;
  }

  // The command's end (and its rank's, under Slurm); then a last look.
  void recordEnd(int status) {
    nlohmann::json exit_fields = waitStatusFields(status);
    if (const auto it = ranks_.find(child_); child_ > 0 && it != ranks_.end()) {
      it->second.ended = true;
      nlohmann::json f = {{"rank", it->second.rank}, {"pid", child_}};
      f.update(exit_fields);
      events_->write("rank_exit", f);
    }
    nlohmann::json cf = {{"pid", child_ > 0 ? nlohmann::json(child_) : nlohmann::json(nullptr)}};
    cf.update(exit_fields);
    events_->write("child_exit", cf);
    sampleLink();
    scanRanks(true);
  }

  // The command's output to its end: the pipes close once its last process
  // has. One its descendants still hold (a survivor's) is passed on for up to
  // kSurvivorSettleMs, then left.
  void drainOutput() {
    const int64_t until = monotonicMs() + kSurvivorSettleMs;
    bool open = out_copy_.pump() | err_copy_.pump();
    while (open && monotonicMs() < until) {
      pollfd pfds[2] = {{out_copy_.readFd(), POLLIN, 0}, {err_copy_.readFd(), POLLIN, 0}};
      ::poll(pfds, 2, kPollMs);
      open = out_copy_.pump() | err_copy_.pump();
    }
  }

  // The node's own teardown proof: what of this run and node is still there.
  // The child's group got the stop signal with the child; a member still in
  // its exit path when the child is reaped is not a survivor, so one that is
  // still there is looked at again until kSurvivorSettleMs have passed.
  void recordSurvivors() {
    static const std::set<std::string> kRunVars = {"FAULTLINE_RUN_ID", "FAULTLINE_NODE", "FAULTLINE_AGENT_PID"};
    const auto scan = [&] {
      std::vector<ProcInfo> readable;
      for (auto& p : scanProcesses()) {
        if (p.pid != self_ && p.state != 'Z' && readEnviron(p, kRunVars)) readable.push_back(std::move(p));
      }
      return survivorsAmong(readable, envVar(env_, "FAULTLINE_RUN_ID"), node_, self_);
    };
    const int64_t settle_until = monotonicMs() + kSurvivorSettleMs;
    std::vector<ProcInfo> left = scan();
    while (!left.empty() && monotonicMs() < settle_until) {
      ::usleep(static_cast<useconds_t>(kPollMs) * 1000 / 5);
      left = scan();
    }
    nlohmann::json survivors = nlohmann::json::array();
    for (const auto& p : left) survivors.push_back({{"pid", p.pid}, {"cmdline", readCmdline(p.pid)}});
    events_->write("survivors", {{"processes", survivors}});
  }

  const AgentOptions& opts_;
  std::ostream& err_;
  const EnvMap env_;
  const pid_t self_ = ::getpid();
  std::string node_, out_;
  std::vector<std::pair<std::string, std::string>> overrides_;
  std::optional<int> slurm_rank_, slurm_local_rank_;
  std::unique_ptr<EventFile> events_;
  int sfd_ = -1;
  pid_t child_ = -1;
  pid_t supervisor_ = 0;  // the run's supervisor (kSupervisorPidVar); 0: unknown
  std::map<pid_t, TrackedRank> ranks_;
  std::string link_state_;
  OutputCopy out_copy_, err_copy_;
};

}  // namespace

int runAgent(const AgentOptions& opts, std::ostream& err) { return NodeAgent(opts, err).run(); }

}  // namespace faultline::agent
