# Compile-time options of the sanitizer presets (CI builds them on 2 cores, with clang and no compiler cache):
#
# FLASHSIM_PCH: each C++ target precompiles the third-party headers most of its files include (nlohmann/json, fmt,
# the standard containers; GoogleTest for the tests), so that they are parsed once a target instead of once a
# file (about a tenth of the ASan build's compile time). build/default leaves it off: its objects serve the Python
# package's build through ccache, which a precompiled header would get in the way of.
#
# FLASHSIM_FRONT_END_O0: tests/, cli/, app/ and fuzz/ compile at -O0: under ASan a file there compiles in about
# half the time at -O0 as at -O1 (GoogleTest's macros, CLI11, JSON), while the run time of the tests is spent in
# the libraries they call (reference/, tiling_sim/, golden/, core/), which keep the build type's level.
#
# FLASHSIM_TESTS_QUICK_BUILD: both, for tests/ and cli/ alone (CI's build/default and its Python package's build,
# which ships the command line and takes cli/'s objects from build/default's through ccache: .ci/run passes it the
# option and lets ccache cache precompiled-header compiles). Their compile is about half of build/default's C++
# time; their run time, as above, is the libraries'.
# FLASHSIM_UNITY: every C++ target compiles its sources in batches of 8 (CMake's unity build): the headers a batch
# shares are parsed once. The sanitizer presets' build took 40% less time (155 -> about 90 s here, 2 cores). With
# FLASHSIM_TESTS_QUICK_BUILD the test programs alone get it (cli/'s objects must stay those of the Python package's
# build, for ccache). A file whose file-local names clash with another's is left out (unity_excluded below).
option(FLASHSIM_UNITY "Unity build of every C++ target (batches of 8 sources)" OFF)
option(FLASHSIM_PCH "Precompile the heavy third-party headers per target" OFF)
option(FLASHSIM_FRONT_END_O0 "Compile tests/, cli/, app/ and fuzz/ at -O0" OFF)
option(FLASHSIM_TESTS_QUICK_BUILD "Compile tests/ and cli/ at -O0 with precompiled headers" OFF)

# flashsim_build_speed(): after every folder is added, applies the options above to each C++ target of the tree.
function(flashsim_build_speed)
  if(NOT FLASHSIM_PCH AND NOT FLASHSIM_FRONT_END_O0 AND NOT FLASHSIM_TESTS_QUICK_BUILD AND NOT FLASHSIM_UNITY)
    return()
  endif()
  # Files that define a file-local name another file of their target defines too (kSpec, kNegInf, the fa2 and fa3
  # backward models' launch helpers): compiled alone in a unity build.
  set(unity_excluded tiling_sim/src/kernels/fa3_backward.cpp tests/reference/block_sparse_test.cpp
      tests/golden/fp8_case_test.cpp tests/golden/mla_case_test.cpp tests/golden/norm_case_test.cpp
      tests/golden/sinks_dropout_case_test.cpp)
  set(common <algorithm> <map> <memory> <string> <vector> <nlohmann/json.hpp> <fmt/format.h>)
  set(test_pch_donor)
  set(dirs ${CMAKE_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${dir})
    foreach(f IN LISTS unity_excluded)  # set in the folder whose CMakeLists.txt defines the file's target
      if(f MATCHES "^${rel}/")
        set_source_files_properties(${CMAKE_SOURCE_DIR}/${f} DIRECTORY ${dir} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
      endif()
    endforeach()
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      get_target_property(sources ${target} SOURCES)
      if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$" OR
         NOT sources MATCHES "\\.cpp(;|$)")
        continue()
      endif()
      set(quick_tests FALSE)
      if(FLASHSIM_TESTS_QUICK_BUILD AND rel MATCHES "^(tests|cli)$")
        set(quick_tests TRUE)
      endif()
      if(FLASHSIM_PCH OR quick_tests)
        if(quick_tests AND rel STREQUAL "tests" AND type STREQUAL "EXECUTABLE" AND test_pch_donor)
          # The test programs compile alike (GCC, -O0, -fPIE, the same definitions but gpu_tests' one, which no
          # header here reads): one precompiled header serves them all (each took 17-20 s of CI's compile jobs).
          target_precompile_headers(${target} REUSE_FROM ${test_pch_donor})
        elseif(rel STREQUAL "tests")
          target_precompile_headers(${target} PRIVATE ${common} <gtest/gtest.h>)
          if(quick_tests AND type STREQUAL "EXECUTABLE")
            set(test_pch_donor ${target})
          endif()
        else()
          target_precompile_headers(${target} PRIVATE ${common})
        endif()
      endif()
      if(FLASHSIM_UNITY OR (quick_tests AND rel STREQUAL "tests"))
        set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
      endif()
      if((FLASHSIM_FRONT_END_O0 AND rel MATCHES "^(tests|cli|app|fuzz)$") OR quick_tests)
        target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
      endif()
    endforeach()
  endwhile()
endfunction()
