/* Shared pieces of the commands that run one computation on the devices and compare digests (run reduce,
 * spmv, cg, stencil, md): value parsers for the library's names and sizes (for CLI_VAL in their option
 * tables), and the tally of which devices ran and agreed, which gives the exit status of the rule. */
#ifndef REPROCL_CLI_RUN_COMMON_H
#define REPROCL_CLI_RUN_COMMON_H
#include "cli.h"
#include "opt.h"

/* Value parsers by target type; an unknown name is an error naming the option ("--op: unknown reduction
 * ..."), exit status 2. */
int cli_opt_reduce_op(void *target, const char *opt, const char *value);       /* rcl_reduce_op */
int cli_opt_reduce_mode(void *target, const char *opt, const char *value);     /* rcl_reduce_mode */
int cli_opt_reduce_variant(void *target, const char *opt, const char *value);  /* rcl_reduce_variant */
int cli_opt_gen_kind(void *target, const char *opt, const char *value);        /* rcl_gen_kind */
int cli_opt_spmv_contract(void *target, const char *opt, const char *value);   /* rcl_spmv_contract */
int cli_opt_spmv_variant(void *target, const char *opt, const char *value);    /* rcl_spmv_variant */
int cli_opt_boundary(void *target, const char *opt, const char *value);        /* rcl_boundary */
int cli_opt_stencil_variant(void *target, const char *opt, const char *value); /* rcl_stencil_variant */
int cli_opt_md_mixing(void *target, const char *opt, const char *value);       /* rcl_md_mixing */
int cli_opt_md_path(void *target, const char *opt, const char *value);         /* rcl_md_path */
/* "WxH" into size_t[2], both >= 1 (cli_parse_dims). */
int cli_opt_dims(void *target, const char *opt, const char *value);

/* "reprocl CMD: error: WHAT on DEVICE: <the library's message>" for a run that failed in the library or in a
 * plain OpenCL call (clFinish, a read), which sets no library status: the exit status by the library's
 * status, and 3 (could not run) where there is none, never 0. */
int cli_fail_on(const char *what, const char *device);

/* How the devices' results compare. key: the digest(s) every device must reproduce (compared with the
 * first device that ran); matches: whether this device also matches the host reference (1 without one). */
typedef struct {
  size_t ran, agree, unsupported;
  int all_same;
  char first[2 * RCL_SHA256_HEX_SIZE + 2];
} cli_tally;
void cli_tally_init(cli_tally *t);
/* Records a device that ran; returns 1 when it is the first (its result is the one --out writes). */
int cli_tally_add(cli_tally *t, const char *key, int matches);
/* Every device that ran agrees with the others and with the reference, and one ran at least. */
int cli_tally_ok(const cli_tally *t);
/* The exit status of the rule: 0 all agree, 1 a reproducible result disagrees, 3 no device could run it. */
int cli_tally_status(const cli_tally *t);
/* --out: writes the first device's result (data, bytes) to path; nothing without a path. Returns 0 or an
 * exit status (2 when no device ran). */
int cli_tally_write(const cli_tally *t, const char *path, const void *data, size_t bytes);
/* The last line of run reduce and spmv: "AGREE: 2 of 3 device(s) ran, 2 agree with the reference ...". */
void cli_tally_print(const cli_tally *t, size_t devices);

/* The devices a command runs on and what it collects from them. */
typedef struct {
  cli_devices devs, ndevs; /* reproducible mode, and native mode (the same devices) with --native */
  json_t *jdevs;           /* the devices' JSON entries */
  cli_tally tally;
} cli_run;
/* Makes r empty (cli_run_close is then safe). */
void cli_run_init(cli_run *r);
/* Opens the devices of --device spec (NULL: $REPROCL_DEVICE or 0) and, with native, their native twins. */
int cli_run_open(cli_run *r, const char *spec, int native);
/* Device i of r: runs it, tallies it, prints its line and fills jd, its JSON entry. Returns 0 or an exit status. */
typedef int (*cli_run_fn)(void *job, cli_run *r, json_t *jd, size_t i);
/* Calls fn for every device that can run family in dt (the others are counted unsupported, shown as such,
 * the name in `width` columns), until one fails. Returns 0 or that exit status. */
int cli_run_each(cli_run *r, rcl_family family, rcl_dtype dt, int json, int width, cli_run_fn fn, void *job);
void cli_run_close(cli_run *r);

/* ---- --split DEVICES [--split-weights W1:W2:...]: the same computation over several devices at once ---- */
/* What --split and --split-weights asked for (cli_split.c). */
#define CLI_SPLIT_MAX_WEIGHTS 64
typedef struct {
  const char *devices; /* --split: device specs as for rcl_split_options.devices; NULL: no split row */
  double weights[CLI_SPLIT_MAX_WEIGHTS];
  size_t nweights; /* --split-weights: one per device of the split; 0: measured (and tuned) weights */
} cli_split_opts;
/* --split-weights "3:1": numbers >= 0, at least one > 0; an error names the value (exit status 2). */
int cli_opt_split_weights(void *target, const char *opt, const char *value);
/* The common options of a split run, in an option table: CLI_OPT_SPLIT(&split_opts). */
#define CLI_OPT_SPLIT(o)                                                                                               \
  CLI_STR("split", &(o)->devices, "DEVICES",                                                                           \
          "also run over these devices together, the work cut by weights (one more row): device\n"                     \
          "specs as for --device, comma-separated, 'all', SPEC/N for N sub-devices (\"pocl:,intel\",\n"                \
          "\"pocl:/2\"); its digest must equal the reference's"),                                                      \
      CLI_VAL("split-weights", (o), cli_opt_split_weights, "W1:W2:...",                                                \
              "the split's weights, one >= 0 per device of --split (default: measured, tuned)")

/* A split run of a command: the split, and its "split" JSON object once it ran. */
typedef struct {
  const cli_split_opts *opts;
  rcl_split *s;
  json_t *j;
  int ran, ok;
  double tune_s; /* the last cli_split_tune's seconds */
  char label[96];
} cli_split_run;
/* Creates the split of o (nothing without --split). Returns 0 or an exit status: 2 for a device spec that
 * names no device or weights that do not fit it, 3 for a split that cannot be made. */
int cli_split_open(cli_split_run *r, const cli_split_opts *o);
/* Before a split run: the split's weights tuned for operation op, dtype and size (elements, matrix rows, grid
 * rows) by rcl_split_tune_op — cached, or timed now; equal with REPROCL_TUNING=off — and set on the split, so
 * the row runs with its own operation's weights (an SpMV's, not CG's); nothing with --split-weights.
 * Returns 0 or an exit status. */
int cli_split_tune(cli_split_run *r, rcl_split_op op, rcl_dtype dt, size_t size);
/* The split's row: records its digest hex, time and agreement (ok) in r->j ("split": devices, weights,
 * sha256, time_s, matches_reference, shares), then, in text mode, each device's share of the index space
 * (`unit`: "elements", "rows", "grid rows") or why it was left out. extra: more fields (stolen, or NULL). */
void cli_split_report(cli_split_run *r, const char *hex, double secs, int ok, const char *unit, int json,
                      json_t *extra);
/* A failed split call: the exit status of the library's status, the message naming the split. */
int cli_split_fail(const cli_split_run *r);
/* The exit status of the rule with the split counted: rc, or 1 where rc is 0 and the split disagrees. */
int cli_split_status(const cli_split_run *r, int rc);
/* Text mode: "SPLIT AGREES: the split over 2 devices (...) gives the reference's bits" (or DIFFERS). */
void cli_split_summary(const cli_split_run *r);
/* Adds r->j as "split" to a command's JSON document (nothing without a split run). */
void cli_split_json(const cli_split_run *r, json_t *top);
void cli_split_close(cli_split_run *r);

/* bench --split (bench_split.c): each selected family's problem on each device of the split alone and over
 * the split, recorded in b->results (the devices and the split itself in jdev); the summary record gives the
 * ratio split / fastest device alone. Returns 0 or an exit status. */
int cli_bench_split(cli_bench *b, cli_split_run *sr, const char *families, json_t *jdev);
/* Whether bench --split has a problem of this family (reduce, spmv, cg, stencil). */
int cli_bench_split_has(const char *family);
/* Whether family is in the --family list ("all" or comma-separated names; cmd_bench.c). */
int cli_bench_selected(const char *list, const char *family);

/* What exit status 1 means for these commands (their cli_cmd_spec's finding). */
#define CLI_RUN_FINDING "a reproducible result differs between devices or from the host reference"

/* ---- MD's system and integration options (reprocl md, reprocl-mpi md) ---------------------------------- */

typedef struct {
  const char *input, *lattice;
  const char *cells_s, *density_s, *temp_s, *mixing_s; /* options whose presence matters, parsed after the others */
  size_t cells, steps, every;
  double density, temp, cutoff, skin, dtime;
  uint64_t seed;
  rcl_md_mixing mixing; /* with --mixing: replaces the input file's rule */
  int shift;
} cli_md_args;
#define CLI_MD_ARGS_INIT                                                                                               \
  { .seed = 87287, .cutoff = 2.5, .dtime = 0.005 }
/* The option table's entries of cli_md_args a (its sections "the system", "the potential and the integration"). */
#define CLI_MD_OPTS(a)                                                                                                 \
  CLI_SECTION("the system"),                                                                                           \
      CLI_STR("input", &(a)->input, "FILE", "a LAMMPS data file (.data) or an (extended) XYZ file (.xyz)"),            \
      CLI_STR("lattice", &(a)->lattice, "fcc|bcc|sc", "a generated lattice (needs --cells, --density, --temp)"),       \
      CLI_STR("cells", &(a)->cells_s, "N", "unit cells per side of the lattice"),                                      \
      CLI_STR("density", &(a)->density_s, "R", "number density of the lattice"),                                       \
      CLI_STR("temp", &(a)->temp_s, "T", "initial temperature of the lattice's velocities"),                           \
      CLI_VAL("seed", &(a)->seed, cli_opt_u64, "S", "seed of the lattice's velocities (default: 87287)"),              \
      CLI_SECTION("the potential and the integration"),                                                                \
      CLI_VAL("cutoff", &(a)->cutoff, cli_opt_double, "RC", "Lennard-Jones cutoff (default: 2.5)"),                    \
      CLI_FLAG("shift", &(a)->shift, "shift the potential to zero at the cutoff"),                                     \
      CLI_STR("mixing", &(a)->mixing_s, "geometric|arithmetic", "mixing rule of unlike pairs (default: the file's)"),  \
      CLI_VAL("skin", &(a)->skin, cli_opt_double, "D", "neighbour-list skin (default: 0.3)"),                          \
      CLI_VAL("dt", &(a)->dtime, cli_opt_double, "T", "time step (default: 0.005)"),                                   \
      CLI_VAL("steps", &(a)->steps, cli_opt_size, "S", "steps to run (default: 0, forces and energies only)"),         \
      CLI_VAL("thermo", &(a)->every, cli_opt_size, "K", "thermo output every K steps (0: first and last)")
/* After cli_opt_parse (rc its status): the options parsed after the others and the combinations checked. Returns
 * 0 or the exit status. */
int cli_md_args_check(cli_md_args *a, int rc);
/* The system read (--input) or generated (--lattice), described in what; the potential options applied to lj.
 * Returns 0 or the library's status (rcl_error_last()). */
int cli_md_system(rcl_md_system **sys, rcl_md_lj *lj, char *what, size_t what_size, const cli_md_args *a);
/* The thermo output: its head line and a line per record (energies per atom, as LAMMPS prints lj units). */
extern const char cli_md_thermo_head[];
void cli_md_thermo_line(FILE *f, const rcl_md_thermo *t);

#endif
