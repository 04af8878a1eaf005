# Third-party dependencies, all from Debian packages (scripts/install-deps.sh installs them).
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 QUIET CONFIG)
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)

option(FLASHSIM_WITH_BLAS "Matrix products through OpenBLAS (OFF: plain loops only, e.g. for ThreadSanitizer)" ON)

# OpenBLAS, the OpenMP build: called from inside our own OpenMP regions it runs single-threaded, so results do
# not depend on the thread count (the pthread build would start its own threads and serialize concurrent calls).
add_library(flashsim_openblas INTERFACE)
add_library(flashsim::openblas ALIAS flashsim_openblas)
if(FLASHSIM_WITH_BLAS)
find_library(OPENBLAS_LIBRARY NAMES openblas
  PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp
  NO_DEFAULT_PATH)
if(NOT OPENBLAS_LIBRARY)
  find_library(OPENBLAS_LIBRARY NAMES openblas REQUIRED)
endif()
find_path(OPENBLAS_INCLUDE_DIR NAMES cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/aarch64-linux-gnu/openblas-openmp
        /usr/include/openblas
  NO_DEFAULT_PATH)
if(NOT OPENBLAS_INCLUDE_DIR)
  find_path(OPENBLAS_INCLUDE_DIR NAMES cblas.h REQUIRED)
endif()
target_link_libraries(flashsim_openblas INTERFACE ${OPENBLAS_LIBRARY})
target_include_directories(flashsim_openblas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_compile_definitions(flashsim_openblas INTERFACE FLASHSIM_WITH_BLAS)
endif()

if(NOT TARGET CLI11::CLI11)
  find_path(CLI11_INCLUDE_DIR NAMES CLI/CLI.hpp REQUIRED)
  add_library(CLI11_headers INTERFACE)
  target_include_directories(CLI11_headers SYSTEM INTERFACE ${CLI11_INCLUDE_DIR})
  add_library(CLI11::CLI11 ALIAS CLI11_headers)
endif()
