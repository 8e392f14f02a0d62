/* The standard suite of `reprocl check` and `reprocl fingerprint`: every kernel family contributes
 * cases — documented inputs, a contract, a dtype — each with a host reference and a run on a context in
 * either mode (reproducible or native, by the context), both returning the output bytes. */
#ifndef REPROCL_CLI_SUITE_H
#define REPROCL_CLI_SUITE_H
#include "cli.h"
#include "opt.h"

typedef struct suite_family suite_family;

typedef struct {
  const suite_family *family;
  char name[160];    /* unique and stable across versions: "reduce sum f32 ordered cancel n=100003" */
  char contract[48]; /* the contract and its version: "reduce.ordered.v1" */
  rcl_dtype dtype;
  rcl_family kind; /* for the device-support check */
  int quick;       /* part of the quick suite (CI, reference fingerprint) */
  uint64_t p[8];   /* family-defined parameters */
  char input[256]; /* a file the case reads ("" for generated inputs) */
  /* For cases whose output is an image-like grid, its width and height (0 otherwise): check draws
   * difference images of native drift for them. */
  size_t width, height;
} suite_case;

typedef struct {
  suite_case *items;
  size_t count, cap;
} suite_list;

struct suite_family {
  const char *name;
  /* Appends the family's cases to the list (suite_add). */
  int (*cases)(suite_list *list);
  /* The host reference output (malloc'ed), or RCL_ERR_NOT_FOUND when the case's input is missing. */
  int (*reference)(const suite_case *c, void **out, size_t *bytes);
  /* The output on a context (its mode decides reproducible or native), malloc'ed. */
  int (*run)(const suite_case *c, rcl_context *ctx, void **out, size_t *bytes);
  /* The output over several devices (include/reprocl/split.h), malloc'ed; NULL: the family has no split. */
  int (*run_split)(const suite_case *c, rcl_split *s, void **out, size_t *bytes);
};

/* Where a family's compute runs: the host reference (both NULL), one context, or a split. */
typedef struct {
  rcl_context *ctx;
  rcl_split *split;
} suite_target;

extern const suite_family *const suite_families[]; /* suite.c; NULL-terminated */
extern const suite_family suite_reduce;
extern const suite_family suite_sparse;
extern const suite_family suite_stencil;
extern const suite_family suite_md;

/* Adds a case; returns it for the caller to fill p[], input, width/height. NULL when out of memory. */
suite_case *suite_add(suite_list *l, const suite_family *f, rcl_family kind, rcl_dtype dt, int quick,
                      const char *contract, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* All cases of the selected families ("all" or a comma list), optionally only the quick ones. */
int suite_collect(suite_list *l, const char *families, int quick_only);
void suite_free(suite_list *l);

/* Common options of check and fingerprint: --suite quick|full, --family, --device. */
typedef struct {
  int quick;
  const char *families;
  const char *device;
} suite_options;
#define SUITE_OPTIONS_INIT                                                                                             \
  { 0, "all", "all" }
/* Their rows of an option table. */
#define SUITE_OPTS(o)                                                                                                  \
  CLI_VAL("suite", &(o)->quick, suite_opt_suite, "quick|full", "which suite (default: full; see below)"),              \
      CLI_STR("family", &(o)->families, "F[,F...]|all", "only these families (default: all; see below)"),              \
      CLI_OPT_DEVICE(&(o)->device, "all")
/* --suite quick|full into an int (1 for quick). */
int suite_opt_suite(void *target, const char *opt, const char *value);
/* intro, then the suites with their case counts and the --family names, from the suite tables (for the
 * help of check and fingerprint), in buf; returns buf. */
const char *suite_about(char *buf, size_t size, const char *intro);
/* The cases and devices of a suite run; suite_open prints its errors and returns an exit status. */
typedef struct {
  suite_list cases;
  cli_devices devs;
  int quick;
} suite_run;
int suite_open(suite_run *r, const suite_options *o);
void suite_close(suite_run *r);

/* The versions of every contract the suite uses: {"reduce.ordered": 1, ...}. */
json_t *suite_contract_versions(const suite_list *l);

/* A log2 histogram of ulp differences: bin 0 = equal, bin k = [2^(k-1), 2^k) ulps, last bin = inf/NaN. */
#define SUITE_ULP_BINS 34
void suite_ulp_histogram(size_t bins[SUITE_ULP_BINS], const void *a, const void *b, size_t n, rcl_dtype dt);

/* Runs every case on every device (and, with ndevs, in native mode too; with split, over the devices together
 * too: suite_split.c), recording the results in *doc (the fingerprint format, docs/fingerprint.md). Returns the
 * number of reproducible results that differ from the host reference or failed to run. */
int suite_execute(json_t **doc, const suite_list *l, const cli_devices *devs, const cli_devices *ndevs,
                  rcl_split *split, int json_mode);
/* ---- split cases (suite_split.c) ---- */
/* How many weight patterns each case runs over a split. */
#define SUITE_SPLIT_PATTERNS 2
/* A split over the devices' reproducible contexts (NULL with fewer than two devices: nothing to split). */
int suite_split_open(rcl_split **out, const cli_devices *devs);
/* Case c over the split with each weight pattern, against the reference: a JSON array of {"weights",
 * "shares", "status", "sha256", "agrees"}; *mismatches counts results that differ or fail. */
json_t *suite_split_results(const suite_case *c, rcl_split *s, const void *ref, size_t rbytes, int *mismatches,
                            cli_progress *pb);
/* check's table cell for a case's split results (19 columns). */
void suite_split_print_cell(json_t *case_result);
/* Writes a self-contained HTML report of a check document (report_html.c). */
int suite_write_html(const char *path, json_t *doc);

int cmd_check(int argc, char **argv);
int cmd_fingerprint(int argc, char **argv);
int cmd_compare(int argc, char **argv);
#endif
