#include "harness/supervise/rank_tracker.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <nlohmann/json.hpp>

#include "harness/launch/clock.h"
#include "harness/launch/rank_env.h"
#include "harness/os/sys.h"
#include "harness/supervise/proc_fs.h"

namespace faultline::supervise {

namespace asio = boost::asio;

std::unique_ptr<RankTracker> RankTracker::forLauncher(const launch::Launcher& launcher, const Context& ctx) {
  switch (launcher.rankDiscovery()) {
    case launch::RankDiscovery::kStarted: return std::make_unique<StartedRanks>(ctx);
    case launch::RankDiscovery::kDescendants: return std::make_unique<DescendantRanks>(ctx);
    case launch::RankDiscovery::kRunProcesses: return std::make_unique<RunProcessRanks>(ctx);
    case launch::RankDiscovery::kLauncherRankZero: return std::make_unique<LauncherRankZero>(ctx);
  }
  return std::make_unique<DescendantRanks>(ctx);
}

RankTracker::RankTracker(const Context& ctx) : ctx_(ctx), scan_timer_(ctx.io) {}

void RankTracker::launched(const std::vector<pid_t>&, std::optional<pid_t> launcher) {
  launcher_pid_ = launcher;
  if (launcher) run_pids_.insert(*launcher);
}

std::vector<pid_t> RankTracker::members() const { return ctx_.containment.members(); }

void RankTracker::stop() {
  stopped_ = true;
  scan_timer_.cancel();
}

// A process forked by one of the run's is the run's, and its parent noted;
// one of the run's that ends is told to the sink with what was noted of it.
ProcEvents::Handlers RankTracker::runProcessHandlers() {
  ProcEvents::Handlers h;
  h.on_fork = [this](pid_t parent, pid_t child) {
    if (!run_pids_.count(parent)) return;
    run_pids_.insert(child);
    parents_[child] = parent;
  };
  h.on_exit = [this](pid_t pid, int status) {
    if (!run_pids_.erase(pid)) return;
    ctx_.sink.processEnded(exitRecord(pid, status, launch::realtimeNs()), ProcessOutcome::fromWaitStatus(status));
  };
  return h;
}

ProcessExit RankTracker::exitRecord(pid_t pid, int wait_status, int64_t t_ns) {
  const auto outcome = ProcessOutcome::fromWaitStatus(wait_status);
  ProcessExit e;
  e.pid = pid;
  e.t_ns = t_ns;
  e.exit_code = outcome.exitCode();
  if (auto sig = outcome.signal()) e.signal = signalName(*sig);
  if (auto it = cmdlines_.find(pid); it != cmdlines_.end()) {
    e.cmdline = it->second;
    cmdlines_.erase(it);
  }
  if (auto it = parents_.find(pid); it != parents_.end()) {
    e.ppid = it->second;
    parents_.erase(it);
  }
  return e;
}

// --- ranks faultline started --------------------------------------------------

// The ranks are our children: their exits come by waitpid, but what they fork
// (DataLoader workers, helpers) dies out of our sight. The proc connector
// reports those exits, with each one's parent, as evidence of a rank's part
// dying (a worker torch says only "exited unexpectedly" about). Nothing here
// finds or ends a rank.
void StartedRanks::open() {
  if (!ctx_.allow_proc_connector) return;
  ProcEvents::Handlers h = runProcessHandlers();
  h.on_exec = [this](pid_t pid) {
    if (run_pids_.count(pid) && !ctx_.sink.rankByPid(pid)) cmdlines_[pid] = cmdline(pid);
  };
  h.on_overrun = [this] {
    ctx_.sink.note("proc connector overrun: some exits of the ranks' children may be missing");
    for (pid_t p : ctx_.containment.members()) run_pids_.insert(p);
  };
  proc_events_ = ProcEvents::open(ctx_.io, std::move(h));
}

void StartedRanks::launched(const std::vector<pid_t>& ranks, std::optional<pid_t> launcher) {
  RankTracker::launched(ranks, launcher);
  run_pids_.insert(ranks.begin(), ranks.end());  // its children's exits are recorded
}

// --- ranks among the launcher's descendants -----------------------------------

void DescendantRanks::open() {
  if (!ctx_.allow_proc_connector) return;
  ProcEvents::Handlers h = runProcessHandlers();
  h.on_exec = [this](pid_t pid) {
    if (!run_pids_.count(pid) && joinsAtExec(pid)) run_pids_.insert(pid);
    if (!run_pids_.count(pid)) return;
    cmdlines_[pid] = cmdline(pid);
    if (!parents_.count(pid)) {
      if (auto st = readStat(pid)) parents_[pid] = st->ppid;
    }
    classified_.erase(pid);  // a new program, maybe with a new environment
    classify(pid);
  };
  h.on_overrun = [this] {
    ctx_.sink.note("proc connector overrun: rescanning the process tree");
    for (pid_t p : ctx_.containment.members()) run_pids_.insert(p);
    scan();
  };
  proc_events_ = ProcEvents::open(ctx_.io, std::move(h));
  if (!proc_events_) ctx_.sink.note("proc connector unavailable: external ranks found by rescanning every 100 ms");
}

void DescendantRanks::launched(const std::vector<pid_t>& ranks, std::optional<pid_t> launcher) {
  RankTracker::launched(ranks, launcher);
  scan();
  if (rescans()) armScan();
}

void DescendantRanks::armScan() {
  // New rank processes cannot be observed by an event without the proc
  // connector, so the tree is rescanned at a modest period; only pids never
  // seen before have their environ read.
  scan_timer_.expires_after(std::chrono::milliseconds(100));
  scan_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    scan();
    if (rescans()) armScan();
  });
}

void DescendantRanks::scan() {
  for (pid_t pid : ctx_.containment.members()) classify(pid);
  // Ranks without a pidfd: ended once gone, or a zombie of their launcher.
  for (auto it = unwatched_.begin(); it != unwatched_.end();) {
    RankState* r = *it;
    const auto st = readStat(r->pid);
    if (r->finished || !isAlive(r->pid) || (st && st->state == 'Z')) {
      std::optional<ProcessOutcome> outcome;
      if (st && st->state == 'Z' && st->exit_code) outcome = ProcessOutcome::fromWaitStatus(*st->exit_code);
      it = unwatched_.erase(it);
      if (!r->finished) ctx_.sink.rankEnded(*r, outcome, launch::realtimeNs());
    } else {
      ++it;
    }
  }
}

namespace {

std::optional<int> digitsVar(pid_t pid, const char* name) {
  auto text = environVar(pid, name);
  if (!text || text->empty() || text->size() > 9 || text->find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::atoi(text->c_str());
}

// A process carrying the same value of `name` as its parent is its helper
// (a DataLoader worker): the rank is the topmost such process.
bool inheritedFromParent(pid_t pid, const char* name, int value) {
  auto st = readStat(pid);
  return st && digitsVar(st->ppid, name) == value;
}

}  // namespace

std::optional<int> DescendantRanks::rankOf(pid_t pid) const {
  auto rank = digitsVar(pid, "RANK");
  if (!rank || inheritedFromParent(pid, "RANK", *rank)) return std::nullopt;
  return rank;
}

void DescendantRanks::classify(pid_t pid) {
  if (classified_.count(pid)) return;
  if (launcher_pid_ && pid == *launcher_pid_) {
    classified_.insert(pid);
    return;
  }
  const std::optional<int> rank = rankOf(pid);
  if (!rank) {
    // Between its fork and its exec a rank still shows its launcher's
    // environment, without RANK. Exec events re-classify it; without them it
    // is looked at again on the next rescan, or it would never be found.
    if (proc_events_) classified_.insert(pid);
    return;
  }
  classified_.insert(pid);
  if (auto ws = digitsVar(pid, "WORLD_SIZE")) ctx_.sink.worldSizeSeen(*ws);
  if (ctx_.sink.hasLiveRank(*rank)) return;  // e.g. a wrapper that exec'd again
  found(*rank, pid);
}

void DescendantRanks::found(int rank, pid_t pid) {
  std::optional<std::string> node = environVar(pid, "FAULTLINE_NODE");
  if (auto it = agent_nodes_.find(pid); !node && it != agent_nodes_.end()) node = it->second;
  RankState& r = ctx_.sink.rankFound(rank, pid, std::move(node));
  // With the proc connector the exit arrives as an event; without it, by pidfd.
  if (!proc_events_) watchEnd(r);
}

bool DescendantRanks::isMember(pid_t pid) const {
  const auto all = members();
  return std::find(all.begin(), all.end(), pid) != all.end();
}

// The shim's word: process `pid` is rank `rank`. Taken for a live process of
// the run that no rank is yet, when no live rank has that number.
void DescendantRanks::reported(int rank, pid_t pid) {
  if (stopped_ || rank < 0 || ctx_.sink.rankByPid(pid) || ctx_.sink.hasLiveRank(rank) || !isMember(pid)) return;
  classified_.insert(pid);
  found(rank, pid);
}

// --- the launcher is rank 0 (Lightning) ----------------------------------------

// Lightning's script is its own launcher: run once, it is rank 0, and it
// starts the script again for ranks 1..N-1 with LOCAL_RANK, NODE_RANK and
// WORLD_SIZE, never RANK (lightning/fabric/strategies/launchers/
// subprocess_script.py). On node 0 the global rank is the local one; on
// another node it depends on the processes per node, which nothing in the
// environment says: the shim's report names those. Rank 0 is the process
// that started rank 1..N-1, found with the first of them (or by the shim).
std::optional<int> LauncherRankZero::rankOf(pid_t pid) const {
  if (auto rank = DescendantRanks::rankOf(pid)) return rank;
  auto local = digitsVar(pid, "LOCAL_RANK");
  if (!local || digitsVar(pid, "NODE_RANK").value_or(0) != 0 || inheritedFromParent(pid, "LOCAL_RANK", *local)) {
    return std::nullopt;
  }
  return local;
}

// A rank Lightning started is a child of the script it reran, its node's
// local rank 0: rank - LOCAL_RANK (rank 0 on one node; node n2's script of
// two ranks a node is rank 2).
void LauncherRankZero::found(int rank, pid_t pid) {
  DescendantRanks::found(rank, pid);
  const int local = digitsVar(pid, "LOCAL_RANK").value_or(0);  // none: a script itself, no child of one
  if (local <= 0 || local > rank) return;
  const int parent_rank = rank - local;
  if (ctx_.sink.hasLiveRank(parent_rank)) return;
  auto st = readStat(pid);
  if (!st || ctx_.sink.rankByPid(st->ppid) || !isMember(st->ppid)) return;
  classified_.insert(st->ppid);
  DescendantRanks::found(parent_rank, st->ppid);
}

void DescendantRanks::watchEnd(RankState& r) {
  int fd = os::sys().pidfdOpen(r.pid, 0);
  if (fd < 0 && errno == ESRCH) {
    // Gone already: its launcher may have reaped it.
    ctx_.sink.rankEnded(r, std::nullopt, launch::realtimeNs());
    return;
  }
  if (fd < 0) {
    // No pidfd (out of descriptors, say) is no end: the proc connector's
    // exit event says when it ends, else the rescan looks for it.
    ctx_.sink.note("pidfd_open failed for rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) +
                   "): " + std::strerror(errno) + "; its end is " +
                   (proc_events_ ? "seen by the proc connector" : "looked for every 100 ms"));
    if (!proc_events_) unwatched_.insert(&r);
    return;
  }
  r.pidfd = std::make_unique<asio::posix::stream_descriptor>(ctx_.io, fd);
  RankState* rp = &r;
  r.pidfd->async_wait(asio::posix::stream_descriptor::wait_read, [this, rp](const boost::system::error_code& ec) {
    if (ec) return;
    const int64_t t = launch::realtimeNs();
    // Not our child: the status is readable only while it is a zombie of its launcher.
    std::optional<ProcessOutcome> outcome;
    if (auto st = readStat(rp->pid); st && st->state == 'Z' && st->exit_code) {
      outcome = ProcessOutcome::fromWaitStatus(*st->exit_code);
    }
    ctx_.sink.rankEnded(*rp, outcome, t);
  });
}

// --- the run's processes anywhere on the host ----------------------------------

bool RunProcessRanks::carriesRunId(pid_t pid) const { return environVar(pid, launch::kRunIdVar) == ctx_.run_id; }

// Slurm's tasks are no descendants of the launcher: a process of the run anywhere on the host.
bool RunProcessRanks::joinsAtExec(pid_t pid) const { return pid != ::getpid() && carriesRunId(pid); }

void RunProcessRanks::scan() {
  DescendantRanks::scan();
  readAgentEvents();
  const pid_t self = ::getpid();
  for (pid_t pid : listPids()) {
    if (pid == self || classified_.count(pid) || run_pids_.count(pid) || (proc_events_ && foreign_.count(pid))) continue;
    if (!carriesRunId(pid)) {
      foreign_.insert(pid);
      continue;
    }
    run_pids_.insert(pid);
    classify(pid);
  }
}

std::vector<pid_t> RunProcessRanks::members() const {
  std::vector<pid_t> out = ctx_.containment.members();
  const std::set<pid_t> in(out.begin(), out.end());
  const pid_t self = ::getpid();
  for (pid_t pid : listPids()) {
    if (pid != self && !in.count(pid) && isAlive(pid) && carriesRunId(pid)) out.push_back(pid);
  }
  return out;
}

// The agents' rank_start events: the node of each rank, and (on this host,
// where every node is) its pid to classify, should /proc have missed it.
void RunProcessRanks::readAgentEvents() {
  std::error_code ec;
  for (const auto& node : std::filesystem::directory_iterator(ctx_.layout.nodesDir(), ec)) {
    std::error_code ec2;
    for (const auto& f : std::filesystem::directory_iterator(node.path(), ec2)) {
      const std::string path = f.path().string();
      if (f.path().filename().string().rfind("agent-", 0) != 0) continue;
      auto text = readSmallFile(path, 16 << 20);
      if (!text) continue;
      size_t& off = agent_offsets_[path];
      while (off < text->size()) {
        const size_t nl = text->find('\n', off);
        if (nl == std::string::npos) break;  // a line still being written
        const auto j = nlohmann::json::parse(text->substr(off, nl - off), nullptr, false);
        off = nl + 1;
        if (!j.is_object() || j.value("event", "") != "rank_start" || !j.contains("pid") || !j["pid"].is_number_integer()) continue;
        const pid_t pid = j["pid"].get<pid_t>();
        agent_nodes_[pid] = j.value("node", "");
        if (RankState* r = ctx_.sink.rankByPid(pid); r && !r->node) r->node = agent_nodes_[pid];
        if (!classified_.count(pid) && carriesRunId(pid)) {
          run_pids_.insert(pid);
          classify(pid);
        }
      }
    }
  }
}

}  // namespace faultline::supervise
