// Built only by the test layering_undeclared_include_fails_to_build, which
// expects this to fail: fl::judge declares fl::model and fl::scenario, not
// fl::supervise, so the supervisor's header is not on its include path. Its
// own header comes first and must be found (the regex names the second).
#include "harness/judge/judge.h"
#include "harness/supervise/supervisor.h"
