// Network namespaces for a multi-node run on one machine: `ip` and `tc` run to completion.
#include "harness/launch/netns.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"

namespace faultline::launch {
namespace {

namespace fs = std::filesystem;

constexpr double kIpTimeoutS = 20;

// FNV-1a: a stable tag from the run id.
uint64_t hashOf(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

Result<CommandResult> tool(const std::string& name, const std::vector<std::string>& args) {
  auto exe = resolveExecutable(name, kNetToolPath);
  if (!exe) return tl::unexpected(exe.error());
  std::vector<std::string> argv = {*exe};
  argv.insert(argv.end(), args.begin(), args.end());
  return runToCompletion(argv, toEnvStrings(currentEnvironment()), kIpTimeoutS);
}

// Runs `name args`; kSystem "ip link add ...: what it said" unless it exits 0.
Result<std::string> must(const std::string& name, const std::vector<std::string>& args) {
  auto r = tool(name, args);
  std::string shown = name;
  for (const auto& a : args) shown += " " + a;
  if (!r) return fail(ErrorCode::kSystem, shown + ": " + r.error().message);
  if (!r->ok()) {
    std::string err = r->err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return fail(ErrorCode::kSystem, shown + ": " + (err.empty() ? "failed" : err));
  }
  return r->out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

// Names from `ip netns list` ("NAME (id: 3)" or "NAME").
std::vector<std::string> namespaces() {
  std::vector<std::string> out;
  auto r = tool("ip", {"netns", "list"});
  if (!r || !r->ok()) return out;
  for (const auto& l : lines(r->out)) out.push_back(l.substr(0, l.find(' ')));
  return out;
}

// The run networks' directories in kNetnsEtcDir (a namespace's hosts file).
std::vector<std::string> netnsEtcDirs() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(kNetnsEtcDir, ec)) {
    const std::string name = d.path().filename().string();
    if (name.rfind("fl", 0) == 0) out.push_back(name);
  }
  return out;
}

// Link names from `ip -o link show` ("11: NAME@if2: <...>").
std::vector<std::string> links() {
  std::vector<std::string> out;
  auto r = tool("ip", {"-o", "link", "show"});
  if (!r || !r->ok()) return out;
  for (const auto& l : lines(r->out)) {
    const auto colon = l.find(": ");
    if (colon == std::string::npos) continue;
    std::string name = l.substr(colon + 2);
    name = name.substr(0, name.find_first_of(":@"));
    out.push_back(name);
  }
  return out;
}

bool startsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// "fl" + 6 hex digits: the tags faultline makes.
std::string tagOf(const std::string& name) {
  if (name.size() < 8 || !startsWith(name, "fl")) return "";
  for (size_t i = 2; i < 8; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return "";
  }
  return name.substr(0, 8);
}

bool pidAlive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

std::string ownerFile(const std::string& tag) { return std::string(kNetnsOwnerDir) + "/" + tag; }

}  // namespace

std::string ipCommand(const std::string& tool_path) {
  auto exe = resolveExecutable("ip", tool_path);
  return exe ? *exe : std::string();
}

std::string networkProblem(const std::string& tool_path) {
  if (::geteuid() != 0) return "network namespaces need root";
  if (ipCommand(tool_path).empty()) return "network namespaces need the ip command (iproute2), which this machine does not have";
  return "";
}

RunNetwork planNetwork(const std::string& run_id, int nodes) {
  const uint64_t h = hashOf(run_id);
  char tag[16];
  std::snprintf(tag, sizeof tag, "fl%06llx", static_cast<unsigned long long>(h & 0xffffff));
  RunNetwork net;
  net.tag = tag;
  net.bridge = net.tag + "b";
  // 10.X.Y/24 with X in 100..227: clear of 10.0.x and the usual container ranges.
  net.subnet = "10." + std::to_string(100 + ((h >> 24) & 0x7f)) + "." + std::to_string((h >> 31) & 0xff);
  for (int k = 1; k <= nodes; ++k) {
    const std::string n = std::to_string(k);
    net.nodes.push_back({"n" + n, net.tag + "n" + n, net.tag + "h" + n, net.tag + "v" + n, net.subnet + "." + n});
  }
  return net;
}

std::string routeOutProblem(const std::string& netns, const std::string& subnet) {
  auto routes = must("ip", {"-n", netns, "route", "show", "table", "all"});
  if (!routes) return routes.error().message;
  for (const auto& l : lines(*routes)) {
    // Only the subnet's own link route, and the kernel's local/broadcast routes of the namespace's addresses.
    if (startsWith(l, subnet + ".0/24 dev ")) continue;
    if (startsWith(l, "local ") || startsWith(l, "broadcast ") || startsWith(l, "multicast ") ||
        l.find(" table local ") != std::string::npos) {
      continue;
    }
    if (startsWith(l, "fe80::") || startsWith(l, "ff00::") || startsWith(l, "::1 ")) continue;
    return "namespace " + netns + " has a route that may lead out: " + l;
  }
  auto out = tool("ip", {"-n", netns, "route", "get", "1.1.1.1"});
  if (out && out->ok()) return "namespace " + netns + " reaches 1.1.1.1: " + out->out;
  return "";
}

std::string nodeHostName(const RunNetwork& net, const NodeNet& node) { return node.name + "." + net.tag; }

std::string hostsFileOf(const RunNetwork& net, const NodeNet& self, const std::string& hostname) {
  std::string out = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n";
  for (const auto& n : net.nodes) {
    out += n.addr + " " + nodeHostName(net, n);
    if (n.name == self.name && !hostname.empty() && hostname != "localhost") out += " " + hostname;
    out += "\n";
  }
  return out;
}

Result<void> createNetwork(const RunNetwork& net) {
  std::error_code ec;
  fs::create_directories(kNetnsOwnerDir, ec);
  {
    std::ofstream owner(ownerFile(net.tag), std::ios::trunc);
    owner << ::getpid() << "\n";
    if (!owner) return fail(ErrorCode::kIo, "cannot write the owner file " + ownerFile(net.tag));
  }
  auto undo = [&](Error e) -> Result<void> {
    (void)removeNetwork(net);
    return tl::unexpected(std::move(e));
  };
  std::vector<std::vector<std::string>> steps = {
      {"link", "add", net.bridge, "type", "bridge"},
      {"link", "set", net.bridge, "up"},
  };
  for (const auto& n : net.nodes) {
    steps.push_back({"netns", "add", n.netns});
    steps.push_back({"link", "add", n.host_if, "type", "veth", "peer", "name", n.node_if, "netns", n.netns});
    steps.push_back({"link", "set", n.host_if, "master", net.bridge, "up"});
    steps.push_back({"-n", n.netns, "addr", "add", n.addr + "/24", "dev", n.node_if});
    steps.push_back({"-n", n.netns, "link", "set", n.node_if, "up"});
    steps.push_back({"-n", n.netns, "link", "set", "lo", "up"});
  }
  for (const auto& s : steps) {
    if (auto r = must("ip", s); !r) return undo(r.error());
  }
  for (const auto& n : net.nodes) {
    if (auto why = routeOutProblem(n.netns, net.subnet); !why.empty()) return undo(Error{ErrorCode::kSystem, why, n.netns});
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  for (const auto& n : net.nodes) {
    const std::string dir = std::string(kNetnsEtcDir) + "/" + n.netns;
    fs::create_directories(dir, ec);
    std::ofstream hosts(dir + "/hosts", std::ios::trunc);
    hosts << hostsFileOf(net, n, host);
    hosts.close();
    if (ec || !hosts) return undo(Error{ErrorCode::kIo, "cannot write the node's hosts file", dir + "/hosts"});
  }
  // The bridge carries no address: the root namespace cannot reach the nodes, nor they it.
  {
    std::ofstream v6("/proc/sys/net/ipv6/conf/" + net.bridge + "/disable_ipv6");
    v6 << "1\n";  // not even a link-local address
  }
  if (auto a = must("ip", {"-o", "addr", "show", "dev", net.bridge});
      a && (a->find("inet ") != std::string::npos || a->find("scope global") != std::string::npos)) {
    return undo(Error{ErrorCode::kSystem, "bridge " + net.bridge + " has an address: " + *a, net.bridge});
  }
  return {};
}

Result<void> removeNetwork(const RunNetwork& net) {
  std::string problems;
  const auto have_links = links();
  const auto have_ns = namespaces();
  auto has = [](const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  for (const auto& n : net.nodes) {
    // Deleting one side deletes the pair; a namespace's own veth goes only when the namespace is freed.
    if (has(have_links, n.host_if)) {
      if (auto r = must("ip", {"link", "del", n.host_if}); !r) problems += r.error().message + "; ";
    }
    if (has(have_ns, n.netns)) {
      if (auto r = must("ip", {"netns", "del", n.netns}); !r) problems += r.error().message + "; ";
    }
    std::error_code ec;
    if (!n.netns.empty()) fs::remove_all(std::string(kNetnsEtcDir) + "/" + n.netns, ec);
    if (ec) problems += "cannot remove " + std::string(kNetnsEtcDir) + "/" + n.netns + ": " + ec.message() + "; ";
  }
  if (has(have_links, net.bridge)) {
    if (auto r = must("ip", {"link", "del", net.bridge}); !r) problems += r.error().message + "; ";
  }
  std::error_code ec;
  fs::remove(ownerFile(net.tag), ec);
  if (!problems.empty()) return fail(ErrorCode::kSystem, "removing network " + net.tag + ": " + problems);
  return {};
}

std::vector<std::string> tearDownNetwork(const RunNetwork& net) {
  std::vector<std::string> left;
  if (auto r = removeNetwork(net); !r) left.push_back("netns: " + r.error().message);
  for (int i = 0; i < 50; ++i) {
    if (leftoverOf(net.tag).empty()) break;
    ::usleep(20000);
  }
  for (const auto& l : leftoverOf(net.tag)) left.push_back("netns: " + l + " still exists");
  return left;
}

Result<void> setLinkUp(const std::string& ifname, bool up) {
  if (auto r = must("ip", {"link", "set", ifname, up ? "up" : "down"}); !r) return tl::unexpected(r.error());
  return {};
}

Result<void> rateLimitLink(const std::string& ifname, const std::string& rate) {
  auto r = must("tc", {"qdisc", "replace", "dev", ifname, "root", "tbf", "rate", rate, "burst", "16kbit", "latency", "400ms"});
  if (!r) return tl::unexpected(r.error());
  return {};
}

std::vector<std::string> leftoverOf(const std::string& tag) {
  std::vector<std::string> out;
  for (const auto& n : namespaces()) {
    if (startsWith(n, tag)) out.push_back("namespace " + n);
  }
  for (const auto& l : links()) {
    if (startsWith(l, tag)) out.push_back("link " + l);
  }
  for (const auto& c : netnsEtcDirs()) {
    if (startsWith(c, tag)) out.push_back("namespace configuration " + std::string(kNetnsEtcDir) + "/" + c);
  }
  return out;
}

std::vector<std::string> sweepStaleNetworks() {
  std::set<std::string> tags;
  for (const auto& n : namespaces()) {
    if (auto t = tagOf(n); !t.empty()) tags.insert(t);
  }
  for (const auto& l : links()) {
    if (auto t = tagOf(l); !t.empty()) tags.insert(t);
  }
  for (const auto& c : netnsEtcDirs()) {
    if (auto t = tagOf(c); !t.empty()) tags.insert(t);
  }
  std::vector<std::string> removed;
  for (const auto& tag : tags) {
    std::ifstream owner(ownerFile(tag));
    long pid = 0;
    const bool has_owner = static_cast<bool>(owner >> pid);
    if (has_owner && pidAlive(static_cast<pid_t>(pid))) continue;
    if (!has_owner) {
      // No owner file: not ours to judge unless nothing runs inside.
      bool busy = false;
      for (const auto& n : namespaces()) {
        if (!startsWith(n, tag)) continue;
        auto p = tool("ip", {"netns", "pids", n});
        busy = busy || (p && p->ok() && !lines(p->out).empty());
      }
      if (busy) continue;
    }
    RunNetwork net;
    net.tag = tag;
    net.bridge = tag + "b";
    std::set<std::string> node_ns;
    for (const auto& n : namespaces()) node_ns.insert(n);
    for (const auto& c : netnsEtcDirs()) node_ns.insert(c);
    for (const auto& n : node_ns) {
      if (startsWith(n, tag + "n")) {
        const std::string k = n.substr(tag.size() + 1);
        net.nodes.push_back({"n" + k, n, tag + "h" + k, tag + "v" + k, ""});
      }
    }
    for (const auto& l : links()) {
      if (startsWith(l, tag + "h") && std::none_of(net.nodes.begin(), net.nodes.end(), [&](const NodeNet& x) { return x.host_if == l; })) {
        net.nodes.push_back({"", "", l, "", ""});
      }
    }
    (void)removeNetwork(net);
    removed.push_back(tag);
  }
  return removed;
}

}  // namespace faultline::launch
