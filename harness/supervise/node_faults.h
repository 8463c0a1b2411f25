// Node and network faults (docs/MULTINODE.md): struck by the supervisor on
// every process of a node, or on its link; recorded in the node's
// OUT/nodes/NAME/supervisor.jsonl. Internal to fl::supervise; the watch loop
// hands it the strikes that are due and tells it when the run has ended.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "harness/launch/run_layout.h"
#include "harness/model/supervisor_record.h"
#include "harness/supervise/fault_delivery.h"

namespace faultline::supervise {

class NodeFaults {
 public:
  struct Hooks {
    std::function<void(std::optional<int>, std::string, TimelineKind)> timeline;
    std::function<void(std::string)> note;
    std::function<bool()> ended;                       // the run is over or being torn down: strike no more
    std::function<std::optional<pid_t>()> launcher_pid;  // the launcher process, whose tree holds the nodes
  };

  NodeFaults(boost::asio::io_context& io, const RunLayout& layout, std::string run_id, FaultDelivery& faults, Hooks hooks);
  ~NodeFaults();
  NodeFaults(const NodeFaults&) = delete;
  NodeFaults& operator=(const NodeFaults&) = delete;

  // Strikes S (node_loss, agent_kill, partition, slow_link, slow_node) now.
  void strike(const Strike& s);
  // agent_kill at "rendezvous": every 50 ms, the node's agent as soon as it
  // runs, while no rank of that node exists yet. Nothing when none waits.
  void watchRendezvous();
  // No more rendezvous polling (the main phase is over).
  void stop();

 private:
  std::vector<pid_t> nodeProcesses(const std::string& node) const;
  std::string nodeLink(const std::string& node) const;
  void record(const Strike& s, const std::vector<pid_t>& pids, const std::string& detail);
  // SIGSTOP for duty% of a 500 ms period, SIGCONT for the rest, until the run ends.
  void slowCycle(const std::string& node, int duty, bool stop);

  boost::asio::io_context& io_;
  const RunLayout& layout_;
  std::string run_id_;
  FaultDelivery& faults_;
  Hooks hooks_;
  boost::asio::steady_timer rendezvous_timer_;
  std::vector<std::unique_ptr<boost::asio::steady_timer>> node_timers_;  // partition's link up again, slow_node's cycle
};

}  // namespace faultline::supervise
