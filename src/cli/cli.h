/* Shared helpers of the reprocl command-line tool: device selection, option parsing, output (text and
 * JSON via jansson), digests, native-drift statistics, progress and benchmarking. */
#ifndef REPROCL_CLI_H
#define REPROCL_CLI_H
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>

#include "reprocl/reprocl.h"

/* ---- commands (one file each) ------------------------------------------------------------------- */
typedef int (*cli_command_fn)(int argc, char **argv);
typedef struct {
  const char *name;
  cli_command_fn fn;
  const char *summary;
} cli_command;
extern const cli_command cli_commands[]; /* main.c; NULL-terminated */

int cmd_devices(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bounds(int argc, char **argv);
int cmd_spmv(int argc, char **argv);
int cmd_cg(int argc, char **argv);
int cmd_stencil(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_md(int argc, char **argv);
int cmd_audit(int argc, char **argv);

/* ---- exit status: one rule for every command (docs/cli.md, `--help` of each) --------------------------- */
enum {
  CLI_EXIT_OK = 0,      /* ran; every result agrees (or the command has nothing to compare) */
  CLI_EXIT_FINDING = 1, /* ran; a reproducible result disagrees (or the command's finding: an audit hit, ...) */
  CLI_EXIT_USAGE = 2,   /* bad usage or input: option, value, file, device spec, a problem too large */
  CLI_EXIT_FAILED = 3   /* could not run: OpenCL or build failure, unsupported device, internal error */
};
/* The exit status of a failed library call, by its status: input problems (invalid argument, not found, I/O,
 * parse, policy, overflow, out of host memory) are 2, a MISMATCH is 1, everything else 3. */
int cli_exit_status(int rcl_status);

/* ---- messages ------------------------------------------------------------------------------------ */
/* The running command's name, for messages ("reprocl run"). */
extern const char *cli_progname;
/* The tool's name in messages and usage lines: "reprocl" (reprocl-mpi sets its own). */
extern const char *cli_toolname;
/* "reprocl <cmd>: error: ..." on stderr; returns the exit status 2 (usage/input error). */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for a failed library call: appends rcl_error_last(). Returns cli_exit_status() of
 * rcl_error_last_status(). */
int cli_fail(const char *what, ...) __attribute__((format(printf, 1, 2)));

/* ---- option parsing ------------------------------------------------------------------------------ */
/* Strict parsers: the whole string must be a number in range; errors name the option and value. */
int cli_parse_size(size_t *out, const char *opt, const char *s);
int cli_parse_u64(uint64_t *out, const char *opt, const char *s);
int cli_parse_double(double *out, const char *opt, const char *s);
int cli_parse_int(int *out, const char *opt, const char *s, int lo, int hi);
/* "WxH" grid sizes, both >= 1. */
int cli_parse_dims(size_t *w, size_t *h, const char *opt, const char *s);

/* ---- devices --------------------------------------------------------------------------------------- */
/* The devices a command runs on: --device D (one spec, see rcl_device_find) or "all" (every device).
 * Contexts are made in the given mode; device names are "platform: device". */
typedef struct {
  size_t count;
  rcl_context **ctx;
  char **name;
  size_t *index; /* rcl_devices() index of each */
} cli_devices;
int cli_devices_open(cli_devices *out, const char *spec, rcl_mode mode);
/* A second set of contexts on the same devices in another mode (e.g. native beside reproducible). */
int cli_devices_clone(cli_devices *out, const cli_devices *from, rcl_mode mode);
void cli_devices_close(cli_devices *d);
/* Starts device i's entry in a command's JSON device list: {"index", "name", "support"} appended to
 * jdevs (*jd borrows it). When the device cannot run `family` in `dt`, adds "reason", prints
 * "unsupported: why" (text mode, the name in `width` columns) and returns 0; otherwise returns 1. */
int cli_device_entry(json_t **jd, json_t *jdevs, const cli_devices *devs, size_t i, rcl_family family, rcl_dtype dt,
                     int json, int width);

/* ---- results ------------------------------------------------------------------------------------- */
void cli_digest(char hex[RCL_SHA256_HEX_SIZE], const void *data, size_t bytes);
/* How far b drifts from a (the reproducible result): values that differ, the largest absolute,
 * relative and ulp differences (ulps counted on the ordered integer line, so they work across signs). */
typedef struct {
  size_t n;
  size_t differing;
  double max_abs;
  double max_rel;
  double max_ulp;
} cli_drift;
void cli_drift_compute(cli_drift *out, const void *a, const void *b, size_t n, rcl_dtype dt);
json_t *cli_drift_json(const cli_drift *d);
/* Prints a value of dtype with enough digits to round-trip. */
void cli_format_value(char *buf, size_t size, const void *v, rcl_dtype dt);
/* Writes a JSON object to stdout (indented) followed by a newline; frees it. */
void cli_json_print(json_t *obj);
/* A JSON object describing a device profile (identity, guarantees, support per family). */
json_t *cli_profile_json(const rcl_device_profile *p);
/* The first-use self-test verdicts of ctx, as text lines under a device (cmd_devices.c) or as JSON;
 * 0 or the status of the first verdict that could not be had (shown as "error"). */
int cli_verdicts_print(rcl_context *ctx);
int cli_verdicts_json(json_t **out, rcl_context *ctx);
/* dir and name joined by exactly one '/' ("src/" or "src" with "manifest.txt": "src/manifest.txt"). */
void cli_path_join(char *buf, size_t size, const char *dir, const char *name);
/* Writes raw bytes to a file; errors name the file. Returns 0 or an exit status. */
int cli_write_file(const char *path, const void *data, size_t bytes);

/* ---- time and progress ---------------------------------------------------------------------------- */
double cli_now(void); /* monotonic seconds */
/* A one-line progress bar on stderr when it is a terminal (and not in JSON mode); no-op otherwise. */
typedef struct {
  int enabled;
  size_t total, done;
  const char *label;
} cli_progress;
void cli_progress_start(cli_progress *p, size_t total, const char *label, int json_mode);
void cli_progress_step(cli_progress *p, const char *what);
void cli_progress_end(cli_progress *p);

/* ---- benchmarks (bench_common.c; one bench_<family>.c per family) ------------------------------- */
typedef struct {
  rcl_context *ctx;    /* reproducible */
  rcl_context *native; /* native mode, same device */
  const char *device_name;
  int quick;        /* tiny sizes, for CI: asserts nothing about speed */
  int repeats;      /* timed runs per case (median reported); an untimed warm-up run precedes them */
  double copy_gbps; /* the device's measured copy bandwidth (read + write), this run */
  json_t *results;  /* array: one object per case, see cli_bench_record */
  /* Time budget of the running family on this device (0: none; cmd_bench sets it from --max-seconds),
   * the time it started, and the start of the size in progress (-1 once a size was skipped for the
   * budget; see cli_bench_out_of_time). */
  double budget_s, family_t0, size_t0;
  const char *skip_peers; /* --skip-peer: comma-separated peer names not to run (NULL: none) */
} cli_bench;
typedef int (*cli_bench_fn)(cli_bench *b);
typedef struct {
  const char *family;
  cli_bench_fn fn;
} cli_bench_family;
extern const cli_bench_family cli_bench_families[]; /* cmd_bench.c; NULL-terminated */
int cli_bench_reduce(cli_bench *b);
int cli_bench_spmv(cli_bench *b);
int cli_bench_cg(cli_bench *b);
int cli_bench_stencil(cli_bench *b);
int cli_bench_md(cli_bench *b);

/* Times fn(arg) `repeats` times after one warm-up; each call must finish its work (clFinish).
 * Returns 0 and fills median/min/max seconds, or the failing call's status. */
typedef int (*cli_timed_fn)(void *arg);
int cli_bench_time(double *median, double *min, double *max, int repeats, cli_timed_fn fn, void *arg);
/* The median of t[0..n) (sorts t; 0 for n < 1). */
double cli_median(double *t, int n);
/* The median, least and largest of t[0..n), n >= 1 (sorts t). */
void cli_time_stats(double *median, double *min, double *max, double *t, int n);
/* The device time of a finished command (its event's START to END): 1 and *secs, or 0 where the event is
 * NULL or its queue does not profile. */
int cli_event_seconds(double *secs, cl_event ev);
/* Measures copy bandwidth (bytes read + written per second, GB/s) with a plain copy kernel. */
int cli_bench_copy_gbps(double *gbps, rcl_context *ctx, size_t bytes, int repeats);
/* The fixed cost of one launch and clFinish (a 4 KiB copy, median of at least 20): what every call of a
 * small problem pays whatever the kernel, and a part of every multi-launch operation's time. *dev_secs:
 * the least device time of that kernel (its event's START to END; 0 where the queue does not profile). */
int cli_bench_launch_seconds(double *secs, double *dev_secs, rcl_context *ctx, int repeats);
/* Appends a measurement (the record schema is in docs/performance.md): family, kernel (the operation),
 * variant (the implementation or configuration), mode ("reproducible", "native", "peer:<name>"), dtype,
 * size label and its numeric size n (elements, grid points, non-zeros or atoms: the x axis of the plots),
 * the times per run, bytes moved and flops per run (GB/s, GFLOP/s and the fraction of copy bandwidth are
 * derived) and optional extra fields (stolen). */
void cli_bench_record(cli_bench *b, const char *family, const char *kernel, const char *variant, const char *mode,
                      rcl_dtype dt, const char *size, double n, double median, double min, double max, double bytes,
                      double flops, json_t *extra);
/* Records that a case could not run (a peer library absent, a size over the device limit), and why. */
void cli_bench_skip(cli_bench *b, const char *family, const char *kernel, const char *variant, const char *why);
/* Called by a family before each of its sizes, smallest first. Returns 1 (and records the size as skipped)
 * when the family's time budget cannot fit it: the time spent so far plus the previous size's time times
 * `growth` (how much more work this size is) exceeds the budget. Returns 0 without a budget. */
/* Whether peer library `name` ("clblast", "viennacl") runs in this benchmark: built in (available) and
 * not named by --skip-peer. Otherwise records it as skipped for `family`, with the reason, and returns 0. */
int cli_bench_peer_on(cli_bench *b, const char *family, const char *name, int available);
/* One item of a --skip-peer list ("peer" or "family:peer") at p: *family (NULL when the item names none)
 * and *peer with their lengths. Returns where the next item starts. */
const char *cli_skip_peer_item(const char *p, const char **family, size_t *fl, const char **peer, size_t *pl);
/* The same test without recording anything (for the family's inner loops). */
int cli_bench_peer_runs(const cli_bench *b, const char *family, const char *name, int available);
int cli_bench_out_of_time(cli_bench *b, const char *family, const char *size, double growth);

#endif
