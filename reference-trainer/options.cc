// Command-line parsing for faultline-trainer.
#include "reference-trainer/options.h"

#include <charconv>
#include <functional>
#include <map>
#include <sstream>

namespace faultline::trainer {

using probe::parseFaultSpec;

namespace {

template <class T>
tl::expected<void, std::string> number(const std::string& flag, const std::string& v, T& out, T min) {
  T parsed{};
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || parsed < min) {
    std::ostringstream want;
    want << "a number >= " << min;
    return tl::unexpected(flag + ": expected " + want.str() + ", got '" + v + "'");
  }
  out = parsed;
  return {};
}

tl::expected<void, std::string> choice(const std::string& flag, const std::string& v, std::string& out,
                                       std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) {
      out = v;
      return {};
    }
    list += (list.empty() ? "" : "|") + std::string(a);
  }
  return tl::unexpected(flag + ": expected " + list + ", got '" + v + "'");
}

}  // namespace

std::string usage() {
  return "usage: faultline-trainer [options]\n"
         "  A LibTorch DDP trainer for faultline. Reads RANK, LOCAL_RANK, WORLD_SIZE,\n"
         "  MASTER_ADDR and MASTER_PORT as torchrun sets them.\n"
         "  --steps N             total optimizer steps (default 20)\n"
         "  --epochs N            epochs (default: as many as --steps needs)\n"
         "  --batch-size N        per-rank batch size (default 32)\n"
         "  --hidden N            hidden width of the MLP (default 64)\n"
         "  --dataset-size N      synthetic samples (default 4096)\n"
         "  --seed N              model and data-order seed (default 1234)\n"
         "  --lr X                SGD learning rate (default 0.05)\n"
         "  --bucket-cap-mb X     gradient bucket size (default 25)\n"
         "  --backend B           auto|gloo|nccl (default auto)\n"
         "  --device D            auto|cpu|cuda (default auto)\n"
         "  --collective-timeout S  process-group timeout in seconds (default 1800)\n"
         "  --rendezvous-timeout S  store/rendezvous timeout in seconds (default 300)\n"
         "  --fingerprint-every N   parameter fingerprint period in steps (default 10)\n"
         "  --checkpoint-every N    checkpoint period in steps (default: end only)\n"
         "  --out-dir DIR         checkpoint and log directory\n"
         "  --no-probe            write no events (as a program without faultline's probe)\n"
         "  --fault KIND --fault-rank R[,R...]|all --fault-step S --fault-arg X\n"
         "                        inject a fault (also FAULTLINE_FAULT=KIND:rank=R:step=S:arg=X)\n";
}

tl::expected<Options, std::string> parseOptions(const std::vector<std::string>& args, const std::string& fault_env) {
  Options o;
  std::string fault_kind, fault_rank, fault_step, fault_arg;
  using Setter = std::function<tl::expected<void, std::string>(const std::string&, const std::string&)>;
  const std::map<std::string, Setter> flags = {
      {"--steps", [&](auto& f, auto& v) { return number(f, v, o.steps, 1L); }},
      {"--epochs", [&](auto& f, auto& v) { return number(f, v, o.epochs, 0L); }},
      {"--batch-size", [&](auto& f, auto& v) { return number(f, v, o.batch_size, 1L); }},
      {"--hidden", [&](auto& f, auto& v) { return number(f, v, o.hidden, 1L); }},
      {"--dataset-size", [&](auto& f, auto& v) { return number(f, v, o.dataset_size, 1L); }},
      {"--seed", [&](auto& f, auto& v) { return number(f, v, o.seed, 0UL); }},
      {"--lr", [&](auto& f, auto& v) { return number(f, v, o.lr, 0.0); }},
      {"--bucket-cap-mb", [&](auto& f, auto& v) { return number(f, v, o.bucket_cap_mb, 1e-6); }},
      {"--backend", [&](auto& f, auto& v) { return choice(f, v, o.backend, {"auto", "gloo", "nccl"}); }},
      {"--device", [&](auto& f, auto& v) { return choice(f, v, o.device, {"auto", "cpu", "cuda"}); }},
      {"--collective-timeout", [&](auto& f, auto& v) { return number(f, v, o.collective_timeout_s, 0.001); }},
      {"--rendezvous-timeout", [&](auto& f, auto& v) { return number(f, v, o.rendezvous_timeout_s, 0.001); }},
      {"--fingerprint-every", [&](auto& f, auto& v) { return number(f, v, o.fingerprint_every, 0L); }},
      {"--checkpoint-every", [&](auto& f, auto& v) { return number(f, v, o.checkpoint_every, 0L); }},
      {"--out-dir", [&](auto&, auto& v) { o.out_dir = v; return tl::expected<void, std::string>{}; }},
      {"--fault", [&](auto&, auto& v) { fault_kind = v; return tl::expected<void, std::string>{}; }},
      {"--fault-rank", [&](auto&, auto& v) { fault_rank = v; return tl::expected<void, std::string>{}; }},
      {"--fault-step", [&](auto&, auto& v) { fault_step = v; return tl::expected<void, std::string>{}; }},
      {"--fault-arg", [&](auto&, auto& v) { fault_arg = v; return tl::expected<void, std::string>{}; }},
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    if (flag == "-h" || flag == "--help") {
      o.help = true;
      continue;
    }
    if (flag == "--no-probe") {
      o.no_probe = true;
      continue;
    }
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (flags.count(flag)) {
      if (i + 1 >= args.size()) return tl::unexpected(flag + ": expected a value");
      value = args[++i];
    }
    auto it = flags.find(flag);
    if (it == flags.end()) return tl::unexpected("unknown option '" + flag + "' (see --help)");
    if (auto r = it->second(flag, value); !r) return tl::unexpected(r.error());
  }
  if (fault_kind.empty() && (!fault_rank.empty() || !fault_step.empty() || !fault_arg.empty())) {
    return tl::unexpected(std::string("--fault-rank/--fault-step/--fault-arg need --fault KIND"));
  }
  std::string spec = fault_kind;
  if (!spec.empty()) {
    if (!fault_rank.empty()) spec += ":rank=" + fault_rank;
    if (!fault_step.empty()) spec += ":step=" + fault_step;
    if (!fault_arg.empty()) spec += ":arg=" + fault_arg;
  } else {
    spec = fault_env;
  }
  if (!spec.empty()) {
    auto f = parseFaultSpec(spec);
    if (!f) return tl::unexpected((fault_kind.empty() ? "FAULTLINE_FAULT: " : "--fault: ") + f.error());
    o.fault = *f;
  }
  return o;
}

std::string autoDevice(bool nccl_compiled, long gpus, int local_world_size) {
  return nccl_compiled && gpus >= local_world_size && gpus > 0 ? "cuda" : "cpu";
}

}  // namespace faultline::trainer
