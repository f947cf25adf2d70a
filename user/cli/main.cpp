#include "cli/app.hpp"

int main(int argc, char **argv) { return shmbpf::run_cli(argc, argv); }
