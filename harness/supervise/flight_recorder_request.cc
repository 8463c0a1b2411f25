// Flight Recorder dump requests through the ranks' pipes.
#include "harness/supervise/flight_recorder_request.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

namespace faultline::supervise {
namespace {

// "pipe_3.pipe" -> ("pipe_", 3), "shim_3.pipe" -> ("shim_", 3)
std::optional<std::pair<std::string, int>> pipeName(const std::string& name) {
  for (const char* prefix : {"pipe_", "shim_"}) {
    const std::string p = prefix;
    if (name.rfind(p, 0) != 0 || name.size() <= p.size() + 5 || name.compare(name.size() - 5, 5, ".pipe") != 0) continue;
    const std::string digits = name.substr(p.size(), name.size() - p.size() - 5);
    if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
    return std::make_pair(p, std::stoi(digits));
  }
  return std::nullopt;
}

}  // namespace

std::vector<FlightRecorderRequest> requestFlightRecorderDumps(const std::string& dir) {
  std::vector<FlightRecorderRequest> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    const auto named = pipeName(f.path().filename().string());
    struct stat st{};
    if (!named || ::lstat(f.path().c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) continue;
    // O_NONBLOCK: ENXIO at once when no process holds the pipe open for reading.
    const int fd = ::open(f.path().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    const bool sent = ::write(fd, "1", 1) == 1;
    ::close(fd);
    if (!sent) continue;
    const std::string dump = dir + "/rank_" + std::to_string(named->second) + (named->first == "shim_" ? ".json" : "");
    out.push_back({named->second, f.path().string(), dump});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return out;
}

bool flightRecorderDumpWritten(const FlightRecorderRequest& r) {
  std::error_code ec;
  return std::filesystem::file_size(r.dump, ec) > 0 && !ec;
}

}  // namespace faultline::supervise
