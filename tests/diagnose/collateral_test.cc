// The collateral classifier: symptoms of another rank's failure vs primary errors.
#include "harness/diagnose/collateral.h"

#include <gtest/gtest.h>

namespace faultline::diagnose {
namespace {

TEST(Collateral, PeerAndTimeoutErrors) {
  struct Case {
    const char* text;
    CollateralKind kind;
  };
  const Case cases[] = {
      // Real Gloo texts from the fixtures (torch 1.13).
      {"RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:56451",
       CollateralKind::kPeerClosed},
      {"RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 5000ms for recv operation to "
       "complete",
       CollateralKind::kCollectiveTimeout},
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:1234: Connection "
       "reset by peer",
       CollateralKind::kPeerClosed},
      // Rank 0 of a 2-rank Lightning job whose rank 1 timed out in the same
      // all-reduce first (onion-worker-segv on lightning@2.6, torch 2.13).
      {"RuntimeError: Application timeout caused pair closure", CollateralKind::kCollectiveTimeout},
      // Real texts of a 4-rank Gloo DDP job whose ranks 2-3 were SIGKILLed
      // (tests/fixtures/diagnose/builtin213_kill_two_ranks, torch 2.13).
      {"RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
       "peer [127.0.0.1]:22421. This is typically caused by a remote worker crashing. Check the logs of the remote "
       "worker before reporting an error. GLHF!",
       CollateralKind::kPeerClosed},
      {"RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
       "[127.0.0.1]:64722: Connection reset by peer. This is typically caused by a remote worker hanging or bugs in "
       "the application.",
       CollateralKind::kPeerClosed},
      {"RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] Timed out "
       "waiting 10000ms for send operation to complete",
       CollateralKind::kCollectiveTimeout},
      // torch 2.13's store client (libtorch_cpu's strings).
      {"torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. Did the remote "
       "server shutdown or crash?",
       CollateralKind::kPeerClosed},
      {"torch.distributed.DistNetworkError: TCP client failed to connect/validate to host 10.0.0.1:29500 - timed out "
       "(try=3, timeout=600000ms): ...",
       CollateralKind::kStoreTimeout},
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:211] connect [10.0.0.2]:4000: No route to host",
       CollateralKind::kNetworkLost},
      {"OSError: [Errno 101] Network is unreachable", CollateralKind::kNetworkLost},
      {"RuntimeError: NCCL communicator was aborted on rank 0.", CollateralKind::kRemoteError},
      {"torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, remote process exited or there "
       "was a network error",
       CollateralKind::kRemoteError},
      {"[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 1800000 "
       "milliseconds before timing out.",
       CollateralKind::kCollectiveTimeout},
      {"RuntimeError: Socket Timeout", CollateralKind::kStoreTimeout},
      {"torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
       CollateralKind::kStoreTimeout},
      {"RuntimeError: The client socket has failed to connect to [localhost]:29500", CollateralKind::kStoreTimeout},
      {"torch.distributed.elastic.multiprocessing.api.SignalException: Process 17 got signal: 15",
       CollateralKind::kTeardownSignal},
      {"KeyboardInterrupt", CollateralKind::kTeardownSignal},
      // A rank stopped as it printed terminate's line: the type, no what().
      {"gloo::IoException: ", CollateralKind::kRemoteError},
  };
  for (const Case& c : cases) {
    auto k = classifyCollateral(c.text);
    ASSERT_TRUE(k) << c.text;
    EXPECT_EQ(*k, c.kind) << c.text;
  }
}

TEST(Collateral, PrimaryErrorsAreNot) {
  for (const char* s : {"NameError: name 'c' is not defined", "RuntimeError: mat1 and mat2 shapes cannot be multiplied",
                        "ValueError: Expected input batch_size (32) to match target batch_size (16).",
                        "c10::Error: injected fault", ""}) {
    EXPECT_FALSE(classifyCollateral(s)) << s;
  }
}

}  // namespace
}  // namespace faultline::diagnose
