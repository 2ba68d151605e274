#include "ctrain/cli/main.h"

int main(int argc, char** argv) { return ctrain::cli::Main(argc, argv); }
