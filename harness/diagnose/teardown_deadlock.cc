#include "harness/diagnose/teardown_deadlock.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace faultline::diagnose {
namespace {

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// "c10d::ProcessGroupGloo::~ProcessGroupGloo()" -> "~ProcessGroupGloo".
std::string shortName(const std::string& function) {
  std::string f = function.substr(0, function.find('('));
  if (auto colons = f.rfind("::"); colons != std::string::npos) f = f.substr(colons + 2);
  return f;
}

// The named frames of `t` from the first `from` matches outward to the first
// `to` matches (with both; to the end without one), each name once, innermost
// first, joined by " <- ".
template <typename From, typename To>
std::string framesBetween(const StackThread& t, From from, To to) {
  std::string out, last;
  bool on = false;
  for (const PyFrame& f : t.frames) {
    on = on || from(f.function);
    if (!on || f.function.empty() || f.function.rfind("0x", 0) == 0) continue;
    const std::string name = shortName(f.function);
    if (name != last) out += (out.empty() ? "" : " <- ") + name;
    last = name;
    if (to(f.function)) break;
  }
  return out;
}

bool waitsForTheGil(const std::string& function) {
  static constexpr std::array<std::string_view, 5> kGil = {"take_gil", "PyEval_AcquireThread", "PyEval_RestoreThread",
                                                            "PyGILState_Ensure", "PyEval_AcquireLock"};
  return std::any_of(kGil.begin(), kGil.end(), [&](std::string_view g) { return has(function, g); });
}

}  // namespace

std::optional<TeardownDeadlock> glooTeardownDeadlock(const std::vector<StackThread>& native) {
  const StackThread* destroying = nullptr;
  const StackThread* waiting = nullptr;
  for (const StackThread& t : native) {
    const bool in_destructor = std::any_of(t.frames.begin(), t.frames.end(), [](const PyFrame& f) {
      return has(f.function, "ProcessGroupGloo::~ProcessGroupGloo");
    });
    if (in_destructor && !destroying) {
      destroying = &t;
      continue;
    }
    // A worker: in runLoop, its innermost frames down to a GIL wait.
    auto loop = std::find_if(t.frames.begin(), t.frames.end(),
                             [](const PyFrame& f) { return has(f.function, "ProcessGroupGloo::runLoop"); });
    if (loop == t.frames.end() || waiting) continue;
    if (std::any_of(t.frames.begin(), loop, [](const PyFrame& f) { return waitsForTheGil(f.function); })) waiting = &t;
  }
  if (!destroying || !waiting) return std::nullopt;
  TeardownDeadlock d;
  d.destroying = framesBetween(
      *destroying, [](const std::string& f) { return has(f, "~ProcessGroupGloo"); },
      [](const std::string& f) { return !has(f, "~ProcessGroupGloo"); });
  d.waiting = framesBetween(*waiting, waitsForTheGil, [](const std::string& f) { return has(f, "ProcessGroupGloo::runLoop"); });
  return d;
}

}  // namespace faultline::diagnose
