// Incremental events.jsonl reading and collective tracking.
#include "harness/supervise/progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace faultline::supervise {

size_t EventsFollower::readNew(const std::function<void(std::string_view)>& on_line) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t lines = 0;
  char buf[64 * 1024];
  while (true) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset_ += n;
    std::string_view chunk(buf, static_cast<size_t>(n));
    size_t start = 0;
    while (true) {
      size_t nl = chunk.find('\n', start);
      if (nl == std::string_view::npos) break;
      if (partial_.empty()) {
        on_line(chunk.substr(start, nl - start));
      } else {
        partial_.append(chunk.substr(start, nl - start));
        on_line(partial_);
        partial_.clear();
      }
      ++lines;
      start = nl + 1;
    }
    // A line longer than 1 MiB is not an event; drop it rather than grow.
    if (partial_.size() < (1u << 20)) partial_.append(chunk.substr(start));
  }
  ::close(fd);
  return lines;
}

void CollectiveTracker::onLine(int file_rank, std::string_view line) {
  if (line.empty()) return;
  auto j = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ev") || !j["ev"].is_string()) {
    ++malformed_;
    return;
  }
  int rank = file_rank;
  if (auto it = j.find("rank"); it != j.end() && it->is_number_integer()) rank = it->get<int>();
  seen_.insert(rank);
  const std::string ev = j["ev"].get<std::string>();
  if (ev != "collective_begin" && ev != "collective_end") return;
  OpenCollective c;
  if (auto it = j.find("op"); it != j.end() && it->is_string()) c.op = it->get<std::string>();
  if (auto it = j.find("seq"); it != j.end() && it->is_number_integer()) c.seq = it->get<int64_t>();
  if (auto it = j.find("t"); it != j.end() && it->is_number_integer()) c.t_ns = it->get<int64_t>();
  if (ev == "collective_begin") {
    open_[rank] = c;
  } else {
    open_.erase(rank);
    last_ended_[rank] = c;
  }
}

bool CollectiveTracker::anyInCollective() const { return !open_.empty(); }

std::optional<OpenCollective> CollectiveTracker::openCollective(int rank) const {
  auto it = open_.find(rank);
  if (it == open_.end()) return std::nullopt;
  return it->second;
}

std::string CollectiveTracker::describe() const {
  // Group waiting ranks by (op, seq).
  std::map<std::pair<std::string, int64_t>, std::vector<int>> groups;
  for (const auto& [rank, c] : open_) groups[{c.op, c.seq}].push_back(rank);
  std::string out;
  for (const auto& [key, ranks] : groups) {
    if (!out.empty()) out += "; ";
    out += ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
    out += " in " + key.first + " seq " + std::to_string(key.second);
  }
  std::vector<int> outside;
  for (int r : seen_) {
    if (!open_.count(r)) outside.push_back(r);
  }
  if (!outside.empty()) {
    out += out.empty() ? "" : "; ";
    out += outside.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < outside.size(); ++i) out += (i ? "," : "") + std::to_string(outside[i]);
    out += " not in a collective";
  }
  return out;
}

}  // namespace faultline::supervise
