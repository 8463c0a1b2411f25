// c10d process groups behind the Comm interface. The compatibility layer is a
// template over the process-group class: ProcessGroupGloo and ProcessGroupNCCL
// expose the same collective signatures in LibTorch 1.13 and 2.x, whether they
// derive from ProcessGroup (1.13) or Backend (2.x); torch_compat.h has the rest.
#include "reference-trainer/comm.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if FAULTLINE_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "faultline/probe.h"
#include "reference-trainer/torch_compat.h"

namespace faultline::trainer {
namespace {

const char* dtypeName(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    default: return "other";
  }
}

template <class PG>
class C10dComm final : public Comm {
 public:
  C10dComm(c10::intrusive_ptr<PG> pg, int rank, int size, std::string backend)
      : pg_(std::move(pg)), rank_(rank), size_(size), backend_(std::move(backend)) {
    fl_probe_pg_init(backend_.c_str());
  }
  ~C10dComm() override {
    // Dropping the last reference joins the backend's worker threads.
    pg_.reset();
    fl_probe_pg_destroy(backend_.c_str());
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& backend() const override { return backend_; }
  int64_t nextSeq() const override { return seq_ + 1; }

  void allreduceSum(at::Tensor& t, Where where = Where::current()) override {
    run("allreduce", t, where, [&](std::vector<at::Tensor>& v) { return pg_->allreduce(v); });
  }
  void broadcast(at::Tensor& t, int root, Where where = Where::current()) override {
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    run("broadcast", t, where, [&](std::vector<at::Tensor>& v) { return pg_->broadcast(v, opts); });
  }
  void barrier(Where where = Where::current()) override {
    const int64_t seq = ++seq_;
    fl_probe_collective_begin_at("barrier", seq, 0, "none", site(where).c_str());
    pg_->barrier()->wait();
    fl_probe_collective_end("barrier", seq, 0, "none");
  }

 private:
  // "trainer.cc:328": the file as compiled, its directory left out.
  static std::string site(const Where& w) {
    const std::string_view f = w.file_name();
    const size_t slash = f.rfind('/');
    return std::string(slash == std::string_view::npos ? f : f.substr(slash + 1)) + ":" + std::to_string(w.line());
  }

  template <class Issue>
  void run(const char* op, at::Tensor& t, const Where& where, Issue issue) {
    const int64_t seq = ++seq_;
    fl_probe_collective_begin_at(op, seq, t.numel(), dtypeName(t), site(where).c_str());
    std::vector<at::Tensor> v{t};
    issue(v)->wait();
    fl_probe_collective_end(op, seq, t.numel(), dtypeName(t));
  }

  c10::intrusive_ptr<PG> pg_;
  int rank_;
  int size_;
  std::string backend_;
  int64_t seq_ = 0;
};

c10::intrusive_ptr<c10d::Store> joinStore(const RankEnv& env, const CommConfig& config) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(env.master_port + config.port_offset);
  // Under torchrun the agent hosts the store; otherwise rank 0 does, as env:// does.
  opts.isServer = !env.use_agent_store && env.rank == 0;
  opts.numWorkers = static_cast<size_t>(env.world_size);
  opts.waitWorkers = false;
  opts.timeout = config.rendezvous_timeout;
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
  if (env.use_agent_store) {
    store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restart_count), store);
  }
  // The default group's prefix, as torch.distributed uses for group 0.
  return c10::make_intrusive<c10d::PrefixStore>("default_pg", store);
}

}  // namespace

bool ncclCompiledIn() { return FAULTLINE_HAVE_NCCL != 0; }

std::unique_ptr<Comm> connect(const RankEnv& env, const CommConfig& config) {
  fl_probe_pg_init_begin(config.backend.c_str());
  auto store = joinStore(env, config);
  if (config.backend == "nccl") {
#if FAULTLINE_HAVE_NCCL
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = config.collective_timeout;
    auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, opts);
    return std::make_unique<C10dComm<c10d::ProcessGroupNCCL>>(pg, env.rank, env.world_size, "nccl");
#else
    throw std::runtime_error("backend nccl requested, but this LibTorch was built without CUDA/NCCL");
#endif
  }
  auto opts = c10d::ProcessGroupGloo::Options::create(config.collective_timeout);
  const bool loopback = env.master_addr == "127.0.0.1" || env.master_addr == "localhost";
  opts->devices.push_back(!env.gloo_ifname.empty() ? c10d::ProcessGroupGloo::createDeviceForInterface(env.gloo_ifname)
                          : loopback               ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                                   : c10d::ProcessGroupGloo::createDefaultDevice());
  opts->threads = 2;
  auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, opts);
  return std::make_unique<C10dComm<c10d::ProcessGroupGloo>>(pg, env.rank, env.world_size, "gloo");
}

}  // namespace faultline::trainer
