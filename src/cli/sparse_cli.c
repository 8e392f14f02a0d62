/* Helpers of the sparse commands: matrix and vector inputs, scalars, JSON descriptions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sparse_cli.h"

int cli_sparse_load(rcl_csr **A, char *label, size_t label_size, const char *matrix, const char *gen, rcl_dtype dt) {
  *A = NULL;
  if (!!matrix == !!gen) return cli_error("give exactly one of --matrix FILE and --gen SPEC");
  if (matrix) {
    if (rcl_matrix_read(A, matrix, dt)) {
      cli_fail("--matrix"); /* malformed or unreadable input: the usage/input exit status */
      return 2;
    }
    const char *slash = strrchr(matrix, '/');
    snprintf(label, label_size, "%s", slash ? slash + 1 : matrix);
  } else {
    if (rcl_csr_generate(A, dt, gen)) {
      cli_fail("--gen");
      return 2;
    }
    snprintf(label, label_size, "%s", gen);
  }
  return 0;
}

int cli_sparse_vector(void **out, const char *spec, size_t n, rcl_dtype dt, const char *opt) {
  size_t es = rcl_dtype_size(dt);
  *out = NULL;
  if (n > SIZE_MAX / es - 1) return cli_error("%s: %zu values are too many", opt, n);
  unsigned char *v = calloc(n ? n : 1, es);
  if (!v) return cli_error("%s: cannot allocate %zu bytes", opt, n * es);
  if (!strcmp(spec, "zeros")) {
    /* calloc'd: +0 */
  } else if (!strcmp(spec, "ones")) {
    for (size_t i = 0; i < n; i++) {
      if (dt == RCL_F32)
        ((float *)v)[i] = 1.0f;
      else
        ((double *)v)[i] = 1.0;
    }
  } else if (!strncmp(spec, "random:", 7)) {
    uint64_t seed;
    int rc = cli_parse_u64(&seed, opt, spec + 7);
    if (rc) {
      free(v);
      return rc;
    }
    rcl_generate(v, dt, n, RCL_GEN_UNIFORM, seed);
  } else {
    FILE *f = fopen(spec, "rb");
    if (!f) {
      free(v);
      return cli_error("%s %s: cannot open: %s (expected ones, zeros, random:SEED or a file of raw %s values)", opt,
                       spec, strerror(errno), rcl_dtype_name(dt));
    }
    size_t got = fread(v, 1, n * es, f);
    int extra = fgetc(f) != EOF;
    long size = (fseek(f, 0, SEEK_END) == 0) ? ftell(f) : -1;
    fclose(f);
    if (got != n * es || extra) {
      free(v);
      return cli_error("%s %s holds %ld bytes, expected %zu (%zu little-endian %s values of %zu bytes)", opt, spec,
                       size, n * es, n, rcl_dtype_name(dt), es);
    }
  }
  *out = v;
  return 0;
}

int cli_sparse_scalar(unsigned char out[8], const char *opt, const char *text, rcl_dtype dt) {
  char *end;
  errno = 0;
  if (dt == RCL_F32) {
    float f = strtof(text, &end);
    if (!*text || *end) return cli_error("%s expects a number, got \"%s\"", opt, text);
    memcpy(out, &f, 4);
  } else {
    double d = strtod(text, &end);
    if (!*text || *end) return cli_error("%s expects a number, got \"%s\"", opt, text);
    memcpy(out, &d, 8);
  }
  return 0;
}

json_t *cli_sparse_matrix_json(const rcl_csr *A, const char *label) {
  size_t longest = 0;
  for (size_t i = 0; i < A->nrows; i++)
    if (A->row_ptr[i + 1] - A->row_ptr[i] > longest) longest = (size_t)(A->row_ptr[i + 1] - A->row_ptr[i]);
  char hex[65];
  rcl_csr_digest(hex, A);
  return json_pack("{s:s,s:I,s:I,s:I,s:I,s:s}", "name", label, "rows", (json_int_t)A->nrows, "cols",
                   (json_int_t)A->ncols, "nnz", (json_int_t)A->nnz, "max_row", (json_int_t)longest, "sha256", hex);
}

double cli_sparse_spmv_bytes(const rcl_csr *A, int beta_nonzero) {
  double es = (double)rcl_dtype_size(A->dtype), rp = A->nnz > UINT32_MAX ? 8.0 : 4.0;
  return (double)A->nnz * (es + 4.0) + (double)(A->nrows + 1) * rp + (double)A->ncols * es +
         (double)A->nrows * es * (beta_nonzero ? 2.0 : 1.0);
}

int cli_cg_ended(int st) { return st == 0 || st == RCL_ERR_NO_CONVERGENCE || st == RCL_ERR_BREAKDOWN; }

const char *cli_cg_status_word(int st) {
  return st == 0                        ? "converged"
         : st == RCL_ERR_NO_CONVERGENCE ? "no-convergence"
         : st == RCL_ERR_BREAKDOWN      ? "breakdown"
                                        : "error";
}

rcl_cg_options cli_cg_warm_options(const rcl_cg_options *co) {
  rcl_cg_options w = *co;
  w.max_iterations = 1;
  return w;
}

void cli_cg_warm_done(int st, rcl_cg_result *r) {
  if (cli_cg_ended(st)) rcl_cg_result_free(r);
  rcl_error_clear();
}

int cli_opt_tol(void *target, const char *opt, const char *value) {
  int rc = cli_parse_double(target, opt, value);
  if (!rc && *(double *)target < 0) rc = cli_error("%s must be >= 0, got %s", opt, value);
  return rc;
}
