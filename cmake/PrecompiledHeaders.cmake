# FLASHSIM_PCH: each C++ target precompiles the third-party headers most of its files include (nlohmann/json,
# fmt, the standard containers; GoogleTest for the tests), so that they are parsed once a target instead of once
# a file. The sanitizer presets turn it on: their builds compile every file with clang and no compiler cache,
# and these headers were about a third of a file's compile time there. build/default leaves it off: its objects
# serve the Python package's build through ccache, which a precompiled header would get in the way of.
option(FLASHSIM_PCH "Precompile the heavy third-party headers per target" OFF)

# flashsim_precompile_headers(): after every folder is added, gives each C++ target of the source tree its
# precompiled header.
function(flashsim_precompile_headers)
  if(NOT FLASHSIM_PCH)
    return()
  endif()
  set(common <algorithm> <map> <memory> <string> <vector> <nlohmann/json.hpp> <fmt/format.h>)
  set(dirs ${CMAKE_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      get_target_property(sources ${target} SOURCES)
      if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$" OR
         NOT sources MATCHES "\\.cpp(;|$)")
        continue()
      endif()
      if(dir MATCHES "/tests$")
        target_precompile_headers(${target} PRIVATE ${common} <gtest/gtest.h>)
      else()
        target_precompile_headers(${target} PRIVATE ${common})
      endif()
    endforeach()
  endwhile()
endfunction()
