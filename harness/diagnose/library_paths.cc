// User code vs library code, by path components.
#include "harness/diagnose/library_paths.h"

#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

std::vector<std::string_view> components(std::string_view file) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= file.size()) {
    const size_t slash = file.find('/', start);
    const size_t end = slash == std::string_view::npos ? file.size() : slash;
    if (end > start) out.push_back(file.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

// "python3.11", "python3.9": an interpreter's versioned library directory
// (Debian's unversioned "python3" holds only dist-packages).
bool isVersionedPythonDir(std::string_view c) {
  if (!startsWith(c, "python")) return false;
  c.remove_prefix(6);
  const size_t dot = c.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == c.size()) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i != dot && (c[i] < '0' || c[i] > '9')) return false;
  }
  return true;
}

// Native sources of torch and of the runtimes under it, as native stack
// dumps and c10 messages name them ("./aten/src/ATen/...", "../third_party/gloo/...",
// "/__w/pytorch/pytorch/torch/csrc/distributed/c10d/socket.cpp", "../sysdeps/unix/...").
// Python files are never matched here: a user's vendored "third_party/x.py" is the user's.
bool isNativeLibrary(const std::vector<std::string_view>& comps, std::string_view file) {
  if (file.size() >= 3 && file.substr(file.size() - 3) == ".py") return false;
  if (startsWith(file, "/usr/include/")) return true;
  for (size_t i = 0; i < comps.size(); ++i) {
    const std::string_view c = comps[i];
    if (c == "aten" || c == "c10" || c == "gloo" || c == "third_party" || c == "sysdeps" || c == "nptl") return true;
    if (c == "torch" && i + 1 < comps.size() && comps[i + 1] == "csrc") return true;
    if (startsWith(c, "libc.") || startsWith(c, "libc-") || startsWith(c, "libstdc++")) return true;
  }
  return false;
}

bool underPrefix(std::string_view file, std::string_view prefix) {
  while (prefix.size() > 1 && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix.empty() || !startsWith(file, prefix)) return false;
  return file.size() == prefix.size() || file[prefix.size()] == '/' || prefix == "/";
}

}  // namespace

LibraryPaths::LibraryPaths(std::vector<std::string> extra_prefixes) : extra_(std::move(extra_prefixes)) {}

std::string_view installedPackage(std::string_view file) {
  const std::vector<std::string_view> comps = components(file);
  for (size_t i = comps.size(); i-- > 0;) {
    if ((comps[i] == "site-packages" || comps[i] == "dist-packages") && i + 1 < comps.size()) {
      std::string_view pkg = comps[i + 1];
      if (const size_t dot = pkg.find('.'); dot != std::string_view::npos) pkg = pkg.substr(0, dot);  // x.py, x.cpython-311.so
      return pkg;
    }
  }
  return {};
}

bool isTorchPackage(std::string_view package) {
  static constexpr std::string_view kTorch[] = {
      // torch's own distribution
      "torch", "functorch", "torchgen", "caffe2", "triton", "nvidia",
      // what `pip install torch` installs with it (Requires-Dist of torch 1.13 and 2.x)
      "filelock", "typing_extensions", "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "fsspec",
      "setuptools", "pkg_resources", "_distutils_hack",
      // the training frameworks faultline runs as stacks (their launchers and
      // loops call the user's code; the user's bug is never in them)
      "lightning", "pytorch_lightning", "lightning_fabric", "lightning_utilities", "torchmetrics",
      "accelerate", "deepspeed", "huggingface_hub", "safetensors", "ray"};
  for (std::string_view p : kTorch) {
    if (package == p) return true;
  }
  return false;
}

bool isStdlibPath(std::string_view file) {
  const std::vector<std::string_view> comps = components(file);
  for (size_t i = 0; i + 1 < comps.size(); ++i) {
    if ((comps[i] == "lib" || comps[i] == "lib64") && isVersionedPythonDir(comps[i + 1])) {
      // The interpreter's own tree, unless the file is in its site-packages.
      return !(i + 2 < comps.size() && (comps[i + 2] == "site-packages" || comps[i + 2] == "dist-packages"));
    }
  }
  return false;
}

bool LibraryPaths::isLibrary(std::string_view file) const {
  if (file.empty() || startsWith(file, "<")) return true;
  for (const std::string& p : extra_) {
    if (underPrefix(file, p)) return true;
  }
  const std::vector<std::string_view> comps = components(file);
  for (std::string_view c : comps) {
    // The Python shim's wrappers sit between a trainer and torch.distributed.
    if (c == "faultline_shim") return true;
  }
  const std::string_view pkg = installedPackage(file);
  if (!pkg.empty()) return isTorchPackage(pkg);
  return isStdlibPath(file) || isNativeLibrary(comps, file);
}

}  // namespace faultline::diagnose
