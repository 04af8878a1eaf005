# flashsim_warnings: the warning set every project target compiles with.
add_library(flashsim_warnings INTERFACE)
target_compile_options(flashsim_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
if(FLASHSIM_WERROR)
  target_compile_options(flashsim_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(FLASHSIM_NATIVE)
  target_compile_options(flashsim_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
add_library(flashsim::warnings ALIAS flashsim_warnings)
