// writeFileAtomically when the system says no: EINTR is retried, ENOSPC,
// EPIPE, EMFILE and EIO are reported naming the call, the file and errno, and
// the file keeps what it held (report.json's provisional report, say).
#include "harness/model/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/faulty_sys.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing::FaultySys;
using Call = FaultySys::Call;

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fl_atomic_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "report.json").string();
    std::ofstream(path_) << "before";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string contents() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Writes "after" with `sys` in force.
  Result<void> writeWith(FaultySys& sys) {
    os::ScopedSys scoped(sys);
    return writeFileAtomically(path_, "after");
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(AtomicFile, EintrIsRetriedAndTheFileIsWhole) {
  FaultySys sys;
  sys.add({Call::kOpen, EINTR, 2});
  sys.add({Call::kWrite, EINTR, 3});
  sys.add({Call::kClose, EINTR});  // Linux released the descriptor: the data is written
  ASSERT_TRUE(writeWith(sys));
  EXPECT_EQ(contents(), "after");
  EXPECT_EQ(sys.failed(Call::kOpen), 2);
  EXPECT_EQ(sys.failed(Call::kWrite), 3);
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
}

TEST_F(AtomicFile, EachFailureIsReportedAndNothingIsLost) {
  struct Case {
    FaultySys::Rule rule;
    std::string says;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{Call::kWrite, ENOSPC}, "write failed: No space left on device", ".tmp"},
      {{Call::kWrite, EPIPE}, "write failed: Broken pipe", ".tmp"},
      {{Call::kOpen, EMFILE}, "open failed: Too many open files", ".tmp"},
      {{Call::kClose, EIO}, "close failed: Input/output error", ".tmp"},
      {{Call::kRename, ENOSPC}, "rename failed: No space left on device", "report.json"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.says);
    FaultySys sys;
    sys.add(c.rule);
    auto r = writeWith(sys);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kIo);
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().str();
    EXPECT_NE(r.error().context.find(c.names), std::string::npos) << r.error().str();
    EXPECT_EQ(contents(), "before");
    EXPECT_FALSE(fs::exists(path_ + ".tmp"));
  }
}

}  // namespace
}  // namespace faultline
