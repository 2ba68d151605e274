// ctrain.Trainer's C++ side: filled in once the job layer (src/ctrain/job) lands.
#include <nanobind/nanobind.h>

namespace ctrain::python {
void BindTrainer(nanobind::module_& m) {}
}  // namespace ctrain::python
