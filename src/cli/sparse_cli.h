/* Helpers shared by the sparse commands (reprocl spmv, reprocl cg) and their benchmarks. */
#ifndef REPROCL_SPARSE_CLI_H
#define REPROCL_SPARSE_CLI_H
#include "cli.h"

/* Loads the matrix of --matrix FILE (Matrix Market or Harwell-Boeing) or --gen SPEC (exactly one of them)
 * in dtype; label receives a short name for output. Returns 0 or an exit status (message printed). */
int cli_sparse_load(rcl_csr **A, char *label, size_t label_size, const char *matrix, const char *gen, rcl_dtype dt);
/* A vector of n values of dtype from a spec: "ones", "zeros", "random:SEED" (rcl_generate uniform) or a
 * file of raw little-endian values (exactly n of them). opt names the option in messages. */
int cli_sparse_vector(void **out, const char *spec, size_t n, rcl_dtype dt, const char *opt);
/* A float or double from text, correctly rounded to dtype (strtof for f32: no double rounding). */
int cli_sparse_scalar(unsigned char out[8], const char *opt, const char *text, rcl_dtype dt);
/* {"name","rows","cols","nnz","max_row","sha256"} */
json_t *cli_sparse_matrix_json(const rcl_csr *A, const char *label);
/* Bytes an SpMV y = alpha*A*x (+ beta*y) moves at least once: values, column indices, row pointers,
 * x and y (y twice when beta is not zero). */
double cli_sparse_spmv_bytes(const rcl_csr *A, int beta_nonzero);
/* Parses the launch tunables shared by the commands: --variant --local --lanes --block --slice
 * --long-row --window. Returns 1 if opt was one of them (rc set), 0 otherwise. */
int cli_sparse_tunable(rcl_spmv_options *o, int opt, const char *arg, int *rc);
#define CLI_SPARSE_TUNABLE_OPTIONS                                                                                     \
  {"variant", required_argument, 0, 1001}, {"local", required_argument, 0, 1002},                                      \
      {"lanes", required_argument, 0, 1003}, {"block", required_argument, 0, 1004},                                    \
      {"slice", required_argument, 0, 1005}, {"long-row", required_argument, 0, 1006}, {                               \
    "window", required_argument, 0, 1007                                                                               \
  }
#define CLI_SPARSE_TUNABLE_HELP                                                                                        \
  "  --variant auto|scalar|vector|adaptive|sell|task   the implementation (all give the same bits)\n"                  \
  "  --local N --lanes N --block N --slice N --long-row N --window N   launch tunables (0: default)\n"

#endif
