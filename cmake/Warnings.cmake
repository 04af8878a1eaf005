# flashsim_warnings: the warning set every project target compiles with.
add_library(flashsim_warnings INTERFACE)
target_compile_options(flashsim_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
# GCC 12 warns "'__Y' may be used uninitialized" inside its own avx512fintrin.h when Eigen's AVX-512 code is
# inlined with FLASHSIM_ARCH=native on an AVX-512 machine (GCC bug 105593, fixed in GCC 13).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(flashsim_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
endif()
if(FLASHSIM_WERROR)
  target_compile_options(flashsim_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(FLASHSIM_ARCH AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  target_compile_options(flashsim_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=${FLASHSIM_ARCH}>)
endif()
add_library(flashsim::warnings ALIAS flashsim_warnings)
