// flashsim._native: the C++ libraries for the Python package (python/flashsim wraps it). Bad input raises
// ValueError with the command line's message ("field: what is wrong"); a memory limit, MemoryError.
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "flashsim/error.h"

NB_MODULE(_native, m) {
  m.doc() = "flashsim's C++ core: exact attention, golden cases and verification, the tiling simulator";
  nanobind::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const flashsim::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const flashsim::MemoryLimitError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const nlohmann::json::exception& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  // Cases a script keeps in a global (a Suite) are still alive when the interpreter checks for leaks at exit;
  // nanobind would list each as "leaked", which is not a reference-counting error of ours.
  nanobind::set_leak_warnings(false);
  m.attr("version") = "0.1.0";
  flashsim::py::bind_reference(m);
  flashsim::py::bind_golden(m);
  flashsim::py::bind_sim(m);
}
