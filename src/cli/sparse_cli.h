/* Helpers shared by the sparse commands (reprocl spmv, reprocl cg) and their benchmarks. */
#ifndef REPROCL_SPARSE_CLI_H
#define REPROCL_SPARSE_CLI_H
#include "cli.h"
#include "cli_run_common.h"

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
/* The launch tunables of the SpMV kernels, shared by spmv and cg: a fragment of an option table (with its
 * heading `title`) that parses into the rcl_spmv_options *o. Every setting gives the same bits. */
#define CLI_SPARSE_TUNABLES(title, o)                                                                                  \
  CLI_SECTION(title),                                                                                                  \
      CLI_VAL("variant", &(o)->variant, cli_opt_spmv_variant, "auto|scalar|vector|adaptive|sell|task",                 \
              "the implementation (all give the same bits)"),                                                          \
      CLI_VAL("local", &(o)->local_size, cli_opt_size, "N",                                                            \
              "work-group size of the vector, adaptive, sell and long-row kernels (0: default)"),                      \
      CLI_VAL("lanes", &(o)->lanes, cli_opt_size, "N", "vector: work-items per row (0: default)"),                     \
      CLI_VAL("block", &(o)->block_nnz, cli_opt_size, "N", "adaptive: products staged per work-group (0: default)"),   \
      CLI_VAL("slice", &(o)->slice, cli_opt_size, "N", "sell: rows per slice (0: default)"),                           \
      CLI_VAL("long-row", &(o)->long_row, cli_opt_size, "N",                                                           \
              "rows with more entries take the long-row path (0: default)"),                                           \
      CLI_VAL("window", &(o)->window, cli_opt_size, "N", "long-row path: entries per launch or segment (0: default)")
/* --tol: a double >= 0. */
int cli_opt_tol(void *target, const char *opt, const char *value);
/* The solver's options of cg (reprocl cg, reprocl-mpi cg): a fragment of an option table that parses into the
 * rcl_cg_options *co. */
#define CLI_CG_SOLVER_OPTS(co)                                                                                         \
  CLI_VAL("tol", &(co)->tol, cli_opt_tol, "T", "stop when ||r|| <= T ||b|| (default: 1e-8)"),                          \
      CLI_VAL("maxit", &(co)->max_iterations, cli_opt_size, "K", "at most K iterations (default: 1000)"),              \
      CLI_FLAG("jacobi", &(co)->jacobi, "precondition with the diagonal (Jacobi)"),                                    \
      CLI_VAL("dots", &(co)->dot_mode, cli_opt_reduce_mode, "ordered|exact",                                           \
              "the dot products' and norms' contract (default: ordered)"),                                             \
      CLI_VAL("contract", &(co)->spmv.contract, cli_opt_spmv_contract, "ordered|exact",                                \
              "the SpMV's contract (default: ordered)")
/* Whether a CG status is one of the solver's ends (0, RCL_ERR_NO_CONVERGENCE, RCL_ERR_BREAKDOWN): a result to
 * report (and to free), not an error. */
int cli_cg_ended(int st);
/* reprocl cg's word for a status: converged, no-convergence, breakdown, or error. */
const char *cli_cg_status_word(int st);
/* The options of the untimed one-iteration solve that comes before a timed one (reprocl cg, reprocl-mpi cg): the
 * kernels are built (on NVIDIA's driver also JIT-compiled: seconds) and tuned before the clock starts. */
rcl_cg_options cli_cg_warm_options(const rcl_cg_options *co);
/* After that solve, of status st and result r: r freed where there is one, the error (if any) dropped — it is
 * the timed solve's to report. */
void cli_cg_warm_done(int st, rcl_cg_result *r);

#endif
