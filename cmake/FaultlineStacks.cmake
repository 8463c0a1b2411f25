# The torch series installed on this machine (MAJOR.MINOR), found as faultline
# finds them at run time (harness/launch/torch_installs.cc): the interpreters
# in FAULTLINE_PYTHONS, else /usr/bin/python3 and FAULTLINE_OPT/torch-*/bin/python
# (default /opt/faultline). torch is located, never imported. Used to register
# one conformance test per stack; configure again after ci/deps adds a venv.
function(faultline_torch_series out)
  if(DEFINED ENV{FAULTLINE_PYTHONS} AND NOT "$ENV{FAULTLINE_PYTHONS}" STREQUAL "")
    string(REPLACE ":" ";" candidates "$ENV{FAULTLINE_PYTHONS}")
  else()
    set(opt /opt/faultline)
    if(DEFINED ENV{FAULTLINE_OPT} AND NOT "$ENV{FAULTLINE_OPT}" STREQUAL "")
      set(opt "$ENV{FAULTLINE_OPT}")
    endif()
    file(GLOB venvs "${opt}/torch-*/bin/python")
    set(candidates /usr/bin/python3 ${venvs})
  endif()
  set(probe [=[
import importlib.util, os, re
s = importlib.util.find_spec("torch")
d = os.path.dirname(s.origin)
print(re.search(r"__version__\s*=\s*['\"](\d+\.\d+)", open(os.path.join(d, "version.py")).read()).group(1))
]=])
  set(series "")
  foreach(python IN LISTS candidates)
    if(NOT EXISTS "${python}")
      continue()
    endif()
    execute_process(COMMAND "${python}" -c "${probe}" OUTPUT_VARIABLE v RESULT_VARIABLE rc ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0 AND NOT v STREQUAL "")
      list(APPEND series "${v}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES series)
  set(${out} "${series}" PARENT_SCOPE)
endfunction()

# The framework stacks installed beside a torch (lightning@2.6, ...): each
# framework in $FAULTLINE_OPT/frameworks-*/ (ci/deps), at its MAJOR.MINOR.
# The list is the launcher table's `framework` column (harness/model/
# stack_name.cc; Layering.FrameworkStacksCmakeNamesEveryFramework checks it).
function(faultline_framework_stacks out)
  set(opt /opt/faultline)
  if(DEFINED ENV{FAULTLINE_OPT} AND NOT "$ENV{FAULTLINE_OPT}" STREQUAL "")
    set(opt "$ENV{FAULTLINE_OPT}")
  endif()
  file(GLOB venvs "${opt}/frameworks-*/bin/python")
  set(probe [=[
import importlib.metadata as md
for name in ("lightning", "accelerate", "deepspeed", "ray"):
    try:
        v = md.version(name).split(".")
        print("%s@%s.%s" % (name, v[0], v[1]))
    except Exception:
        pass
]=])
  set(stacks "")
  foreach(python IN LISTS venvs)
    execute_process(COMMAND "${python}" -c "${probe}" OUTPUT_VARIABLE v RESULT_VARIABLE rc ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0 AND NOT v STREQUAL "")
      string(REPLACE "\n" ";" found "${v}")
      list(APPEND stacks ${found})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES stacks)
  set(${out} "${stacks}" PARENT_SCOPE)
endfunction()
