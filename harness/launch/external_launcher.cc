// The external stack: the scenario's own command is the launcher (any user
// launcher, a shell script, mpirun), observed black-box.
#include "harness/launch/observed_launcher.h"

namespace faultline::launch {
namespace {

class ExternalLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "external"; }
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (in.reference_trainer) {
      return tl::unexpected(Unsupported{"the external stack runs a command that launches itself; the reference trainer needs a launcher"});
    }
    return PlannedStart{in.trainer, 1};
  }
  StackOffer offer(const TorchInstall*, const std::string&) const override { return {"the scenario's own command", "", {}, ""}; }
};

}  // namespace

const Launcher& externalLauncher() {
  static const ExternalLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
