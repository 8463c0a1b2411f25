// A node agent's command's output: passed on to the agent's own stdout or
// stderr (the run's launcher output, where every node's goes, as a terminal
// shows it) and copied to a file of the node (OUT/nodes/NODE/launcher.*),
// so that what each node's launcher said can be told apart: spawn's
// "Process 1 terminated" names a process of its own node.
#pragma once

#include <string>

namespace faultline::agent {

class OutputCopy {
 public:
  // A pipe whose write end the command gets; `own_fd` the agent's stream it
  // passes on to; `copy_path` the node's copy (created; "" none). False, and
  // the command keeps the agent's stream, when no pipe can be made.
  bool open(int own_fd, const std::string& copy_path);
  ~OutputCopy();
  OutputCopy() = default;
  OutputCopy(const OutputCopy&) = delete;
  OutputCopy& operator=(const OutputCopy&) = delete;

  int writeEnd() const { return write_fd_; }
  // After the command has started: only the command holds the write end.
  void closeWriteEnd();
  int readFd() const { return read_fd_; }
  // Passes on what is there to read, without blocking; false once every
  // writer has closed the pipe (or it was never open).
  bool pump();

 private:
  int own_fd_ = -1;
  int read_fd_ = -1;
  int write_fd_ = -1;
  int copy_fd_ = -1;
};

}  // namespace faultline::agent
