// Process fork/exec/exit events from the kernel's proc connector (netlink),
// delivered on the supervisor's io_context. This is how the external mode
// sees rank processes appear, and learns the exit status of processes it did
// not start (the launcher reaps them, often before a /proc read could).
// Needs CAP_NET_ADMIN in the initial namespaces; open() returns null otherwise
// and the caller falls back to rescanning the process tree.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace faultline::supervise {

class ProcEvents {
 public:
  struct Handlers {
    std::function<void(pid_t parent, pid_t child)> on_fork;  // processes only, not threads
    std::function<void(pid_t pid)> on_exec;
    std::function<void(pid_t pid, int wait_status)> on_exit;  // thread-group leaders only
    std::function<void()> on_overrun;                          // events were lost (ENOBUFS)
  };

  static std::unique_ptr<ProcEvents> open(boost::asio::io_context& io, Handlers handlers);
  ~ProcEvents();
  ProcEvents(const ProcEvents&) = delete;
  ProcEvents& operator=(const ProcEvents&) = delete;

 private:
  ProcEvents(boost::asio::io_context& io, int fd, Handlers h);
  void arm();
  void onReadable();
  bool subscribe(bool on);

  boost::asio::posix::stream_descriptor sock_;
  Handlers handlers_;
  alignas(8) std::array<char, 64 * 1024> buf_{};
};

}  // namespace faultline::supervise
