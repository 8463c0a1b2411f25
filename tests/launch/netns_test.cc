// Network namespaces of torchrun-multinode (harness/launch/netns.h), for
// real: created, isolated (a node reaches the other node and nothing else;
// the root namespace reaches neither), removed, nothing left; a dead run's
// network swept. Needs root (ip netns).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>

#include "harness/launch/netns.h"
#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"

namespace faultline::launch {
namespace {

// Python inside NS: connects to ADDR:PORT within 2 s; exit 0 when it could.
// The listener is a Python in the peer namespace.
std::vector<std::string> inNs(const std::string& ns, std::vector<std::string> cmd) {
  std::vector<std::string> out = {"/usr/sbin/ip", "netns", "exec", ns};
  out.insert(out.end(), cmd.begin(), cmd.end());
  return out;
}

const char* kServe =
    "import socket,sys\n"
    "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], 29555)); s.listen(4)\n"
    "s.settimeout(20); c,_=s.accept(); c.sendall(b'ok'); c.close()\n";
const char* kConnect =
    "import socket,sys\n"
    "for _ in range(100):\n"
    "  try:\n"
    "    c=socket.create_connection((sys.argv[1], 29555), timeout=2); print(c.recv(2).decode()); sys.exit(0)\n"
    "  except ConnectionRefusedError:\n"
    "    import time; time.sleep(0.1)\n"  // the listener is still starting: a retry, not a bound
    "  except OSError as e:\n"
    "    print(e); sys.exit(3)\n"
    "sys.exit(4)\n";

class Netns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_FAIL() << "network namespaces need root";
    net_ = planNetwork("netns-test-" + std::to_string(::getpid()), 2);
  }
  void TearDown() override { (void)removeNetwork(net_); }
  RunNetwork net_;
};

TEST(NetnsPlan, NamesFitAnInterfaceAndFollowTheRunId) {
  const RunNetwork a = planNetwork("1234-abc-0", 3);
  const RunNetwork b = planNetwork("1234-abc-1", 3);
  EXPECT_NE(a.tag, b.tag);
  EXPECT_EQ(a.tag, planNetwork("1234-abc-0", 3).tag);
  ASSERT_EQ(a.nodes.size(), 3u);
  EXPECT_EQ(a.nodes[1].name, "n2");
  EXPECT_EQ(a.nodes[1].addr, a.subnet + ".2");
  for (const auto& n : a.nodes) {
    EXPECT_LE(n.host_if.size(), 15u);
    EXPECT_LE(n.node_if.size(), 15u);
    EXPECT_EQ(n.netns.rfind(a.tag, 0), 0u);
  }
  EXPECT_LE(a.bridge.size(), 15u);
}

// Each node's hosts file names every node, and this machine's name is the
// node's own address, as a cluster's hosts resolve their own names: torch's
// agent tells the other nodes its address by its name (c10d rendezvous).
TEST(NetnsPlan, EachNodesHostsFileNamesItselfByTheMachinesName) {
  const RunNetwork net = planNetwork("1234-abc-0", 2);
  EXPECT_EQ(nodeHostName(net, net.nodes[1]), "n2." + net.tag);
  EXPECT_EQ(hostsFileOf(net, net.nodes[1], "vm"),
            "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n" + net.subnet + ".1 n1." + net.tag + "\n" +
                net.subnet + ".2 n2." + net.tag + " vm\n");
  // A machine named localhost keeps localhost the loopback.
  EXPECT_EQ(hostsFileOf(net, net.nodes[0], "localhost").find(" n1." + net.tag + " localhost"), std::string::npos);
}

// Seen on a GPU machine's image without iproute2: every multi-node run was a
// harness error. Now the stack is not offered there, and says why.
TEST(NetnsPlan, AMachineWithoutIpCannotMakeNamespacesAndSaysSo) {
  if (::geteuid() != 0) {
    EXPECT_EQ(networkProblem("/nonexistent"), "network namespaces need root");
    return;
  }
  EXPECT_EQ(networkProblem("/nonexistent"),
            "network namespaces need the ip command (iproute2), which this machine does not have");
  EXPECT_EQ(ipCommand("/nonexistent"), "");
  EXPECT_EQ(networkProblem(), "");
  EXPECT_EQ(ipCommand().front(), '/');
}

TEST_F(Netns, CreatedIsolatedAndRemovedWithNothingLeft) {
  ASSERT_TRUE(createNetwork(net_)) << "create";
  for (const auto& n : net_.nodes) EXPECT_EQ(routeOutProblem(n.netns, net_.subnet), "") << n.netns;
  const auto env = toEnvStrings(currentEnvironment());
  // n1 -> n2 works inside the run's network.
  SpawnSpec serve;
  serve.executable = "/usr/sbin/ip";
  serve.argv = inNs(net_.nodes[1].netns, {"/usr/bin/python3", "-c", kServe, net_.nodes[1].addr});
  serve.env = env;
  serve.stdout_path = "/dev/null";
  serve.stderr_path = "/dev/null";
  Placement p;
  auto server = spawnProcess(serve, p);
  ASSERT_TRUE(server);
  auto got = runToCompletion(inNs(net_.nodes[0].netns, {"/usr/bin/python3", "-c", kConnect, net_.nodes[1].addr}), env, 30);
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->ok()) << got->out << got->err;
  EXPECT_EQ(got->out, "ok\n");
  int status = 0;
  ::waitpid(*server, &status, 0);
  // Out of a namespace there is no route: not even to the root namespace's own addresses.
  auto out = runToCompletion(inNs(net_.nodes[0].netns, {"/usr/bin/python3", "-c", kConnect, "1.1.1.1"}), env, 30);
  ASSERT_TRUE(out);
  EXPECT_EQ(WEXITSTATUS(out->wait_status), 3) << out->out;
  EXPECT_NE(out->out.find("unreachable"), std::string::npos) << out->out;
  // And the root namespace cannot reach a node: the bridge has no address.
  auto in = runToCompletion({"/usr/bin/python3", "-c", kConnect, net_.nodes[1].addr}, env, 30);
  ASSERT_TRUE(in);
  EXPECT_NE(WEXITSTATUS(in->wait_status), 0) << in->out;
  // A partition: the host side down cuts n2 off.
  ASSERT_TRUE(setLinkUp(net_.nodes[1].host_if, false));
  auto cut = runToCompletion(inNs(net_.nodes[0].netns, {"/usr/bin/python3", "-c", kConnect, net_.nodes[1].addr}), env, 30);
  ASSERT_TRUE(cut);
  EXPECT_NE(WEXITSTATUS(cut->wait_status), 0) << cut->out;
  EXPECT_TRUE(rateLimitLink(net_.nodes[1].host_if, "200kbit"));
  // Inside node n2 this machine's name is n2's address, and n1 is known by its name.
  auto names = runToCompletion(
      inNs(net_.nodes[1].netns, {"/usr/bin/python3", "-c",
                                 "import socket,sys; print(socket.gethostbyname(socket.gethostname()), socket.getfqdn(), "
                                 "socket.gethostbyname(sys.argv[1]))",
                                 nodeHostName(net_, net_.nodes[0])}),
      env, 30);
  ASSERT_TRUE(names);
  EXPECT_EQ(names->out, net_.nodes[1].addr + " " + nodeHostName(net_, net_.nodes[1]) + " " + net_.nodes[0].addr + "\n")
      << names->err;

  EXPECT_FALSE(leftoverOf(net_.tag).empty());
  ASSERT_TRUE(removeNetwork(net_));
  for (int i = 0; i < 100 && !leftoverOf(net_.tag).empty(); ++i) ::usleep(20000);  // the kernel frees a namespace's veth moments later
  EXPECT_EQ(leftoverOf(net_.tag), std::vector<std::string>{});
}

TEST_F(Netns, ADeadRunsNetworkIsSweptALiveOnesIsNot) {
  ASSERT_TRUE(createNetwork(net_));
  // Ours is alive (this process owns it): kept.
  auto swept = sweepStaleNetworks();
  EXPECT_EQ(std::count(swept.begin(), swept.end(), net_.tag), 0);
  EXPECT_FALSE(leftoverOf(net_.tag).empty());
  // Its owner dead (a pid that ran and was reaped): swept.
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  { std::ofstream(std::string(kNetnsOwnerDir) + "/" + net_.tag) << dead << "\n"; }
  swept = sweepStaleNetworks();
  EXPECT_EQ(std::count(swept.begin(), swept.end(), net_.tag), 1);
  for (int i = 0; i < 100 && !leftoverOf(net_.tag).empty(); ++i) ::usleep(20000);
  EXPECT_EQ(leftoverOf(net_.tag), std::vector<std::string>{});
}

}  // namespace
}  // namespace faultline::launch
