// events.jsonl reader: every contract field, and tolerance of bad lines.
#include "harness/diagnose/events.h"

#include <gtest/gtest.h>

#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

TEST(Events, ParsesContractFields) {
  auto e = parseEventLine(
      R"({"t": 1796047784007298357, "rank": 1, "pid": 7469, "ev": "collective_begin", "op": "allreduce", "seq": 7, "numel": 1, "dtype": "float32"})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->t, 1796047784007298357);
  EXPECT_EQ(e->rank, 1);
  EXPECT_EQ(e->pid, 7469);
  EXPECT_EQ(e->ev, "collective_begin");
  EXPECT_EQ(e->op, "allreduce");
  EXPECT_EQ(e->seq, 7);
  EXPECT_EQ(e->numel, 1);
  EXPECT_EQ(e->dtype, "float32");
}

TEST(Events, InstrumentOutcome) {
  auto ok = parseEventLine(
      R"({"t":1,"rank":0,"pid":2,"ev":"instrument","patch":"dist.all_reduce","applied":true,"torch":"2.13.0"})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->patch, "dist.all_reduce");
  EXPECT_EQ(ok->applied, true);
  EXPECT_EQ(ok->torch, "2.13.0");
  EXPECT_TRUE(ok->error.empty());
  auto bad = parseEventLine(
      R"({"t":1,"rank":0,"pid":2,"ev":"instrument","patch":"optim.step","applied":false,"error":"AttributeError: \"x\""})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->applied, false);
  EXPECT_EQ(bad->error, "AttributeError: \"x\"");
  EXPECT_FALSE(parseEventLine(R"({"t":1,"ev":"instrument","applied":tru})"));
  auto other = parseEventLine(R"({"t":1,"ev":"start","done":true})");
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->applied);  // only "applied" is read
}

TEST(Events, MetricSamplesAndErrorStack) {
  auto m = parseEventLine(R"({"t":1,"rank":0,"pid":2,"ev":"metric","name":"loss","value":-1.5e-3,"scope":"global","step":4})");
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->value);
  EXPECT_DOUBLE_EQ(*m->value, -1.5e-3);
  EXPECT_EQ(m->scope, "global");
  auto s = parseEventLine(R"({"t":1,"rank":0,"pid":2,"ev":"samples","epoch":0,"count":3,"hash":"00ab","first":1,"last":9,"indices":[1,5,9]})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->indices, (std::vector<int64_t>{1, 5, 9}));
  auto err = parseEventLine(
      R"({"t":1,"rank":1,"pid":2,"ev":"error","kind":"signal","type":"SIGSEGV","message":"segfault \"here\"\n\u00e9","file":null,"line":0,"stack":["#0 f at a.cc:1","#1 g"],"extra":{"nested":[1,{"a":2}]}})");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->type, "SIGSEGV");
  EXPECT_EQ(err->message, "segfault \"here\"\n\xC3\xA9");
  EXPECT_EQ(err->stack.size(), 2u);
  EXPECT_TRUE(err->file.empty());
}

TEST(Events, InjectedSyscallFault) {
  // As libfaultline_preload.so writes it: step is null (a call belongs to no step).
  auto f = parseEventLine(
      R"({"t":5,"rank":1,"pid":9,"ev":"fault","kind":"syscall","step":null,"call":"write","errno":"ENOSPC","rule":"write:ENOSPC:rank=1","path":"/ckpt/a.pt","nth":1})");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, "syscall");
  EXPECT_EQ(f->step, -1);
  EXPECT_EQ(f->call, "write");
  EXPECT_EQ(f->err, "ENOSPC");
  EXPECT_EQ(f->rule, "write:ENOSPC:rank=1");
  EXPECT_EQ(f->path, "/ckpt/a.pt");
  auto c = parseEventLine(
      R"({"t":5,"rank":0,"pid":9,"ev":"fault","kind":"syscall","step":null,"call":"connect","errno":"ECONNREFUSED","rule":"connect:ECONNREFUSED","addr":"127.0.0.1:29500","nth":2})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->addr, "127.0.0.1:29500");
}

TEST(Events, RejectsMalformedLines) {
  EXPECT_FALSE(parseEventLine(""));
  EXPECT_FALSE(parseEventLine("not json"));
  EXPECT_FALSE(parseEventLine(R"({"t": 1, "rank": 0})"));        // no ev
  EXPECT_FALSE(parseEventLine(R"({"t": 1, "ev": "start"} junk)"));  // trailing garbage
  EXPECT_FALSE(parseEventLine(R"({"t": 1, "ev": "sta)"));          // truncated
  EXPECT_FALSE(parseEventLine(R"(["ev", "start"])"));
  EXPECT_FALSE(parseEventLine(R"({"t": 1, "ev": "x", "seq": })"));
}

TEST(Events, ToleratesBadLinesInAFile) {
  const std::string text =
      "{\"t\":1,\"rank\":0,\"pid\":9,\"ev\":\"start\",\"world_size\":2}\n"
      "garbage line\n"
      "\n"
      "{\"t\":2,\"rank\":0,\"pid\":9,\"ev\":\"file_open\",\"path\":\"/tmp/caf\xFF.log\",\"mode\":\"w\"}\r\n"
      "{\"t\":3,\"rank\":0,\"pid\":9,\"ev\":\"step_begin\",\"step\":0,\"epoch\":0}\n"
      "{\"t\":4,\"rank\":0,\"pid\":9,\"ev\":\"step_e";  // torn last line of a killed writer
  EventLog log = parseEvents(text);
  ASSERT_EQ(log.events.size(), 3u);
  EXPECT_EQ(log.malformed, 2u);
  EXPECT_EQ(log.events[0].world_size, 2);
  EXPECT_EQ(log.events[1].path, "/tmp/caf\xEF\xBF\xBD.log");  // repaired to valid UTF-8
  EXPECT_EQ(log.events[2].step, 0);
}

TEST(Events, RealCapturedFile) {
  EventLog log = readEvents(testing::fixture("torchrun_name_error/ranks/1/events.jsonl"));
  EXPECT_EQ(log.malformed, 0u);
  ASSERT_FALSE(log.events.empty());
  EXPECT_EQ(log.events.front().ev, "start");
  EXPECT_TRUE(readEvents("/nonexistent/events.jsonl").events.empty());
}

// Found by tests/fuzz/events_fuzz: a float beyond int64 in an integer field
// was converted as is (undefined behaviour); it saturates now.
TEST(Events, NumbersBeyondInt64Saturate) {
  auto e = parseEventLine(R"({"ev":"x","t":1.79605e+44,"step":-1e300,"seq":1e999,"value":1e300})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->t, INT64_MAX);
  EXPECT_EQ(e->step, INT64_MIN);
  EXPECT_EQ(e->seq, 0);  // infinite: no integer
  ASSERT_TRUE(e->value);
  EXPECT_EQ(*e->value, 1e300);
}

}  // namespace
}  // namespace faultline::diagnose

#include "harness/diagnose/run_input.h"

namespace faultline::diagnose {
namespace {

TEST(ErrorEvent, ProbeSignalWithNativeBacktrace) {
  // As the probe's crash handler writes it (captured from the reference trainer).
  auto e = parseEventLine(
      R"json({"t":5,"rank":1,"pid":15777,"ev":"error","kind":"signal","type":"SIGSEGV","message":"segmentation fault at address 0x000000000000","file":null,"line":null,"stack":["#0 0x7fbc8f25a050 (/lib/x86_64-linux-gnu/libc.so.6+0x0003c050)","#1 0x55868a0ef71d faultline::trainer::crashWithSegfault()+0x0002 (/work/main/build/reference-trainer/faultline-trainer+0x0001471d)","#4 0x55868a0efbda main+0x00ea (/x/faultline-trainer+0x00014bda)"]})json");
  ASSERT_TRUE(e);
  Evidence ev = evidenceFromEvent(*e);
  EXPECT_EQ(ev.kind, Kind::kSignal);
  EXPECT_EQ(ev.signal, "SIGSEGV");
  EXPECT_EQ(ev.function, "faultline::trainer::crashWithSegfault()");
  EXPECT_EQ(ev.t_ns, 5);
  EXPECT_FALSE(ev.location);
}

// The shim records a failing SystemExit only where something caught it
// before the process could exit with it (Ray Train's worker): the status the
// trainer asked for, and where, is the evidence.
TEST(ErrorEvent, ACaughtSystemExitIsTheExitTheTrainerAskedFor) {
  auto e = parseEventLine(
      R"json({"t":7,"rank":1,"pid":11481,"ev":"error","kind":"python_exception","type":"SystemExit","message":"3","file":"/app/plain_exit.py","line":14,"stack":[],"traceback":"Traceback (most recent call last):\n  File \"/app/plain_exit.py\", line 14, in main\n    sys.exit(3)\nSystemExit: 3\n"})json");
  ASSERT_TRUE(e);
  Evidence ev = evidenceFromEvent(*e);
  EXPECT_EQ(ev.kind, Kind::kExitCode);
  EXPECT_TRUE(ev.exit_caught);
  EXPECT_EQ(ev.exit_code, 3);
  ASSERT_TRUE(ev.location);
  EXPECT_EQ(ev.location->line, 14);
  e->message = "node config missing";  // sys.exit("message") exits with 1
  EXPECT_EQ(evidenceFromEvent(*e).exit_code, 1);
}

TEST(ErrorEvent, C10MessageKeepsFirstLineAndLocation) {
  Event e;
  e.ev = "error";
  e.kind = "cpp_exception";
  e.type = "c10::Error";
  e.message =
      "mat1 and mat2 shapes cannot be multiplied (32x4 and 5x4)\n"
      "Exception raised from meta at ./aten/src/ATen/native/LinearAlgebra.cpp:73 (most recent call first):\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9e (0x7f in /lib/libc10.so)\n";
  Evidence ev = evidenceFromEvent(e);
  EXPECT_EQ(ev.kind, Kind::kCppException);
  EXPECT_EQ(ev.message, "mat1 and mat2 shapes cannot be multiplied (32x4 and 5x4)");
  ASSERT_TRUE(ev.location);
  EXPECT_EQ(ev.location->line, 73);
}

TEST(ErrorEvent, KindsFromTheText) {
  Event e;
  e.ev = "error";
  e.kind = "cpp_exception";
  e.type = "std::runtime_error";
  e.message = "cannot load trainer extension: /x/libext.so: undefined symbol: _ZN11trainer_ext13fusedAdamStepEPfi";
  Evidence ev = evidenceFromEvent(e);
  EXPECT_EQ(ev.kind, Kind::kUndefinedSymbol);
  EXPECT_EQ(ev.symbol, "trainer_ext::fusedAdamStep(float*, int)");
  e.type = "c10::Error";
  e.message = "[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory";
  EXPECT_EQ(evidenceFromEvent(e).kind, Kind::kOom);
  e.type = "gloo::IoException";
  e.message = "[./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:7824";
  Evidence c = evidenceFromEvent(e);
  EXPECT_TRUE(c.collateral);
  EXPECT_EQ(c.kind, Kind::kCppException);
}

}  // namespace
}  // namespace faultline::diagnose
