// The training loop, with PyTorch DDP's semantics built from c10d collectives.
#include "reference-trainer/trainer.h"

#include <torch/torch.h>

#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "faultline/probe.h"
#include "reference-trainer/bucketing.h"
#include "reference-trainer/comm.h"
#include "reference-trainer/faults.h"
#include "reference-trainer/file_writes.h"
#include "reference-trainer/sampler.h"

namespace faultline::trainer {
namespace {

constexpr int64_t kFeatures = 32;
constexpr int64_t kClasses = 4;

// A deterministic synthetic classification task: labels come from a fixed
// random linear teacher, so the loss really decreases.
struct Dataset {
  torch::Tensor x;
  torch::Tensor y;
};

Dataset makeDataset(int64_t size, uint64_t seed) {
  torch::manual_seed(seed ^ 0x5eedda7aULL);
  auto x = torch::randn({size, kFeatures});
  auto teacher = torch::randn({kFeatures, kClasses});
  return {x, torch::matmul(x, teacher).argmax(1)};
}

torch::nn::Sequential makeModel(int64_t hidden) {
  return torch::nn::Sequential(torch::nn::Linear(kFeatures, hidden), torch::nn::ReLU(),
                               torch::nn::Linear(hidden, hidden), torch::nn::ReLU(),
                               torch::nn::Linear(hidden, kClasses));
}

struct Batch {
  long step = 0;
  long epoch = 0;
  torch::Tensor x;
  torch::Tensor y;
};

// A background data thread, as a DataLoader worker: it walks the sampler's
// epochs and prepares batches ahead of the training loop.
class DataLoader {
 public:
  DataLoader(const Dataset& data, DistributedSampler sampler, long batch_size, long steps, long epochs,
             const FaultSpec& fault, int rank)
      : data_(data), sampler_(std::move(sampler)), batch_size_(batch_size), steps_(steps), epochs_(epochs),
        fault_(fault), rank_(rank) {
    thread_ = std::thread([this] { produce(); });
  }
  ~DataLoader() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  std::optional<Batch> next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (queue_.empty()) return std::nullopt;
    Batch b = std::move(queue_.front());
    queue_.pop_front();
    cv_.notify_all();
    return b;
  }

 private:
  void produce() {
    long step = 0;
    for (long epoch = 0; step < steps_ && (epochs_ == 0 || epoch < epochs_); ++epoch) {
      const auto idx = sampler_.indices(epoch);
      fl_probe_samples(epoch, static_cast<int64_t>(idx.size()), fl_probe_hash_indices(idx.data(), idx.size()),
                       idx.front(), idx.back(), idx.size() <= 4096 ? idx.data() : nullptr, idx.size());
      for (size_t start = 0; start < idx.size() && step < steps_; start += static_cast<size_t>(batch_size_)) {
        ++step;
        if (fault_.kind == FaultKind::kExceptionInThread && fault_.firesAt(rank_, step)) {
          announceFault(fault_, step, rank_);
          throw std::runtime_error("data loader worker: failed to decode sample batch for step " +
                                   std::to_string(step) + " (injected fault)");
        }
        const size_t end = std::min(idx.size(), start + static_cast<size_t>(batch_size_));
        auto sel = torch::tensor(std::vector<int64_t>(idx.begin() + start, idx.begin() + end), torch::kLong);
        Batch b{step, epoch, data_.x.index_select(0, sel), data_.y.index_select(0, sel)};
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return queue_.size() < 2 || stop_; });
        if (stop_) return;
        queue_.push_back(std::move(b));
        cv_.notify_all();
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

  const Dataset& data_;
  DistributedSampler sampler_;
  long batch_size_, steps_, epochs_;
  FaultSpec fault_;
  int rank_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  bool done_ = false, stop_ = false;
  std::thread thread_;
};

uint64_t fingerprint(const std::vector<torch::Tensor>& params) {
  uint64_t h = 0;
  for (const auto& p : params) {
    auto c = p.detach().to(torch::kCPU).contiguous();
    h = fl_probe_hash_bytes(c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size(), h);
  }
  return h;
}

torch::Tensor flatten(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> flat;
  for (const auto& t : ts) flat.push_back(t.reshape({-1}));
  return torch::cat(flat);
}

void unflattenInto(const torch::Tensor& flat, const std::vector<torch::Tensor>& ts) {
  int64_t offset = 0;
  for (const auto& t : ts) {
    t.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
    offset += t.numel();
  }
}

class Trainer {
 public:
  Trainer(const Options& o, const RankEnv& env) : o_(o), env_(env), fault_(o.fault) {}

  int run() {
    // One intra-op thread per rank unless the launcher says otherwise, as
    // torchrun does: N ranks on a few cores must not oversubscribe them.
    if (!std::getenv("OMP_NUM_THREADS")) torch::set_num_threads(1);
    const std::string device_kind = resolveDevice();
    const std::string backend = resolveBackend(device_kind);
    device_ = torch::Device(device_kind == "cuda" ? torch::kCUDA : torch::kCPU,
                            device_kind == "cuda" ? static_cast<int8_t>(env_.local_rank) : -1);
    fl_probe_start(env_.world_size, backend.c_str(), device_kind.c_str());
    out_dir_ = outDir();
    makeDirectories(out_dir_);

    CommConfig cc;
    cc.backend = backend;
    cc.collective_timeout = std::chrono::milliseconds(static_cast<int64_t>(o_.collective_timeout_s * 1000));
    cc.rendezvous_timeout = std::chrono::milliseconds(static_cast<int64_t>(o_.rendezvous_timeout_s * 1000));
    if (fault_.kind == FaultKind::kRendezvousFailure && fault_.targets(env_.rank)) {
      announceFault(fault_, 0, env_.rank);
      if (fault_.arg != "wrong_port") {
        // It began the rendezvous, as a rank whose store is out of reach
        // does, and gave up inside it.
        fl_probe_pg_init_begin(backend.c_str());
        std::fprintf(stderr, "rank %d: cannot reach the rendezvous: giving up before joining the store\n", env_.rank);
        return 1;
      }
      cc.port_offset = 1;
    }
    auto comm = connect(env_, cc);
    comm_ = comm.get();

    const Dataset data = makeDataset(o_.dataset_size, o_.seed);
    const bool seed_fault = fault_.kind == FaultKind::kSeedMismatch;
    // The seed-mismatch bug: each rank seeds its own way and nobody broadcasts.
    torch::manual_seed(seed_fault && fault_.targets(env_.rank) ? o_.seed + 1000 + env_.rank : o_.seed);
    if (seed_fault && fault_.targets(env_.rank)) announceFault(fault_, 0, env_.rank);
    auto model = makeModel(o_.hidden);
    model->to(device_);
    params_ = model->parameters();
    if (!seed_fault) broadcastParameters();
    fl_probe_fingerprint("params", 0, fingerprint(params_));

    std::vector<size_t> bytes;
    for (const auto& p : params_) bytes.push_back(static_cast<size_t>(p.numel()) * p.element_size());
    buckets_ = assignBuckets(bytes, static_cast<size_t>(o_.bucket_cap_mb * 1024 * 1024));
    torch::optim::SGD optim(params_, torch::optim::SGDOptions(o_.lr));

    const bool unsharded = fault_.kind == FaultKind::kUnshardedData;
    if (unsharded) announceFault(fault_, 0, env_.rank);
    DistributedSampler sampler(o_.dataset_size, unsharded ? 1 : env_.world_size, unsharded ? 0 : env_.rank, o_.seed);
    DataLoader loader(data, std::move(sampler), o_.batch_size, o_.steps, o_.epochs, fault_, env_.rank);

    long last_step = 0;
    while (auto batch = loader.next()) {
      last_step = batch->step;
      trainStep(*batch, model, optim);
    }
    if (env_.rank == 0 || fault_.kind == FaultKind::kConcurrentWrites) saveCheckpoint(last_step);
    // With the concurrent_writes bug every rank already appended to train.log.
    if (env_.rank == 0 && fault_.kind != FaultKind::kConcurrentWrites) writeLog();
    return 0;  // `comm` goes out of scope here: the process group is destroyed
  }

 private:
  std::string resolveDevice() const {
    if (o_.device != "auto") return o_.device;
    const long gpus = ncclCompiledIn() ? static_cast<long>(torch::cuda::device_count()) : 0;
    return autoDevice(ncclCompiledIn(), gpus, env_.local_world_size);
  }
  std::string resolveBackend(const std::string& device) const {
    if (o_.backend != "auto") return o_.backend;
    return device == "cuda" ? "nccl" : "gloo";
  }
  std::string outDir() const {
    if (!o_.out_dir.empty()) return o_.out_dir;
    if (const char* run = std::getenv("FAULTLINE_RUN_DIR"); run && *run) return std::string(run) + "/trainer";
    return "faultline-trainer-out";
  }

  // DDP's constructor: every replica starts from rank 0's parameters.
  void broadcastParameters() {
    torch::NoGradGuard guard;
    auto flat = flatten(params_);
    comm_->broadcast(flat, 0);
    unflattenInto(flat, params_);
  }

  void trainStep(const Batch& b, torch::nn::Sequential& model, torch::optim::SGD& optim) {
    fl_probe_step_begin(b.step, b.epoch);
    const bool mine = fault_.firesAt(env_.rank, b.step);
    if (fault_.kind == FaultKind::kStraggler && fault_.targets(env_.rank)) {
      if (b.step == fault_.step) announceFault(fault_, b.step, env_.rank);
      if (b.step >= fault_.step) sleepMs(fault_.arg.empty() ? 200 : std::stol(fault_.arg));
    }
    if (mine) injectProcessFault(b.step);

    auto x = b.x.to(device_), y = b.y.to(device_);
    optim.zero_grad();
    auto logits = model->forward(x);
    if (mine && fault_.kind == FaultKind::kCppException) {
      announceFault(fault_, b.step, env_.rank);
      // A real shape bug: LibTorch throws c10::Error with its source location.
      logits = torch::mm(logits, torch::ones({kClasses + 1, kClasses}, logits.options()));
    }
    auto loss = torch::nn::functional::cross_entropy(logits, y);
    loss.backward();
    syncGradients(b.step);
    optim.step();

    const double local_loss = loss.item<double>();
    const double correct = logits.argmax(1).eq(y).sum().item<double>();
    const double count = static_cast<double>(y.size(0));
    reportMetrics(b.step, local_loss, correct, count);
    if (o_.fingerprint_every > 0 && b.step % o_.fingerprint_every == 0) {
      fl_probe_fingerprint("params", b.step, fingerprint(params_));
    }
    if (fault_.kind == FaultKind::kConcurrentWrites) {
      if (b.step == fault_.step) announceFault(fault_, b.step, env_.rank);
      appendSharedLog(b.step, local_loss);
    }
    if (o_.checkpoint_every > 0 && b.step % o_.checkpoint_every == 0 &&
        (env_.rank == 0 || fault_.kind == FaultKind::kConcurrentWrites)) {
      saveCheckpoint(b.step);
    }
    fl_probe_step_end(b.step, b.epoch);
  }

  // Faults that end or stall the process before the step's compute.
  void injectProcessFault(long step) {
    switch (fault_.kind) {
      case FaultKind::kUndefinedSymbol:
        announceFault(fault_, step, env_.rank);
        callBrokenExtension(fault_.arg == "now");
        break;
      case FaultKind::kSegfault:
        announceFault(fault_, step, env_.rank);
        crashWithSegfault();
      case FaultKind::kAbort:
        announceFault(fault_, step, env_.rank);
        crashWithAbort();
      case FaultKind::kSigkill:
        announceFault(fault_, step, env_.rank);
        killSelf(SIGKILL);
      case FaultKind::kExit:
        announceFault(fault_, step, env_.rank);
        exitWithoutCleanup(fault_.arg.empty() ? 1 : std::stoi(fault_.arg));
      case FaultKind::kOom: {
        announceFault(fault_, step, env_.rank);
        limitAddressSpace(fault_.arg.empty() ? 256 : std::stoul(fault_.arg));
        std::vector<torch::Tensor> hog;
        for (;;) hog.push_back(torch::ones({16 << 20}));  // 64 MiB at a time, touched
      }
      default:
        break;
    }
  }

  // The bucketed gradient all-reduce of DDP's Reducer, and its failure modes.
  void syncGradients(long step) {
    torch::NoGradGuard guard;
    const bool mine = fault_.firesAt(env_.rank, step);
    if (mine && fault_.kind == FaultKind::kHungCollective) {
      announceFault(fault_, step, env_.rank);
      if (fault_.arg != "skip") sleepForever();
      return;  // "skip": this rank never enters the step's all-reduce and goes on
    }
    for (const auto& bucket : buckets_) {
      std::vector<torch::Tensor> grads;
      for (size_t i : bucket.params) grads.push_back(params_[i].grad());
      auto flat = flatten(grads);
      if (mine && fault_.kind == FaultKind::kCollectiveMismatch) {
        announceFault(fault_, step, env_.rank);
        if (fault_.arg == "op") {
          comm_->broadcast(flat, 0);
        } else {
          auto bigger = torch::cat({flat, torch::zeros({1}, flat.options())});
          comm_->allreduceSum(bigger);
        }
        continue;
      }
      comm_->allreduceSum(flat);
      flat.div_(env_.world_size);
      unflattenInto(flat, grads);
    }
  }

  // Loss and accuracy are all-reduced before rank 0 reports them; the
  // unsynced_metrics bug skips that and reports rank 0's local value.
  void reportMetrics(long step, double loss, double correct, double count) {
    fl_probe_metric("loss", loss, "local", step);
    fl_probe_metric("accuracy", correct / count, "local", step);
    double g_loss = loss, g_acc = correct / count;
    if (fault_.kind == FaultKind::kUnsyncedMetrics) {
      if (step == fault_.step && env_.rank == 0) announceFault(fault_, step, env_.rank);
    } else {
      auto t = torch::tensor({loss * count, correct, count}, torch::kDouble).to(device_);
      comm_->allreduceSum(t);
      auto v = t.to(torch::kCPU);
      g_loss = v[0].item<double>() / v[2].item<double>();
      g_acc = v[1].item<double>() / v[2].item<double>();
    }
    if (env_.rank != 0) return;
    fl_probe_metric("loss", g_loss, "global", step);
    fl_probe_metric("accuracy", g_acc, "global", step);
    char line[160];
    std::snprintf(line, sizeof line, "step %ld loss %.6f accuracy %.4f", step, g_loss, g_acc);
    std::printf("%s\n", line);
    std::fflush(stdout);
    log_ += line;
    log_ += '\n';
  }

  void saveCheckpoint(long step) {
    std::ostringstream bytes;
    std::vector<torch::Tensor> cpu;
    for (const auto& p : params_) cpu.push_back(p.detach().to(torch::kCPU));
    torch::save(cpu, bytes);
    const std::string path = out_dir_ + "/checkpoint.pt";
    if (fault_.kind == FaultKind::kConcurrentWrites) {
      writeFileInPlace(path, bytes.str(), false);
    } else {
      writeFileAtomically(path, bytes.str());
    }
    (void)step;
  }

  void writeLog() { writeFileAtomically(out_dir_ + "/train.log", log_); }

  // Every rank appends to rank 0's log, as code without a rank check does.
  void appendSharedLog(long step, double loss) {
    char line[160];
    std::snprintf(line, sizeof line, "rank %d step %ld loss %.6f\n", env_.rank, step, loss);
    writeFileInPlace(out_dir_ + "/train.log", line, true);
  }

  const Options& o_;
  const RankEnv& env_;
  FaultSpec fault_;
  torch::Device device_{torch::kCPU};
  std::string out_dir_;
  Comm* comm_ = nullptr;
  std::vector<torch::Tensor> params_;
  std::vector<Bucket> buckets_;
  std::string log_;
};

}  // namespace

int runTraining(const Options& options, const RankEnv& env) { return Trainer(options, env).run(); }

}  // namespace faultline::trainer
