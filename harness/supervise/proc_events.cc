// Proc connector client.
#include "harness/supervise/proc_events.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "harness/os/sys.h"

namespace faultline::supervise {

std::unique_ptr<ProcEvents> ProcEvents::open(boost::asio::io_context& io, Handlers handlers) {
  int fd = os::sys().socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
  if (fd < 0) return nullptr;
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = CN_IDX_PROC;
  addr.nl_pid = 0;  // let the kernel pick a unique port id (several runs per process)
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return nullptr;
  }
  // A large receive buffer: fork storms on a busy machine must not overrun it.
  int size = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
  std::unique_ptr<ProcEvents> p(new ProcEvents(io, fd, std::move(handlers)));
  if (!p->subscribe(true)) return nullptr;
  p->arm();
  return p;
}

ProcEvents::ProcEvents(boost::asio::io_context& io, int fd, Handlers h) : sock_(io, fd), handlers_(std::move(h)) {}

ProcEvents::~ProcEvents() {
  subscribe(false);
  boost::system::error_code ec;
  sock_.close(ec);
}

bool ProcEvents::subscribe(bool on) {
  // nlmsghdr | cn_msg | proc_cn_mcast_op, laid out by hand (cn_msg ends in a flexible array).
  alignas(8) char msg[NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_cn_mcast_op))] = {};
  auto* nl = reinterpret_cast<nlmsghdr*>(msg);
  nl->nlmsg_len = sizeof msg;
  nl->nlmsg_type = NLMSG_DONE;
  auto* cn = reinterpret_cast<cn_msg*>(NLMSG_DATA(nl));
  cn->id.idx = CN_IDX_PROC;
  cn->id.val = CN_VAL_PROC;
  cn->len = sizeof(proc_cn_mcast_op);
  proc_cn_mcast_op op = on ? PROC_CN_MCAST_LISTEN : PROC_CN_MCAST_IGNORE;
  std::memcpy(cn->data, &op, sizeof op);
  return ::send(sock_.native_handle(), &msg, sizeof msg, 0) == static_cast<ssize_t>(sizeof msg);
}

void ProcEvents::arm() {
  sock_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
    if (ec) return;
    onReadable();
    arm();
  });
}

void ProcEvents::onReadable() {
  while (true) {
    ssize_t n = ::recv(sock_.native_handle(), buf_.data(), buf_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS && handlers_.on_overrun) handlers_.on_overrun();
      if (errno == ENOBUFS) continue;
      return;  // EAGAIN: drained
    }
    if (n == 0) return;
    int len = static_cast<int>(n);
    for (auto* nl = reinterpret_cast<nlmsghdr*>(buf_.data()); NLMSG_OK(nl, len); nl = NLMSG_NEXT(nl, len)) {
      if (nl->nlmsg_type == NLMSG_ERROR || nl->nlmsg_type == NLMSG_NOOP) continue;
      auto* cn = reinterpret_cast<cn_msg*>(NLMSG_DATA(nl));
      if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC) continue;
      // cn->data lies 36 bytes into the datagram, not aligned for proc_event's
      // 64-bit fields: reading it in place is undefined (UBSan: misaligned
      // access), so the event is copied out.
      proc_event event{};
      std::memcpy(&event, cn->data, std::min<size_t>(sizeof event, cn->len));
      const proc_event* ev = &event;
      switch (ev->what) {
        case proc_event::PROC_EVENT_FORK:
          if (ev->event_data.fork.child_pid == ev->event_data.fork.child_tgid && handlers_.on_fork) {
            handlers_.on_fork(ev->event_data.fork.parent_tgid, ev->event_data.fork.child_tgid);
          }
          break;
        case proc_event::PROC_EVENT_EXEC:
          if (handlers_.on_exec) handlers_.on_exec(ev->event_data.exec.process_tgid);
          break;
        case proc_event::PROC_EVENT_EXIT:
          if (ev->event_data.exit.process_pid == ev->event_data.exit.process_tgid && handlers_.on_exit) {
            handlers_.on_exit(ev->event_data.exit.process_tgid, static_cast<int>(ev->event_data.exit.exit_code));
          }
          break;
        default:
          break;
      }
    }
  }
}

}  // namespace faultline::supervise
