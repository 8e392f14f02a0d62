/* libFuzzer target: the LAMMPS data file reader (atom_style atomic; md_io.c), as rcl_md_read runs it. The
 * input is the file. Seeds: LAMMPS's own example data files and reprocl's. Inputs that start with a lone
 * integer are read as XYZ (rcl_md_read's detection), which fuzz_md_xyz covers. */
#include "fuzz_md_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_md_read("fuzz.data", data, size);
  return 0;
}
