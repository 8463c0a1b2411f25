// User code vs library code (docs/DIAGNOSIS.md section 8), on the paths real
// frames have: Debian's torch 1.13, a venv's torch 2.13 over a pyenv
// interpreter, a user's own installed package, native sources.
#include "harness/diagnose/library_paths.h"

#include <gtest/gtest.h>

#include "harness/diagnose/python_traceback.h"

namespace faultline::diagnose {
namespace {

TEST(LibraryPaths, TorchAndWhatItInstallsAreLibrary) {
  const LibraryPaths lib;
  for (const char* p : {"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py",
                        "/opt/faultline/torch-2.13/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
                        "/opt/venv/lib/python3.11/site-packages/functorch/__init__.py",
                        "/opt/venv/lib/python3.11/site-packages/sympy/core/expr.py",
                        "/opt/venv/lib/python3.11/site-packages/typing_extensions.py",
                        "/opt/venv/lib/python3.11/site-packages/triton/runtime/jit.py"}) {
    EXPECT_TRUE(lib.isLibrary(p)) << p;
  }
  EXPECT_EQ(installedPackage("/x/lib/python3.11/site-packages/torch/nn/x.py"), "torch");
  EXPECT_EQ(installedPackage("/x/site-packages/typing_extensions.py"), "typing_extensions");
  EXPECT_EQ(installedPackage("/home/u/train.py"), "");
}

TEST(LibraryPaths, TheStandardLibraryWhereverTheInterpreterLives) {
  const LibraryPaths lib;
  for (const char* p : {"/usr/lib/python3.11/threading.py", "/root/.pyenv/versions/3.11.7/lib/python3.11/queue.py",
                        "/usr/local/lib64/python3.9/multiprocessing/process.py",
                        "/usr/lib/python3.11/lib-dynload/x.py"}) {
    EXPECT_TRUE(isStdlibPath(p)) << p;
    EXPECT_TRUE(lib.isLibrary(p)) << p;
  }
  // Debian's unversioned python3 holds dist-packages only; a site-packages is no stdlib.
  EXPECT_FALSE(isStdlibPath("/usr/lib/python3/dist-packages/mytrainer/loop.py"));
  EXPECT_FALSE(isStdlibPath("/usr/lib/python3.11/site-packages/shardkit/reader.py"));
}

TEST(LibraryPaths, AUsersOwnInstalledPackageIsTheUsers) {
  const LibraryPaths lib;
  for (const char* p : {"/home/u/.local/lib/python3.11/site-packages/shardkit/reader.py",
                        "/usr/lib/python3/dist-packages/mytrainer/loop.py",
                        "/opt/venv/lib/python3.11/site-packages/numpy/core/fromnumeric.py",
                        "/work/proj/userenv/lib/python3/site-packages/shardkit/reader.py", "/work/proj/train.py",
                        // a user's vendored Python is the user's, whatever the folder is called
                        "/work/proj/third_party/aten/model.py"}) {
    EXPECT_FALSE(lib.isLibrary(p)) << p;
  }
}

TEST(LibraryPaths, NativeSourcesShimAndFramesWithoutAFile) {
  const LibraryPaths lib;
  for (const char* p : {"./aten/src/ATen/native/LinearAlgebra.cpp", "../third_party/gloo/gloo/transport/tcp/pair.cc",
                        "/__w/pytorch/pytorch/torch/csrc/distributed/c10d/socket.cpp", "../sysdeps/unix/sysv/linux/x.c",
                        "/usr/include/c++/12/bits/std_function.h", "/work/x/harness/probe/python/faultline_shim/_dist.py",
                        "<frozen importlib._bootstrap>", "<string>", ""}) {
    EXPECT_TRUE(lib.isLibrary(p)) << p;
  }
  EXPECT_FALSE(lib.isLibrary("/work/app/src/trainer.cc"));
  EXPECT_FALSE(lib.isLibrary("/work/app/torch_utils/x.py"));
}

TEST(LibraryPaths, ExtraPrefixesMatchAtAPathBoundary) {
  const LibraryPaths lib({"/opt/vendor", "/srv/site-packages/shardkit/"});
  EXPECT_TRUE(lib.isLibrary("/opt/vendor/pkg/x.py"));
  EXPECT_FALSE(lib.isLibrary("/opt/vendorlib/x.py"));
  EXPECT_TRUE(lib.isLibrary("/srv/site-packages/shardkit/reader.py"));
  EXPECT_FALSE(LibraryPaths().isLibrary("/srv/site-packages/shardkit/reader.py"));
}

TEST(LibraryPaths, UserFrameSkipsLibraryFramesByThePolicyGiven) {
  const std::vector<StackThread> threads = parseStackDump(
      "Current thread 0x00007f (most recent call first):\n"
      "  File \"/srv/site-packages/shardkit/reader.py\", line 6 in check_header\n"
      "  File \"/work/app/train.py\", line 40 in main\n");
  ASSERT_NE(userFrame(threads), nullptr);
  EXPECT_EQ(userFrame(threads)->line, 6);
  const LibraryPaths lib({"/srv/site-packages/shardkit"});
  ASSERT_NE(userFrame(threads, lib), nullptr);
  EXPECT_EQ(userFrame(threads, lib)->line, 40);
}

}  // namespace
}  // namespace faultline::diagnose
