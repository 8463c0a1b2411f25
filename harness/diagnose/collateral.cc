// Patterns of errors that are symptoms of another rank's failure.
#include "harness/diagnose/collateral.h"

#include "harness/diagnose/text.h"

namespace faultline::diagnose {

std::string collateralKindName(CollateralKind k) {
  switch (k) {
    case CollateralKind::kPeerClosed:
      return "a peer closed the connection";
    case CollateralKind::kCollectiveTimeout:
      return "a collective timed out waiting for a peer";
    case CollateralKind::kRemoteError:
      return "a remote rank failed";
    case CollateralKind::kStoreTimeout:
      return "the store/rendezvous timed out";
    case CollateralKind::kTeardownSignal:
      return "stopped by a teardown signal";
    case CollateralKind::kNetworkLost:
      return "the network to a peer was lost";
  }
  return "collateral";
}

std::optional<CollateralKind> classifyCollateral(std::string_view text) {
  struct Pattern {
    std::string_view needle;
    CollateralKind kind;
  };
  static constexpr Pattern kPatterns[] = {
      {"Connection closed by peer", CollateralKind::kPeerClosed},
      {"Connection reset by peer", CollateralKind::kPeerClosed},
      {"Broken pipe", CollateralKind::kPeerClosed},
      {"ECONNRESET", CollateralKind::kPeerClosed},
      // torch 2.x's store client when its peer's socket closed (c10::DistNetworkError).
      {"Failed to recv, got 0 bytes", CollateralKind::kPeerClosed},
      {"failed to recv, got 0 bytes", CollateralKind::kPeerClosed},
      {"Connection was likely closed", CollateralKind::kPeerClosed},
      {"No route to host", CollateralKind::kNetworkLost},
      {"Network is unreachable", CollateralKind::kNetworkLost},
      {"EHOSTUNREACH", CollateralKind::kNetworkLost},
      {"ENETUNREACH", CollateralKind::kNetworkLost},
      {"Timed out waiting", CollateralKind::kCollectiveTimeout},
      // Gloo's pair, closed by an earlier timeout on it (torch 2.13's Gloo).
      {"Application timeout caused pair closure", CollateralKind::kCollectiveTimeout},
      {"Watchdog caught collective operation timeout", CollateralKind::kCollectiveTimeout},
      {"Some NCCL operations have failed or timed out", CollateralKind::kCollectiveTimeout},
      {"Operation timed out", CollateralKind::kCollectiveTimeout},
      {"remote process exited or there was a network error", CollateralKind::kRemoteError},
      {"ncclRemoteError", CollateralKind::kRemoteError},
      {"NCCL communicator was aborted", CollateralKind::kRemoteError},
      {"NCCL error: remote process", CollateralKind::kRemoteError},
      {"RendezvousTimeoutError", CollateralKind::kStoreTimeout},
      {"RendezvousConnectionError", CollateralKind::kStoreTimeout},
      {"DistStoreError", CollateralKind::kStoreTimeout},
      {"Socket Timeout", CollateralKind::kStoreTimeout},
      {"waiting for clients", CollateralKind::kStoreTimeout},
      {"client socket has failed to connect", CollateralKind::kStoreTimeout},
      {"client socket has timed out", CollateralKind::kStoreTimeout},
      {"TCP client failed to connect", CollateralKind::kStoreTimeout},
      {"DistNetworkError", CollateralKind::kPeerClosed},
      {"Wait timeout", CollateralKind::kStoreTimeout},
      {"SignalException", CollateralKind::kTeardownSignal},
      {"got signal: 15", CollateralKind::kTeardownSignal},
      {"got signal: 2", CollateralKind::kTeardownSignal},
  };
  for (const auto& p : kPatterns) {
    if (contains(text, p.needle)) return p.kind;
  }
  if (startsWith(trim(text), "KeyboardInterrupt")) return CollateralKind::kTeardownSignal;
  // Gloo raises IoException only for its connections to peers. Its message
  // says which (matched above); a rank stopped as it printed it leaves only
  // "terminate called after throwing an instance of 'gloo::IoException'",
  // the type alone, and that is still a peer's failure, not its own.
  if (startsWith(trim(text), "gloo::IoException")) return CollateralKind::kRemoteError;
  return std::nullopt;
}

}  // namespace faultline::diagnose
