// Incremental events.jsonl reading and collective tracking.
#include "harness/supervise/progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "harness/model/shim_patch.h"

namespace faultline::supervise {

size_t EventsFollower::readNew(const std::function<void(std::string_view)>& on_line) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t lines = 0;
  char buf[64 * 1024];
  while (true) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset_ += n;
    std::string_view chunk(buf, static_cast<size_t>(n));
    size_t start = 0;
    while (true) {
      size_t nl = chunk.find('\n', start);
      if (nl == std::string_view::npos) break;
      if (partial_.empty()) {
        on_line(chunk.substr(start, nl - start));
      } else {
        partial_.append(chunk.substr(start, nl - start));
        on_line(partial_);
        partial_.clear();
      }
      ++lines;
      start = nl + 1;
    }
    // A line longer than 1 MiB is not an event; drop it rather than grow.
    if (partial_.size() < (1u << 20)) partial_.append(chunk.substr(start));
  }
  ::close(fd);
  return lines;
}

namespace {

// The top-level fields the tracker reads, taken from a SAX parse: every event
// line of every rank comes through here while the run is supervised, and a
// DOM per line (an allocation per field) was most of the cost. The parse still
// validates the whole line, so what counts as malformed is unchanged.
class EventFields : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<std::string> ev, op, patch, error, group, store_key;
  std::optional<int64_t> rank, seq, t, step, pid, tid;
  std::optional<bool> applied;
  bool abandoned = false;  // collective_end of an async call the rank left running at destroy_process_group
  bool top_level_object = false;

  bool null() override { return value(); }
  bool boolean(bool v) override {
    if (depth_ != 1) return true;
    forget();
    if (key_ == "applied") applied = v;
    if (key_ == "abandoned") abandoned = v;
    return true;
  }
  bool number_integer(number_integer_t v) override { return integer(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return v <= static_cast<number_unsigned_t>(INT64_MAX) ? integer(static_cast<int64_t>(v)) : value();
  }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t& v) override {
    if (depth_ != 1) return true;
    forget();
    if (key_ == "ev") ev = v;
    if (key_ == "op") op = v;
    if (key_ == "patch") patch = v;
    if (key_ == "error") error = v;
    if (key_ == "group") group = v;
    if (key_ == "key") store_key = v;
    return true;
  }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) top_level_object = true;
    return nested();
  }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return nested(); }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    if (depth_ == 1) key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  // A value at depth 1 of a field that was set before is replaced, as in a DOM.
  bool value() {
    if (depth_ == 1) forget();
    return true;
  }
  bool integer(int64_t v) {
    if (depth_ != 1) return true;
    forget();
    if (key_ == "rank") rank = v;
    if (key_ == "seq") seq = v;
    if (key_ == "t") t = v;
    if (key_ == "step") step = v;
    if (key_ == "pid") pid = v;
    if (key_ == "tid") tid = v;
    return true;
  }
  bool nested() {
    if (depth_ == 1) forget();
    ++depth_;
    return true;
  }
  void forget() {
    if (key_ == "ev") ev.reset();
    if (key_ == "op") op.reset();
    if (key_ == "rank") rank.reset();
    if (key_ == "seq") seq.reset();
    if (key_ == "t") t.reset();
    if (key_ == "step") step.reset();
    if (key_ == "pid") pid.reset();
    if (key_ == "tid") tid.reset();
    if (key_ == "patch") patch.reset();
    if (key_ == "error") error.reset();
    if (key_ == "group") group.reset();
    if (key_ == "key") store_key.reset();
    if (key_ == "applied") applied.reset();
    if (key_ == "abandoned") abandoned = false;
  }
  int depth_ = 0;
  std::string key_;
};

}  // namespace

LineFields CollectiveTracker::onLine(int file_rank, std::string_view line) {
  LineFields out;
  out.rank = file_rank;
  if (line.empty()) return out;
  EventFields f;
  const bool ok = nlohmann::json::sax_parse(line.begin(), line.end(), &f);
  if (!ok || !f.top_level_object || !f.ev) {
    ++malformed_;
    return out;
  }
  const int rank = f.rank ? static_cast<int>(*f.rank) : file_rank;
  out = {rank, *f.ev, f.step, f.seq, f.pid, f.tid};
  seen_.insert(rank);
  if (*f.ev == "start" && f.pid) {
    // Another process starting as this rank: its launcher restarted the
    // ranks (a new attempt). What the earlier process was in is over.
    if (auto it = pid_.find(rank); it != pid_.end() && it->second != *f.pid) forgetProcess(rank);
    pid_[rank] = *f.pid;
  }
  if (*f.ev == "instrument" && f.patch && f.applied && patchFeeds(*f.patch, ShimEvidence::kCollectives)) {
    // A rank whose collectives the shim could not wrap may be in one unseen.
    if (*f.applied) {
      untraced_[rank].erase(*f.patch);
    } else {
      untraced_[rank][*f.patch] = f.error.value_or("no reason given");
    }
    if (untraced_[rank].empty()) untraced_.erase(rank);
    return out;
  }
  if (*f.ev == "error") erred_.insert(rank);
  if (*f.ev == "pg_init_begin") rendezvous_[rank] = f.t.value_or(0);
  if (*f.ev == "pg_init") {
    rendezvous_.erase(rank);
    joined_.insert(rank);
    destroyed_.erase(rank);
  }
  if (*f.ev == "pg_destroy") destroyed_.insert(rank);
  if (*f.ev == "data_begin") data_wait_[rank] = f.t.value_or(0);
  if (*f.ev == "data_end") data_wait_.erase(rank);
  if (*f.ev == "store_begin") store_[rank] = StoreWait{f.op.value_or(""), f.store_key.value_or(""), f.t.value_or(0)};
  if (*f.ev == "store_end") store_.erase(rank);
  if (*f.ev == "step_begin" && f.t) step_begin_[rank] = *f.t;
  if (*f.ev == "step_end" && f.t) {
    if (auto it = step_begin_.find(rank); it != step_begin_.end()) {
      durations_.addStep(*f.t - it->second);
      step_begin_.erase(it);
    }
  }
  const bool begin = *f.ev == "collective_begin";
  if (!begin && *f.ev != "collective_end") return out;
  OpenCollective c;
  if (f.op) c.op = *f.op;
  if (f.seq) c.seq = *f.seq;
  if (f.t) c.t_ns = *f.t;
  if (f.group) c.group = *f.group;
  if (begin) {
    open_[rank] = c;
  } else {
    // A duration only from the begin of the same call (same op and seq),
    // and not of one the rank abandoned when it destroyed its group.
    if (auto it = open_.find(rank);
        it != open_.end() && it->second.op == c.op && it->second.seq == c.seq && f.t && !f.abandoned) {
      durations_.addCollective(c.op, *f.t - it->second.t_ns);
    }
    open_.erase(rank);
    last_ended_[rank] = c;
  }
  return out;
}

void CollectiveTracker::forgetProcess(int rank) {
  open_.erase(rank);
  last_ended_.erase(rank);
  untraced_.erase(rank);
  step_begin_.erase(rank);
  erred_.erase(rank);
  destroyed_.erase(rank);
  rendezvous_.erase(rank);
  joined_.erase(rank);
  data_wait_.erase(rank);
  store_.erase(rank);
}

bool CollectiveTracker::anyInCollective() const { return !open_.empty(); }

int64_t CollectiveTracker::seqPassed(int rank) const {
  int64_t passed = -1;
  if (auto it = last_ended_.find(rank); it != last_ended_.end()) passed = it->second.seq;
  if (auto it = open_.find(rank); it != open_.end() && it->second.seq >= 0) passed = std::max(passed, it->second.seq - 1);
  return passed;
}

std::optional<OpenCollective> CollectiveTracker::openCollective(int rank) const {
  auto it = open_.find(rank);
  if (it == open_.end()) return std::nullopt;
  return it->second;
}

std::string CollectiveTracker::describe() const {
  // Group waiting ranks by (op, seq).
  std::map<std::pair<std::string, int64_t>, std::vector<int>> groups;
  for (const auto& [rank, c] : open_) groups[{c.op, c.seq}].push_back(rank);
  std::string out;
  for (const auto& [key, ranks] : groups) {
    if (!out.empty()) out += "; ";
    out += ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
    out += " in " + key.first + " seq " + std::to_string(key.second);
  }
  std::vector<int> outside;
  for (int r : seen_) {
    if (open_.count(r)) continue;
    auto gap = untraced_.find(r);
    if (gap == untraced_.end()) {
      outside.push_back(r);
      continue;
    }
    const auto& [patch, error] = *gap->second.begin();
    out += out.empty() ? "" : "; ";
    out += "rank " + std::to_string(r) + " collective tracing unavailable (patch " + patch + " failed: " + error + ")";
  }
  if (!outside.empty()) {
    out += out.empty() ? "" : "; ";
    out += outside.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < outside.size(); ++i) out += (i ? "," : "") + std::to_string(outside[i]);
    out += " not in a collective";
  }
  return out;
}

}  // namespace faultline::supervise
