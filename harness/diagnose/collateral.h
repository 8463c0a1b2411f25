// The collateral classifier: does an error message say "someone else failed"?
// Peer disconnects, recv/send timeouts, NCCL remote errors, watchdog timeouts,
// TCPStore/rendezvous timeouts, and the signals a launcher sends in teardown.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace faultline::diagnose {

enum class CollateralKind {
  kPeerClosed,       // "Connection closed by peer", "Connection reset by peer", "Broken pipe"
  kCollectiveTimeout,  // "Timed out waiting ... for recv", NCCL watchdog
  kRemoteError,      // NCCL "remote process exited", ncclRemoteError, communicator aborted
  kStoreTimeout,     // TCPStore / rendezvous timeouts and refused connections
  kTeardownSignal,   // SIGTERM/SIGINT sent by the launcher: KeyboardInterrupt, SignalException
  kNetworkLost,      // the way to a peer is gone: "No route to host", "Network is unreachable" (a node cut off)
};
std::string collateralKindName(CollateralKind k);

// The kind of collateral error the text reports, or nullopt for a primary error.
std::optional<CollateralKind> classifyCollateral(std::string_view text);

}  // namespace faultline::diagnose
