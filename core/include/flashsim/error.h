#pragma once
// Errors flashsim throws for bad input. The command line prints what() on one line and exits with code 2.
#include <stdexcept>
#include <string>

namespace flashsim {

// A problem, tile configuration or input that cannot be computed; `field` names what is wrong.
class InputError : public std::invalid_argument {
 public:
  InputError(std::string field, const std::string& message)
      : std::invalid_argument(field + ": " + message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// An operation whose buffers would exceed the memory limit; thrown before anything is allocated.
class MemoryLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace flashsim
