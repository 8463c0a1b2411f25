// A trainer extension built against a library version that is not loaded: it
// references trainer_ext::fusedAdamStep, which no library defines, so binding
// it fails exactly as a mismatched C++ extension does in the field.
namespace trainer_ext {
void fusedAdamStep(float* params, int n);  // defined nowhere, on purpose
}

extern "C" __attribute__((visibility("default"))) int faultline_ext_fused_step(float* params, int n) {
  trainer_ext::fusedAdamStep(params, n);
  return n;
}
