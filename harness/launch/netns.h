// Network namespaces as the hosts of a multi-node run on one machine
// (docs/MULTINODE.md, "Network namespaces"): one namespace per node, one veth
// pair per node with its host side on a bridge in the root namespace, the
// bridge without an address, no route out of any namespace. Named from the
// run id; created before the run starts and removed when it ends. A run that
// never got to remove them (faultline SIGKILLed) leaves an owner file whose
// pid is dead: the next multi-node run's start, and `ci/netns-clean`, sweep
// those (sweepStaleNetworks).
#pragma once

#include <string>
#include <vector>

#include "harness/model/error.h"

namespace faultline::launch {

struct NodeNet {
  std::string name;     // "n1"
  std::string netns;    // "fl3a9f1cn1"
  std::string host_if;  // the veth's host side, on the bridge: "fl3a9f1ch1"
  std::string node_if;  // its side inside the namespace: "fl3a9f1cv1"
  std::string addr;     // "10.x.y.1"
};

struct RunNetwork {
  std::string tag;     // "fl3a9f1c": every name starts with it (<= 15 chars with a suffix)
  std::string bridge;  // "fl3a9f1cb"
  std::string subnet;  // "10.x.y" (/24)
  std::vector<NodeNet> nodes;
};

// Where owner files live: DIR/TAG holds the pid of the faultline that made TAG.
inline constexpr const char* kNetnsOwnerDir = "/run/faultline-netns";

// Where `ip netns exec` finds a namespace's own configuration files
// (/etc/netns/NAME/hosts is bind-mounted over /etc/hosts for what runs in it).
inline constexpr const char* kNetnsEtcDir = "/etc/netns";

// The directories `ip` and `tc` are looked up in.
inline constexpr const char* kNetToolPath = "/usr/sbin:/sbin:/usr/bin:/bin";

// Where this machine's `ip` (iproute2) is: an absolute path, "" when it has none.
std::string ipCommand(const std::string& tool_path = kNetToolPath);

// Why this machine cannot make a run's network namespaces, "" when it can:
// they need root and `ip` (seen missing on a GPU machine's image, where every
// multi-node run was a harness error "ip link add ...: command not found").
std::string networkProblem(const std::string& tool_path = kNetToolPath);

// The names and addresses for a run of `nodes` nodes (pure).
RunNetwork planNetwork(const std::string& run_id, int nodes);

// A node's name on the run's network: "n1.fl3a9f1c".
std::string nodeHostName(const RunNetwork& net, const NodeNet& node);
// Node `self`'s /etc/hosts (pure): localhost, every node by nodeHostName, and
// this machine's `hostname` as an alias of the node's own address, as on a
// cluster where each host's name resolves to its own address. torch's
// elastic agent reads its address from its name: with a c10d rendezvous,
// rank 0's node tells the others MASTER_ADDR by socket.getfqdn(), and a node
// hosts the rendezvous store when the endpoint is one of its addresses.
std::string hostsFileOf(const RunNetwork& net, const NodeNet& self, const std::string& hostname);

// Creates the bridge, namespaces, veth pairs and each node's hosts file
// (hostsFileOf, in kNetnsEtcDir), checks that no route leads out; on any
// failure removes what it made. kSystem naming the step.
Result<void> createNetwork(const RunNetwork& net);
// Removes everything of `net` (each step tried, whatever failed before) and
// its owner file; the error lists what could not be removed.
Result<void> removeNetwork(const RunNetwork& net);
// removeNetwork, then the wait for the kernel to free each namespace's own
// veth (moments later): what is still there after 1 s, as teardown leaks
// ("netns: ..."); empty when nothing is.
std::vector<std::string> tearDownNetwork(const RunNetwork& net);
// Non-empty: why a route in `netns` may lead out of the run's subnet.
std::string routeOutProblem(const std::string& netns, const std::string& subnet);
// Node faults on the host side of a node's veth: the link down or up (a
// partition), a tbf rate limit ("200kbit"; this kernel has no netem).
Result<void> setLinkUp(const std::string& ifname, bool up);
Result<void> rateLimitLink(const std::string& ifname, const std::string& rate);
// The namespaces, links and namespace configuration directories of this tag that still exist.
std::vector<std::string> leftoverOf(const std::string& tag);
// Removes the namespaces and bridges of runs whose owner is dead (or that
// have no owner file and no process inside); returns the tags removed.
std::vector<std::string> sweepStaleNetworks();

}  // namespace faultline::launch
