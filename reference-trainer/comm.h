// The trainer's view of c10d: rendezvous over a TCPStore and the few
// collectives DDP needs, each announced as collective_begin/end events with a
// per-group sequence number. Hides which backend (Gloo, NCCL) and which
// LibTorch (1.13, where ProcessGroupGloo is a ProcessGroup; 2.x, where it is a
// Backend) is underneath.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "reference-trainer/rank_env.h"

namespace faultline::trainer {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const std::string& backend() const = 0;

  // Blocking; a peer failure or the process-group timeout throws (c10::Error).
  // `where` is the caller's line, the collective_begin event's `site`.
  using Where = std::source_location;
  virtual void allreduceSum(at::Tensor& t, Where where = Where::current()) = 0;
  virtual void broadcast(at::Tensor& t, int root, Where where = Where::current()) = 0;
  virtual void barrier(Where where = Where::current()) = 0;
  // The sequence number the next collective will carry.
  virtual int64_t nextSeq() const = 0;
};

struct CommConfig {
  std::string backend;  // gloo | nccl (resolved, not auto)
  std::chrono::milliseconds collective_timeout{1800 * 1000};
  std::chrono::milliseconds rendezvous_timeout{300 * 1000};
  int port_offset = 0;  // a rendezvous_failure fault dials a wrong port
};

// Joins the store and builds the process group; emits pg_init. The returned
// object destroys the group (and emits pg_destroy) when it goes away, on every
// exit path that unwinds.
std::unique_ptr<Comm> connect(const RankEnv& env, const CommConfig& config);

// Whether this LibTorch was built with NCCL (the NCCL path exists at all).
bool ncclCompiledIn();

}  // namespace faultline::trainer
