// Reading /proc: process state, ancestry, environment, caught signals, sockets, shm.
// Every function tolerates a process that vanishes while it is being read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace faultline::supervise {

std::optional<std::string> readSmallFile(const std::string& path, size_t limit = 1 << 20);

struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  char state = '?';          // R S D Z T ...
  std::optional<int> exit_code;  // wait status (field 52), meaningful for a zombie
  uint64_t cpu_ticks = 0;        // utime + stime (fields 14, 15), clock ticks
  uint64_t flags = 0;            // the kernel's PF_* flags (field 9)
  // Already on its way out: a zombie, or the kernel began its exit (PF_EXITING).
  bool exiting() const { return state == 'Z' || state == 'X' || (flags & 0x4) != 0; }
};
std::optional<ProcStat> readStat(pid_t pid);
// One thread of pid's process: its own state and CPU time (/proc/PID/task/TID/stat).
std::optional<ProcStat> readThreadStat(pid_t pid, pid_t tid);
// Gone, exiting, or with a SIGKILL pending: nothing can keep it alive now.
bool doomed(pid_t pid);

std::vector<pid_t> listPids();
// Alive = exists and is not a zombie.
bool isAlive(pid_t pid);
// Whether any thread of pid's process still runs. A process whose leader
// already reads as a zombie (what isAlive and the exit events see) may still
// have threads on their way out, and its files (sockets, shared-memory
// mappings) are released only when the last one is gone.
bool anyThreadLive(pid_t pid);
// Every process below root (not root itself), by the ppid chain.
std::vector<pid_t> descendantsOf(pid_t root);
// pids reordered so that none comes before a process below it (its child,
// its grandchild) in the set: deepest first, ties in the given order. A
// launcher signalled before its ranks ends first, and its children see it go
// (mp.spawn's get SIGINT from PR_SET_PDEATHSIG) before the signal meant for
// them arrives. parent_of defaults to /proc's ppid (0 when gone).
std::vector<pid_t> childrenFirst(std::vector<pid_t> pids,
                                 const std::function<pid_t(pid_t)>& parent_of = {});
// For each root: CPU time (utime + stime, clock ticks) used so far by it and
// every live process below it, from one pass over /proc; a root that is gone
// is left out. Roots in `below_only` count the processes below them alone
// (their own work is one thread, read with readThreadActivity).
std::map<pid_t, uint64_t> treeCpuTicks(const std::vector<pid_t>& roots, const std::set<pid_t>& below_only = {});
// rchar + wchar of /proc/PID/io: bytes the process (every thread) passed to
// read and write calls of any kind, page-cache writes included, which
// write_bytes shows only at writeback. nullopt when unreadable.
std::optional<uint64_t> readIoChars(pid_t pid);
// The same for one thread of pid's process (/proc/PID/task/TID/io).
std::optional<uint64_t> readThreadIoChars(pid_t pid, pid_t tid);
// What one thread of pid's process does (a Ray worker's training thread),
// pid's other threads left out: its state, its I/O and its CPU time. nullopt
// when the thread is gone.
struct ThreadActivity {
  uint64_t cpu_ticks = 0;
  uint64_t io_chars = 0;
  char state = '?';
};
std::optional<ThreadActivity> readThreadActivity(pid_t pid, pid_t tid);
// The value of name in the process's environment as it was at exec.
std::optional<std::string> environVar(pid_t pid, const std::string& name);
// Space-joined argv, "" if gone.
std::string cmdline(pid_t pid);
// True when the process has a handler installed for sig (SigCgt in /proc/PID/status).
bool catchesSignal(pid_t pid, int sig);
// Basename of /proc/PID/exe ("python3.11", "faultline-trainer").
std::string exeName(pid_t pid);
// Open file descriptors of this process (for fd-leak checks).
int countOpenFds();

// What a process holds that can outlive it: /dev/shm paths it has mapped or
// open, and the socket inodes among its fds. One pass over its fds; the maps
// file (hundreds of KB for a LibTorch process) is searched, not split into lines.
struct HeldResources {
  std::set<std::string> shm;
  std::set<unsigned long> sockets;
};
HeldResources heldResourcesOf(pid_t pid);
// Socket inodes among a process's fds.
std::set<unsigned long> socketInodesOf(pid_t pid);
// Listening TCP sockets (v4 and v6): inode -> port.
std::map<unsigned long, int> listeningTcpSockets();

}  // namespace faultline::supervise
