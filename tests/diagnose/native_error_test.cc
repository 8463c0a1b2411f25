// Native evidence: std::terminate / c10::Error, loader errors, OOM, fatal signals.
#include "harness/diagnose/native_error.h"

#include <gtest/gtest.h>

#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

TEST(Demangle, CppAndPlainNames) {
  EXPECT_EQ(demangle("_ZN9faultline7missingEv"), "faultline::missing()");
  EXPECT_EQ(demangle("_ZN3foo3barEi"), "foo::bar(int)");
  EXPECT_EQ(demangle("plain_c_symbol"), "plain_c_symbol");
  EXPECT_EQ(demangle("_Zgarbage"), "_Zgarbage");  // not a valid mangled name: unchanged
}

TEST(Terminate, C10ErrorWithLocation) {
  const std::string text =
      "terminate called after throwing an instance of 'c10::Error'\n"
      "  what():  Expected a.sizes() == b.sizes() to be true, but got false.\n"
      "Exception raised from check at /src/reference-trainer/trainer.cc:212 (most recent call first):\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in /usr/lib/libc10.so)\n";
  auto e = parseTerminate(splitLines(text));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, Kind::kCppException);
  EXPECT_EQ(e->type, "c10::Error");
  EXPECT_EQ(e->message, "Expected a.sizes() == b.sizes() to be true, but got false.");
  ASSERT_TRUE(e->location);
  EXPECT_EQ(e->location->file, "/src/reference-trainer/trainer.cc");
  EXPECT_EQ(e->location->line, 212);
}

TEST(Terminate, StdExceptionWithoutLocationAndBadAlloc) {
  auto e = parseTerminate(splitLines(
      "terminate called after throwing an instance of 'std::runtime_error'\n  what():  injected fault\n"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "std::runtime_error");
  EXPECT_EQ(e->message, "injected fault");
  EXPECT_FALSE(e->location);
  auto oom = parseTerminate(splitLines("terminate called after throwing an instance of 'std::bad_alloc'\n"
                                       "  what():  std::bad_alloc\n"));
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->kind, Kind::kOom);
  auto none = parseTerminate(splitLines("terminate called without an active exception\n"));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->type, "std::terminate");
}

TEST(Terminate, TruncatedBeforeWhat) {
  auto e = parseTerminate(splitLines("terminate called after throwing an instance of 'c10::Er"));
  ASSERT_TRUE(e);  // still a C++ exception, type as far as it goes
  EXPECT_EQ(e->kind, Kind::kCppException);
  EXPECT_TRUE(e->message.empty());
  EXPECT_TRUE(e->cut_off);
  // Cut at the head's quote: not even the type came out.
  auto head = parseTerminate(splitLines("terminate called after throwing an instance of '"));
  ASSERT_TRUE(head);
  EXPECT_EQ(head->type, "std::terminate");
  EXPECT_TRUE(head->cut_off);
  EXPECT_NE(head->message, "");
  // A whole report is not cut off.
  EXPECT_FALSE(parseTerminate(splitLines("terminate called after throwing an instance of 'std::runtime_error'\n"
                                         "  what():  injected fault\n"))
                   ->cut_off);
}

TEST(C10Location, Parses) {
  auto l = parseC10Location("Exception raised from allreduce at ../torch/csrc/distributed/c10d/ProcessGroupGloo.cpp:2795 (most recent call first):");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->line, 2795);
  EXPECT_FALSE(parseC10Location("Exception raised from nowhere"));
}

// Caught by tests/fuzz/log_classifier_fuzz (UBSan): a line number longer than an int
// overflowed while it was read (undefined behaviour); it is no location now.
TEST(C10Location, LineBeyondIntIsNoLocation) {
  EXPECT_FALSE(parseC10Location("Exception raised from f at /x.cpp:99999999999 (most recent call first):"));
  auto l = parseC10Location("Exception raised from f at /x.cpp:999999999 (most recent call first):");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->line, 999999999);
}

TEST(UndefinedSymbol, LoaderMessage) {
  auto e = parseUndefinedSymbol(
      "/build/faultline-trainer: symbol lookup error: /build/libfaultline_trainer_ext.so: undefined symbol: "
      "_ZN9faultline7missingEv");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, Kind::kUndefinedSymbol);
  EXPECT_EQ(e->symbol, "faultline::missing()");
  EXPECT_EQ(e->type, "symbol lookup error");
  EXPECT_EQ(e->exit_code, 127);
  EXPECT_EQ(e->message, "/build/libfaultline_trainer_ext.so: undefined symbol: faultline::missing()");
}

TEST(UndefinedSymbol, ImportErrorAndDlopen) {
  auto e = parseUndefinedSymbol("ImportError: /venv/lib/ext.so: undefined symbol: _ZN3c104impl3fooEv");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "ImportError");
  EXPECT_EQ(e->symbol, "c10::impl::foo()");
  auto d = parseUndefinedSymbol("dlopen failed: /x/plugin.so: undefined symbol: missing_c_fn");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->symbol, "missing_c_fn");
  EXPECT_FALSE(parseUndefinedSymbol("all symbols defined"));
  EXPECT_FALSE(parseUndefinedSymbol("undefined symbol: "));
}

TEST(UndefinedSymbol, InPythonTraceback) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 3, in <module>\n"
      "    import myext\n"
      "ImportError: /app/myext.so: undefined symbol: _ZN3foo3barEi\n";
  RankLog log = scanRankLog(text);
  ASSERT_EQ(log.errors.size(), 1u);
  EXPECT_EQ(log.errors[0].kind, Kind::kUndefinedSymbol);
  EXPECT_EQ(log.errors[0].symbol, "foo::bar(int)");
  EXPECT_EQ(log.errors[0].type, "ImportError");
  EXPECT_EQ(log.errors[0].location->line, 3);
}

TEST(Oom, Texts) {
  for (const char* s : {"RuntimeError: [enforce fail at alloc_cpu.cpp:75] . DefaultCPUAllocator: can't allocate memory: "
                        "you tried to allocate 8000000000 bytes. Error code 12 (Cannot allocate memory)",
                        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                        "MemoryError", "  what():  std::bad_alloc"}) {
    auto e = parseOom(s);
    ASSERT_TRUE(e) << s;
    EXPECT_EQ(e->kind, Kind::kOom);
  }
  EXPECT_FALSE(parseOom("memory usage 3 GiB"));
}

TEST(FatalSignal, Texts) {
  auto e = parseFatalSignal("Fatal Python error: Segmentation fault");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->signal, "SIGSEGV");
  EXPECT_EQ(parseFatalSignal("Segmentation fault (core dumped)")->signal, "SIGSEGV");
  EXPECT_EQ(parseFatalSignal("Aborted (core dumped)")->signal, "SIGABRT");
  EXPECT_FALSE(parseFatalSignal("we handle Segmentation fault gracefully in this module, see docs"));
}

TEST(RankLog, AbortAfterTerminateNamesTheException) {
  const std::string text =
      "terminate called after throwing an instance of 'std::runtime_error'\n"
      "  what():  boom\n"
      "Fatal Python error: Aborted\n"
      "\n"
      "Current thread 0x00007f (most recent call first):\n"
      "  File \"/app/train.py\", line 9 in step\n";
  RankLog log = scanRankLog(text);
  ASSERT_EQ(log.errors.size(), 2u);
  const Evidence* t = terminalError(log.errors);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind, Kind::kCppException);
  EXPECT_EQ(t->message, "boom");
}

// A Python rank that raised, then aborted during interpreter shutdown: the
// interposer's crash handler reports the SIGABRT after the traceback.
TEST(RankLog, AbortAfterAPythonExceptionNamesTheException) {
  RankLog log = scanRankLog(
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 41, in save\n"
      "    with open(tmp, \"wb\") as f:\n"
      "OSError: [Errno 28] No space left on device\n");
  ASSERT_EQ(log.errors.size(), 1u);
  Evidence abort;
  abort.kind = Kind::kSignal;
  abort.type = abort.signal = "SIGABRT";
  abort.message = "aborted";
  abort.origin = "events.jsonl";
  log.errors.push_back(abort);
  const Evidence* t = terminalError(log.errors);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind, Kind::kPythonException);
  EXPECT_EQ(t->type, "OSError");
  // Any other signal is the process's own death, not the exception's.
  log.errors.back().type = log.errors.back().signal = "SIGSEGV";
  EXPECT_EQ(terminalError(log.errors)->kind, Kind::kSignal);
}

TEST(RankLog, SegfaultLocationFromFaulthandler) {
  const std::string text =
      "Fatal Python error: Segmentation fault\n"
      "\n"
      "Current thread 0x00007f (most recent call first):\n"
      "  File \"/usr/lib/python3/dist-packages/torch/nn/functional.py\", line 1 in linear\n"
      "  File \"/app/train.py\", line 33 in step\n";
  RankLog log = scanRankLog(text);
  ASSERT_EQ(log.errors.size(), 1u);
  EXPECT_EQ(log.errors[0].kind, Kind::kSignal);
  ASSERT_TRUE(log.errors[0].location);
  EXPECT_EQ(log.errors[0].location->file, "/app/train.py");
  EXPECT_EQ(log.errors[0].location->line, 33);
}

}  // namespace
}  // namespace faultline::diagnose
