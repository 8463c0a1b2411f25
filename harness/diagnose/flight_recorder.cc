// Flight Recorder dumps: format (pickle or JSON) to entries to events.
#include "harness/diagnose/flight_recorder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/diagnose/pickle.h"

namespace faultline::diagnose {
namespace {

using nlohmann::json;

std::optional<int64_t> optionalNs(const json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number_integer()) return std::nullopt;
  const int64_t v = it->get<int64_t>();
  if (v <= 0) return std::nullopt;  // 0: never discovered
  return v;
}

int64_t elementsOf(const json& sizes) {
  if (!sizes.is_array()) return -1;
  int64_t total = 0;
  for (const auto& shape : sizes) {
    if (!shape.is_array()) return -1;
    int64_t n = 1;
    for (const auto& d : shape) {
      if (!d.is_number_integer()) return -1;
      n *= d.get<int64_t>();
    }
    total += n;
  }
  return total;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Result<FlightRecorderEntry> entryOf(const json& e, size_t i) {
  const auto bad = [i](const std::string& what) {
    return fail(ErrorCode::kBadInput, "entries[" + std::to_string(i) + "]: " + what);
  };
  if (!e.is_object()) return bad("not an object");
  FlightRecorderEntry out;
  const auto seq = e.find("collective_seq_id");
  if (seq == e.end() || !seq->is_number_integer()) return bad("no integer collective_seq_id");
  out.seq = seq->get<int64_t>();
  out.profiling_name = e.value("profiling_name", std::string());
  out.op = opFromProfilingName(out.profiling_name);
  out.p2p = e.value("is_p2p", false);
  if (auto pg = e.find("process_group"); pg != e.end() && pg->is_array() && pg->size() >= 2 && (*pg)[0].is_string()) {
    out.group = (*pg)[0].get<std::string>();
    out.default_group = (*pg)[1] == "default_pg" || out.group == "0";
  } else if (auto id = e.find("pg_id"); id != e.end() && id->is_number_integer()) {
    out.group = std::to_string(id->get<int64_t>());
    out.default_group = id->get<int64_t>() == 0;
  }
  out.numel = elementsOf(e.value("input_sizes", json()));
  if (auto d = e.find("input_dtypes"); d != e.end() && d->is_array() && !d->empty() && (*d)[0].is_string()) {
    out.dtype = lower((*d)[0].get<std::string>());
  }
  out.state = e.value("state", std::string());
  out.retired = e.value("retired", false);
  out.created_ns = e.value("time_created_ns", int64_t{0});
  out.started_ns = optionalNs(e, "time_discovered_started_ns");
  out.completed_ns = optionalNs(e, "time_discovered_completed_ns");
  return out;
}

std::optional<int> rankOfFileName(const std::string& name) {
  // rank_R or rank_R.json (torch appends the rank to the prefix faultline gives it)
  if (name.rfind("rank_", 0) != 0) return std::nullopt;
  std::string digits = name.substr(5);
  if (digits.size() > 5 && digits.compare(digits.size() - 5, 5, ".json") == 0) digits.resize(digits.size() - 5);
  if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return std::stoi(digits);
}

}  // namespace

std::string opFromProfilingName(std::string_view name) {
  std::string op(name.substr(name.find(':') == std::string_view::npos ? 0 : name.find(':') + 1));
  while (!op.empty() && op.front() == '_') op.erase(op.begin());
  if (op.find("barrier") != std::string::npos) return "barrier";
  if (op.rfind("allreduce_coalesced", 0) == 0 || op.rfind("all_reduce_coalesced", 0) == 0) return "allreduce_coalesced";
  if (op.rfind("all_reduce", 0) == 0 || op.rfind("allreduce", 0) == 0) return "allreduce";
  if (op.rfind("all_gather", 0) == 0 || op.rfind("allgather", 0) == 0) return "allgather";
  if (op.rfind("reduce_scatter", 0) == 0) return "reduce_scatter";
  if (op.rfind("all_to_all", 0) == 0 || op.rfind("alltoall", 0) == 0) return "alltoall";
  return op;  // broadcast, reduce, gather, scatter, send, recv
}

Result<FlightRecorderDump> parseFlightRecorderDump(std::string_view bytes, int rank) {
  json doc;
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) {
    auto r = unpickle(bytes);
    if (!r) return tl::unexpected(r.error());
    doc = std::move(*r);
  } else {
    doc = json::parse(bytes, nullptr, false);
    if (doc.is_discarded()) return fail(ErrorCode::kBadInput, "neither a pickle nor JSON");
  }
  if (!doc.is_object()) return fail(ErrorCode::kBadInput, "the dump is not a dict");
  FlightRecorderDump out;
  out.rank = rank;
  out.version = doc.value("version", std::string());
  const auto entries = doc.find("entries");
  if (entries == doc.end()) return out;  // a recorder that recorded nothing (buffer size 0)
  if (!entries->is_array()) return fail(ErrorCode::kBadInput, "entries is not a list");
  for (size_t i = 0; i < entries->size(); ++i) {
    auto e = entryOf((*entries)[i], i);
    if (!e) return tl::unexpected(e.error());
    out.entries.push_back(std::move(*e));
  }
  return out;
}

FlightRecorderDumps readFlightRecorderDumps(const std::string& dir) {
  FlightRecorderDumps out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    if (f.is_regular_file(ec)) files.push_back(f.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    const auto rank = rankOfFileName(p.filename().string());
    if (!rank) continue;
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string name = "flight_recorder/" + p.filename().string();
    if (ss.str().empty()) continue;  // being written when the rank was killed
    auto dump = parseFlightRecorderDump(ss.str(), *rank);
    if (!dump) {
      out.problems.push_back(name + ": " + dump.error().message);
      continue;
    }
    dump->path = p.string();
    auto it = out.by_rank.find(*rank);
    if (it == out.by_rank.end() || dump->entries.size() > it->second.entries.size()) out.by_rank[*rank] = std::move(*dump);
  }
  return out;
}

std::map<int, std::vector<Event>> collectiveEventsOf(const FlightRecorderDumps& dumps) {
  // The window every dump holds: from the latest first sequence number.
  int64_t from = 0;
  for (const auto& [rank, d] : dumps.by_rank) {
    int64_t first = -1;
    for (const auto& e : d.entries) {
      if (e.default_group && !e.p2p && (first < 0 || e.seq < first)) first = e.seq;
    }
    if (first > from) from = first;
  }
  std::map<int, std::vector<Event>> out;
  for (const auto& [rank, d] : dumps.by_rank) {
    auto& events = out[rank];
    for (const auto& e : d.entries) {
      if (!e.default_group || e.p2p || e.seq < from || e.seq < 1) continue;
      Event b;
      b.ev = "collective_begin";
      b.rank = rank;
      b.t = e.created_ns;
      b.op = e.op;
      b.seq = e.seq - 1;
      b.numel = e.numel;
      b.dtype = e.dtype;
      events.push_back(b);
      if (e.ended()) {
        Event x = b;
        x.ev = "collective_end";
        x.t = e.completed_ns.value_or(e.created_ns);
        events.push_back(x);
      }
    }
  }
  return out;
}

}  // namespace faultline::diagnose
