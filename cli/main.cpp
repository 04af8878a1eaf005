// flashsim: the command line (cli/run.cpp).
#include "commands.h"

int main(int argc, char** argv) {
  return flashsim::cli::run(argc, argv);
}
