// libFuzzer target: the torchelastic error-file parser (harness/diagnose/error_file.*),
// which reads whatever a rank left at TORCHELASTIC_ERROR_FILE.
// Invariants: nothing throws; evidence from it says it came from error.json and
// is valid UTF-8 (the parser repairs its input first), and describing or
// refining it is safe.
#include <cstdint>
#include <string_view>

#include "harness/diagnose/error_file.h"
#include "tests/fuzz/evidence_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto e = faultline::diagnose::parseErrorFile(text);
  if (!e) return 0;
  faultline::fuzz::check(e->origin == "error.json", "error-file evidence does not name error.json", e->origin);
  if (e->t_ns) faultline::fuzz::check(*e->t_ns > 0, "error-file time is not positive");
  faultline::fuzz::checkEvidence(*e, /*utf8=*/true);
  return 0;
}
