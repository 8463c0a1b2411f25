// Hand-written event histories for analysis and findings tests.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "harness/diagnose/events.h"
#include "harness/diagnose/run_input.h"

namespace faultline::diagnose::testing {

class History {
 public:
  explicit History(int rank, int64_t t0 = 1'000'000'000) : rank_(rank), t_(t0) {}

  History& at(int64_t t_ms) {
    t_ = 1'000'000'000 + t_ms * 1'000'000;
    return *this;
  }
  History& ev(const std::string& name) {
    Event e;
    e.ev = name;
    return push(std::move(e));
  }
  History& collective(const std::string& op, int64_t seq, int64_t numel, bool ended = true) {
    return collectiveAt(op, seq, numel, "", "", ended);
  }
  // A collective_begin with the shim's call site (and rank condition), then its end.
  History& collectiveAt(const std::string& op, int64_t seq, int64_t numel, const std::string& site,
                        const std::string& rank_cond = "", bool ended = true) {
    Event b;
    b.ev = "collective_begin";
    b.op = op;
    b.seq = seq;
    b.numel = numel;
    b.site = site;
    b.rank_cond = rank_cond;
    push(b);
    if (ended) {
      Event e;
      e.ev = "collective_end";
      e.op = op;
      e.seq = seq;
      e.numel = numel;
      push(e);
    }
    return *this;
  }
  // A fingerprint taken at `at` (ddp_init, ddp_ready, optimizer_step) of `what`.
  History& fingerprintAt(const std::string& at, int64_t step, const std::string& hash,
                         const std::string& what = "params") {
    Event e;
    e.ev = "fingerprint";
    e.what = what;
    e.at = at;
    e.step = step;
    e.hash = hash;
    return push(std::move(e));
  }
  History& step(int64_t s, bool ended = true) {
    Event e;
    e.ev = "step_begin";
    e.step = s;
    push(e);
    if (ended) {
      e.ev = "step_end";
      push(e);
    }
    return *this;
  }
  // A probe's params fingerprint: no `at`.
  History& fingerprint(int64_t step, const std::string& hash) { return fingerprintAt("", step, hash); }
  History& metric(const std::string& name, double v, const std::string& scope, int64_t step) {
    Event e;
    e.ev = "metric";
    e.name = name;
    e.value = v;
    e.scope = scope;
    e.step = step;
    return push(std::move(e));
  }
  History& samples(int64_t epoch, std::vector<int64_t> idx, const std::string& hash = "") {
    Event e;
    e.ev = "samples";
    e.epoch = epoch;
    e.count = static_cast<int64_t>(idx.size());
    e.indices = std::move(idx);
    e.hash = hash;
    return push(std::move(e));
  }
  History& fileOpen(const std::string& path, const std::string& mode) {
    Event e;
    e.ev = "file_open";
    e.path = path;
    e.mode = mode;
    return push(std::move(e));
  }
  // The Python shim's outcome for one patch (docs/BLACKBOX.md).
  History& instrument(const std::string& patch, bool applied, const std::string& error = "",
                      const std::string& torch = "2.13.0") {
    Event e;
    e.ev = "instrument";
    e.patch = patch;
    e.applied = applied;
    e.error = error;
    e.torch = torch;
    return push(std::move(e));
  }
  History& exit(int code) {
    Event e;
    e.ev = "exit";
    e.code = code;
    return push(std::move(e));
  }
  EventLog log() const { return log_; }

 private:
  History& push(Event e) {
    e.rank = rank_;
    e.pid = 1000 + rank_;
    e.t = t_;
    t_ += 1'000'000;  // 1 ms apart unless at() says otherwise
    log_.events.push_back(std::move(e));
    return *this;
  }
  int rank_;
  int64_t t_;
  EventLog log_;
};

// A rank of a hand-built run: started, with its exit (code, signal, time) if known.
inline RankInput& addRank(RunInput& in, int r, std::optional<int> code, std::optional<std::string> sig = std::nullopt,
                          std::optional<int64_t> exit_ns = std::nullopt) {
  RankInput& ri = in.ranks[r];
  ri.rank = r;
  ri.started = true;
  ri.exit_known = code.has_value() || sig.has_value();
  ri.exit_code = code;
  ri.signal = sig;
  ri.exit_ns = exit_ns;
  in.world_size = std::max(in.world_size, r + 1);
  return ri;
}

}  // namespace faultline::diagnose::testing
