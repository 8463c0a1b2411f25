// Whose code a frame is: a library's (torch and the packages it installs,
// Python's standard library, faultline's shim, the C/C++ runtimes and torch's
// native sources) or the user's (everything else, a user's own package
// installed into site-packages too). A scenario's `[diagnose] library_paths`
// and `--library-path` add path prefixes. docs/DIAGNOSIS.md section 8.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace faultline::diagnose {

class LibraryPaths {
 public:
  LibraryPaths() = default;  // the built-in policy alone
  // Absolute path prefixes, matched at a '/' boundary ("/opt/vendor" holds
  // "/opt/vendor/x.py", not "/opt/vendorlib/x.py").
  explicit LibraryPaths(std::vector<std::string> extra_prefixes);

  // True for library code, and for frames with no file to point at
  // (empty, "<frozen ...>", "<string>").
  bool isLibrary(std::string_view file) const;
  const std::vector<std::string>& extra() const { return extra_; }

 private:
  std::vector<std::string> extra_;
};

// The top-level package a path is in when it lies under a site-packages or
// dist-packages directory ("torch" for ".../site-packages/torch/nn/x.py",
// "typing_extensions" for ".../site-packages/typing_extensions.py"); empty
// otherwise.
std::string_view installedPackage(std::string_view file);
// True for the top-level packages counted as library code: torch's own
// (torch, functorch, torchgen, triton, nvidia, caffe2) and the ones
// `pip install torch` installs with it (its Requires-Dist).
bool isTorchPackage(std::string_view package);
// True for a file of the interpreter's standard library: under
// ".../lib/pythonX.Y/" (or lib64), and not in its site-packages.
bool isStdlibPath(std::string_view file);

}  // namespace faultline::diagnose
