/* reprocl audit: builds every program of reprocl (every registered family, f32 and f64, reproducible and
 * native mode) on the chosen devices and reads what the device compiler produced, reporting per kernel
 * the instructions that break the contracts (fused multiply-add, approximations, flush to zero, fast
 * math) — or that the binary is opaque. --binary audits one binary file instead (PTX, SPIR-V, PoCL,
 * x86-64 ELF). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"
#include "reprocl/audit.h"

/* ---- reports as JSON -------------------------------------------------------------------------------- */

static json_t *classes_json(unsigned classes) {
  json_t *a = json_array();
  for (unsigned c = 0; c < RCL_AUDIT_NCLASSES; c++)
    if (classes & (1u << c)) json_array_append_new(a, json_string(rcl_audit_class_name(c)));
  return a;
}

static json_t *kernel_json(const rcl_audit_kernel *k) {
  json_t *o = json_object(), *f = json_array();
  json_object_set_new(o, "kernel", json_string(k->name));
  for (unsigned c = 0; c < RCL_AUDIT_NCLASSES; c++)
    json_object_set_new(o, rcl_audit_class_name(c), json_integer((json_int_t)k->count[c]));
  json_object_set_new(o, "clean", json_boolean(k->nfindings == 0));
  for (size_t i = 0; i < k->nfindings; i++) {
    const rcl_audit_finding *fd = &k->findings[i];
    json_array_append_new(f, json_pack("{s:o, s:s, s:s, s:I}", "classes", classes_json(fd->classes), "what", fd->what,
                                       "where", fd->where, "count", (json_int_t)fd->count));
  }
  json_object_set_new(o, "findings", f);
  return o;
}

/* format, depth, note and kernels of a report, into o */
static void report_into(json_t *o, const rcl_audit_report *r) {
  json_object_set_new(o, "format", json_string(rcl_binary_format_name(r->format)));
  json_object_set_new(o, "depth", json_string(rcl_audit_depth_name(r->depth)));
  json_object_set_new(o, "note", json_string(r->note));
  json_t *ks = json_array();
  for (size_t i = 0; i < r->nkernels; i++) json_array_append_new(ks, kernel_json(&r->kernels[i]));
  json_object_set_new(o, "kernels", ks);
}

typedef struct {
  json_t *programs;
  cli_devices *devs;
  size_t dev;
  const char *mode;
  int progress;
  const char *save_dir; /* --save: where each binary is written, or NULL */
} walk;

static const char *extension(rcl_binary_format f) {
  switch (f) {
  case RCL_BINARY_PTX:
    return "ptx";
  case RCL_BINARY_POCL:
    return "poclbin";
  case RCL_BINARY_BITCODE:
    return "bc";
  case RCL_BINARY_SPIRV:
    return "spv";
  case RCL_BINARY_ELF:
    return "elf";
  default:
    return "bin";
  }
}

/* A program's name as shown: "spmv.cl[SPMV_EXACT,SPMV_RP64]" (the file, then its extra defines without
 * -D, RCL_ and =1); for a file name "spmv_SPMV_EXACT_SPMV_RP64", with only [A-Za-z0-9._-]. */
static void compact_label(char *buf, size_t size, const char *program, const char *defines, int for_file) {
  size_t pl = strlen(program);
  if (for_file && pl > 3 && !strcmp(program + pl - 3, ".cl")) pl -= 3;
  size_t at = (size_t)snprintf(buf, size, "%.*s", (int)pl, program);
  int first = 1;
  for (const char *d = defines ? defines : ""; *d && at < size;) {
    while (*d == ' ') d++;
    size_t l = strcspn(d, " "), tl = l;
    const char *t = d;
    d += l;
    if (!l) break;
    if (tl > 2 && !strncmp(t, "-D", 2)) t += 2, tl -= 2;
    if (tl > 4 && !strncmp(t, "RCL_", 4)) t += 4, tl -= 4;
    if (tl > 2 && !strncmp(t + tl - 2, "=1", 2)) tl -= 2;
    at += (size_t)snprintf(buf + at, size - at, "%s%.*s", for_file ? "_" : first ? "[" : ",", (int)tl, t);
    first = 0;
  }
  if (!for_file && !first && at < size) snprintf(buf + at, size - at, "]");
  if (for_file)
    for (char *c = buf; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'))
        *c = '_';
}

static int on_program(void *user, const char *program, rcl_dtype dt, const char *defines, const unsigned char *bin,
                      size_t size, const rcl_audit_report *r) {
  walk *w = user;
  if (w->progress)
    fprintf(stderr, "\r  auditing %s %s (%s) on %.40s ...%10s", program, rcl_dtype_name(dt), w->mode,
            w->devs->name[w->dev], "");
  json_t *o = json_pack("{s:s, s:s, s:o}", "program", program, "dtype", rcl_dtype_name(dt), "defines",
                        defines ? json_string(defines) : json_null());
  report_into(o, r);
  json_object_set_new(o, "binary_bytes", json_integer((json_int_t)size));
  json_array_append_new(w->programs, o);
  if (w->save_dir) {
    char label[256], path[1024];
    compact_label(label, sizeof label, program, defines, 1);
    snprintf(path, sizeof path, "%s/%zu-%s-%s-%s.%s", w->save_dir, w->devs->index[w->dev], w->mode, label,
             rcl_dtype_name(dt), extension(r->format));
    int rc = cli_write_file(path, bin, size);
    if (rc) return rc;
    json_object_set_new(o, "saved", json_string(path));
  }
  return 0;
}

/* The summary of one mode's programs: kernels, kernels with findings, opaque programs. */
static void summarise(json_t *mode) {
  size_t kernels = 0, dirty = 0, opaque = 0, i, k;
  json_t *p, *kr;
  json_array_foreach(json_object_get(mode, "programs"), i, p) {
    if (!strcmp(json_string_value(json_object_get(p, "depth")), "opaque")) opaque++;
    json_array_foreach(json_object_get(p, "kernels"), k, kr) {
      kernels++;
      dirty += !json_is_true(json_object_get(kr, "clean"));
    }
  }
  json_object_set_new(mode, "kernels", json_integer((json_int_t)kernels));
  json_object_set_new(mode, "kernels_with_findings", json_integer((json_int_t)dirty));
  json_object_set_new(mode, "opaque_programs", json_integer((json_int_t)opaque));
}

/* ---- text ---------------------------------------------------------------------------------------------- */

/* "clean", "opaque" or "fma 3, approx 1" for a kernel (NULL: absent in this mode). */
static void cell(char *buf, size_t size, json_t *prog, json_t *kernel) {
  if (!prog) {
    snprintf(buf, size, "-");
    return;
  }
  if (!strcmp(json_string_value(json_object_get(prog, "depth")), "opaque")) {
    snprintf(buf, size, "opaque");
    return;
  }
  if (!kernel) {
    snprintf(buf, size, "-");
    return;
  }
  if (json_is_true(json_object_get(kernel, "clean"))) {
    snprintf(buf, size, "clean");
    return;
  }
  size_t at = 0;
  buf[0] = '\0';
  for (unsigned c = 0; c < RCL_AUDIT_NCLASSES; c++) {
    json_int_t n = json_integer_value(json_object_get(kernel, rcl_audit_class_name(c)));
    if (n && at < size)
      at += (size_t)snprintf(buf + at, size - at, "%s%s %lld", at ? ", " : "", rcl_audit_class_name(c), (long long)n);
  }
}

static json_t *find_program(json_t *mode, json_t *like) {
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(mode, "programs"), i, p) {
    if (json_equal(json_object_get(p, "program"), json_object_get(like, "program")) &&
        json_equal(json_object_get(p, "dtype"), json_object_get(like, "dtype")) &&
        json_equal(json_object_get(p, "defines"), json_object_get(like, "defines")))
      return p;
  }
  return NULL;
}

static json_t *find_kernel(json_t *prog, const char *name) {
  size_t i;
  json_t *k;
  if (!prog) return NULL;
  json_array_foreach(json_object_get(prog, "kernels"), i, k) {
    if (!strcmp(json_string_value(json_object_get(k, "kernel")), name)) return k;
  }
  return NULL;
}

static void program_label(char *buf, size_t size, json_t *p) {
  json_t *d = json_object_get(p, "defines");
  compact_label(buf, size, json_string_value(json_object_get(p, "program")),
                json_is_string(d) ? json_string_value(d) : NULL, 0);
}

/* The distinct "format/depth: note" lines of a mode's programs. */
static void print_notes(json_t *mode, const char *label) {
  json_t *seen = json_array();
  size_t i, j;
  json_t *p, *s;
  json_array_foreach(json_object_get(mode, "programs"), i, p) {
    char line[1024];
    snprintf(line, sizeof line, "%s, read as %s: %s", json_string_value(json_object_get(p, "format")),
             json_string_value(json_object_get(p, "depth")), json_string_value(json_object_get(p, "note")));
    int dup = 0;
    json_array_foreach(seen, j, s) dup |= !strcmp(json_string_value(s), line);
    if (dup) continue;
    json_array_append_new(seen, json_string(line));
    printf("  binary%s: %s\n", label, line);
  }
  json_decref(seen);
}

/* Per mode: each distinct finding with the number of kernels it occurs in and its total count. */
static void print_summary(json_t *mode, int details) {
  const char *name = json_string_value(json_object_get(mode, "mode"));
  json_int_t kernels = json_integer_value(json_object_get(mode, "kernels"));
  json_int_t dirty = json_integer_value(json_object_get(mode, "kernels_with_findings"));
  json_int_t opaque = json_integer_value(json_object_get(mode, "opaque_programs"));
  printf("  %-13s", name);
  if (opaque) printf("%lld program(s) opaque (nothing known); ", (long long)opaque);
  if (!dirty) {
    printf("%lld kernel(s) read, no finding\n", (long long)kernels);
    return;
  }
  printf("%lld of %lld kernel(s) read have findings:\n", (long long)dirty, (long long)kernels);
  json_t *agg = json_object(); /* what -> {classes, kernels, count} */
  size_t i, k, f;
  json_t *p, *kr, *fd;
  json_array_foreach(json_object_get(mode, "programs"), i, p) {
    json_array_foreach(json_object_get(p, "kernels"), k, kr) {
      json_t *seen = json_object();
      json_array_foreach(json_object_get(kr, "findings"), f, fd) {
        const char *what = json_string_value(json_object_get(fd, "what"));
        json_t *a = json_object_get(agg, what);
        if (!a) {
          a = json_pack("{s:O, s:I, s:I}", "classes", json_object_get(fd, "classes"), "kernels", (json_int_t)0, "count",
                        (json_int_t)0);
          json_object_set_new(agg, what, a);
        }
        json_object_set_new(a, "count",
                            json_integer(json_integer_value(json_object_get(a, "count")) +
                                         json_integer_value(json_object_get(fd, "count"))));
        if (!json_object_get(seen, what)) {
          json_object_set_new(seen, what, json_true());
          json_object_set_new(a, "kernels", json_integer(json_integer_value(json_object_get(a, "kernels")) + 1));
        }
      }
      json_decref(seen);
    }
  }
  const char *what;
  json_t *a;
  json_object_foreach(agg, what, a) {
    char cls[64] = "";
    size_t c, at = 0;
    json_t *cn;
    json_array_foreach(json_object_get(a, "classes"), c, cn) {
      at += (size_t)snprintf(cls + at, sizeof cls - at, "%s%s", at ? "," : "", json_string_value(cn));
    }
    printf("    %-14s %-54s %4lld in %lld kernel(s)\n", cls, what,
           (long long)json_integer_value(json_object_get(a, "count")),
           (long long)json_integer_value(json_object_get(a, "kernels")));
  }
  json_decref(agg);
  if (!details) return;
  json_array_foreach(json_object_get(mode, "programs"), i, p) {
    char label[160];
    program_label(label, sizeof label, p);
    json_array_foreach(json_object_get(p, "kernels"), k, kr) {
      json_array_foreach(json_object_get(kr, "findings"), f, fd) {
        const char *where = json_string_value(json_object_get(fd, "where"));
        const char *kn = json_string_value(json_object_get(kr, "kernel"));
        printf("      %s %s %s: %s x%lld%s%s\n", label, json_string_value(json_object_get(p, "dtype")), kn,
               json_string_value(json_object_get(fd, "what")),
               (long long)json_integer_value(json_object_get(fd, "count")), strcmp(where, kn) ? " in " : "",
               strcmp(where, kn) ? where : "");
      }
    }
  }
}

static void print_device(json_t *dev, int details) {
  printf("[%lld] %s\n", (long long)json_integer_value(json_object_get(dev, "index")),
         json_string_value(json_object_get(dev, "device")));
  json_t *modes = json_object_get(dev, "modes");
  size_t nm = json_array_size(modes), i, k;
  json_t *m, *p, *kr;
  json_t *first = json_array_get(modes, 0);
  /* the binary notes: once when every mode reads the same way */
  int same = 1;
  for (i = 1; i < nm; i++) {
    json_t *a = json_array_get(json_object_get(first, "programs"), 0);
    json_t *b = json_array_get(json_object_get(json_array_get(modes, i), "programs"), 0);
    same &= a && b && json_equal(json_object_get(a, "note"), json_object_get(b, "note"));
  }
  json_array_foreach(modes, i, m) {
    char label[48] = "";
    if (!same) snprintf(label, sizeof label, " (%s)", json_string_value(json_object_get(m, "mode")));
    if (same && i > 0) break;
    print_notes(m, label);
  }
  if (json_integer_value(json_object_get(dev, "f64_programs")) == 0)
    printf("  f64: %s\n", json_string_value(json_object_get(dev, "f64_note")));
  printf("  %-30s %-5s %-26s", "program", "dtype", "kernel");
  json_array_foreach(modes, i, m) printf(i + 1 < nm ? " %-18s" : " %s", json_string_value(json_object_get(m, "mode")));
  printf("\n");
  /* rows: the first mode's programs and kernels (every mode builds the same ones) */
  json_array_foreach(json_object_get(first, "programs"), i, p) {
    char label[160];
    program_label(label, sizeof label, p);
    json_t *ks = json_object_get(p, "kernels");
    size_t nk = json_array_size(ks);
    for (k = 0; k < (nk ? nk : 1); k++) {
      kr = json_array_get(ks, k);
      const char *kn = kr ? json_string_value(json_object_get(kr, "kernel")) : "(no kernel read)";
      printf("  %-30.30s %-5s %-26.26s", label, json_string_value(json_object_get(p, "dtype")), kn);
      size_t j;
      json_array_foreach(modes, j, m) {
        json_t *mp = find_program(m, p);
        char c[96];
        cell(c, sizeof c, mp, find_kernel(mp, kn));
        printf(j + 1 < nm ? " %-18s" : " %s", c);
      }
      printf("\n");
    }
  }
  json_array_foreach(modes, i, m) print_summary(m, details);
}

static void print_binary(json_t *o, int details) {
  printf("%s: %s, read as %s: %s\n", json_string_value(json_object_get(o, "file")),
         json_string_value(json_object_get(o, "format")), json_string_value(json_object_get(o, "depth")),
         json_string_value(json_object_get(o, "note")));
  size_t k, f;
  json_t *kr, *fd;
  json_array_foreach(json_object_get(o, "kernels"), k, kr) {
    char c[96];
    cell(c, sizeof c, o, kr);
    printf("  %-32s %s\n", json_string_value(json_object_get(kr, "kernel")), c);
    json_array_foreach(json_object_get(kr, "findings"), f, fd) {
      if (!details && f >= 8) {
        printf("    ... (--details lists all %zu)\n", json_array_size(json_object_get(kr, "findings")));
        break;
      }
      const char *where = json_string_value(json_object_get(fd, "where"));
      const char *kn = json_string_value(json_object_get(kr, "kernel"));
      printf("    %-52s x%lld%s%s\n", json_string_value(json_object_get(fd, "what")),
             (long long)json_integer_value(json_object_get(fd, "count")), strcmp(where, kn) ? "  in " : "",
             strcmp(where, kn) ? where : "");
    }
  }
  if (json_array_size(json_object_get(o, "kernels")) == 0 &&
      strcmp(json_string_value(json_object_get(o, "depth")), "opaque"))
    printf("  (no kernel in this binary)\n");
}

/* ---- the command ------------------------------------------------------------------------------------- */

static int audit_file(const char *path, const rcl_audit_options *ao, int json, int details) {
  FILE *f = fopen(path, "rb");
  if (!f) return cli_error("cannot open %s: %s", path, strerror(errno));
  size_t cap = 1 << 16, len = 0;
  unsigned char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += got;
    if (len == cap) {
      unsigned char *g = realloc(buf, cap *= 2);
      if (!g) free(buf);
      buf = g;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf) return cli_error("out of memory reading %s", path);
  if (bad) {
    free(buf);
    return cli_error("cannot read %s", path);
  }
  rcl_audit_report *r;
  int rc = rcl_audit_binary(&r, buf, len, ao);
  free(buf);
  if (rc) return cli_fail("auditing %s", path);
  json_t *o = json_pack("{s:s, s:I}", "file", path, "size", (json_int_t)len);
  report_into(o, r);
  int dirty = rcl_audit_report_has_findings(r);
  json_object_set_new(o, "clean", json_boolean(!dirty));
  rcl_audit_report_free(r);
  if (json)
    cli_json_print(o);
  else {
    print_binary(o, details);
    json_decref(o);
  }
  return dirty ? 1 : 0;
}

/* --mode reproducible|native|both into bits (bit 0 reproducible, bit 1 native). */
static int opt_mode(void *target, const char *opt, const char *value) {
  int m = !strcmp(value, "reproducible") ? 1 : !strcmp(value, "native") ? 2 : !strcmp(value, "both") ? 3 : 0;
  if (!m) return cli_error("%s \"%s\": expected reproducible, native or both", opt, value);
  *(int *)target = m;
  return 0;
}

/* --objdump: the library reads it from the environment, as it does for the llvm-dis default. */
static int opt_objdump(void *target, const char *opt, const char *value) {
  (void)target;
  (void)opt;
  if (setenv("REPROCL_OBJDUMP", value, 1) != 0) return cli_error("cannot set REPROCL_OBJDUMP: %s", strerror(errno));
  return 0;
}

/* What a device audit found, over every device. */
typedef struct {
  int modes, progress, dirty;
  size_t opaque; /* reproducible-mode programs that could not be read */
  const char *save;
  const rcl_audit_options *ao;
} audit_run;

/* Audits device i (of repro and, for native mode, native) into its entry of devs. */
static int audit_device(audit_run *a, json_t *devs, cli_devices *repro, cli_devices *native, size_t i) {
  json_t *dev = json_object(), *ms = json_array();
  json_object_set_new(dev, "index", json_integer((json_int_t)repro->index[i]));
  json_object_set_new(dev, "device", json_string(repro->name[i]));
  json_object_set_new(dev, "modes", ms);
  json_array_append_new(devs, dev);
  size_t f64 = 0;
  int rc = 0;
  for (int m = 0; m < 2 && !rc; m++) {
    if (!(a->modes & (1 << m))) continue;
    walk w = {json_array(), repro, i, m ? "native" : "reproducible", a->progress, a->save};
    json_t *mo = json_pack("{s:s, s:o}", "mode", w.mode, "programs", w.programs);
    json_array_append_new(ms, mo);
    size_t n = 0;
    if (rcl_audit_library(m ? native->ctx[i] : repro->ctx[i], a->ao, on_program, &w, &n))
      rc = cli_fail("auditing %s in %s mode", repro->name[i], w.mode);
    summarise(mo);
    if (!m) {
      a->dirty |= json_integer_value(json_object_get(mo, "kernels_with_findings")) != 0;
      a->opaque += (size_t)json_integer_value(json_object_get(mo, "opaque_programs"));
    }
    size_t k;
    json_t *p;
    f64 = 0;
    json_array_foreach(w.programs, k, p) f64 += !strcmp(json_string_value(json_object_get(p, "dtype")), "f64");
  }
  json_object_set_new(dev, "f64_programs", json_integer((json_int_t)f64));
  json_object_set_new(
      dev, "f64_note",
      json_string(rcl_context_profile(repro->ctx[i])->fp64 ? "supported" : "not built: the device has no fp64"));
  if (a->progress) fprintf(stderr, "\r%*s\r", 120, "");
  return rc;
}

static void print_devices(const audit_run *a, json_t *devs, int details) {
  size_t i;
  json_t *dev;
  json_array_foreach(devs, i, dev) {
    if (i) printf("\n");
    print_device(dev, details);
  }
  if (!(a->modes & 1)) return;
  printf("\nreproducible builds: %s", a->dirty ? "FINDINGS (see above): the contracts are not kept"
                                               : "no contract-breaking instruction in what could be read");
  if (a->opaque) printf(" (%zu program(s) opaque: nothing is known about them)", a->opaque);
  printf("\n");
}

/* Builds and audits every program on every device of the spec. */
static int audit_devices(audit_run *a, const char *device, int json, int details) {
  cli_devices repro = {0}, native = {0};
  int rc = cli_devices_open(&repro, device, RCL_MODE_REPRODUCIBLE);
  if (rc) return rc;
  if ((a->modes & 2) && (rc = cli_devices_clone(&native, &repro, RCL_MODE_NATIVE))) {
    cli_devices_close(&repro);
    return rc;
  }
  json_t *doc = json_object(), *devs = json_array();
  json_object_set_new(doc, "reprocl", json_string(REPROCL_VERSION_STRING));
  json_object_set_new(doc, "devices", devs);
  a->progress = !json && isatty(STDERR_FILENO);
  for (size_t i = 0; i < repro.count && !rc; i++) rc = audit_device(a, devs, &repro, &native, i);
  json_object_set_new(doc, "clean", json_boolean(!a->dirty));
  if (!rc && json) {
    cli_json_print(doc);
    doc = NULL;
  } else if (!rc)
    print_devices(a, devs, details);
  json_decref(doc);
  cli_devices_close(&native);
  cli_devices_close(&repro);
  return rc ? rc : a->dirty ? CLI_EXIT_FINDING : CLI_EXIT_OK;
}

int cmd_audit(int argc, char **argv) {
  const char *device = NULL, *binary = NULL, *save = NULL;
  int json = 0, details = 0, modes = 3;
  rcl_audit_options ao = RCL_AUDIT_OPTIONS_INIT;
  const cli_opt opts[] = {
      CLI_OPT_DEVICE(&device, CLI_DEFAULT_DEVICE),
      CLI_VAL("mode", &modes, opt_mode, "reproducible|native|both", "which builds to audit (default: both)"),
      CLI_STR("binary", &binary, "FILE", "audit this binary file instead of building"),
      CLI_FLAG_S('v', "details", &details, "list every finding with the function it is in"),
      CLI_OPT_JSON(&json),
      CLI_STR("save", &save, "DIR", "write each binary read to DIR"),
      CLI_STR("llvm-dis", &ao.llvm_dis, "TOOL", "the bitcode disassembler"),
      CLI_VAL("objdump", NULL, opt_objdump, "TOOL", "the machine-code disassembler"),
      CLI_END};
  const cli_cmd_spec spec = {
      "audit",
      "[--device D|all] [--mode reproducible|native|both] [--details] [--json]\n"
      "                     [--save DIR] [--llvm-dis TOOL] [--objdump TOOL]\n"
      "       reprocl audit --binary FILE [--details] [--json] [--llvm-dis TOOL] [--objdump TOOL]",
      "Builds every kernel reprocl has (the programs `reprocl compile` bundles: every family, each dtype the\n"
      "device supports) in reproducible and in native mode, reads each program binary where its format is\n"
      "known and lists per kernel the instructions that would break a contract:\n"
      "  fma        fused or contractible multiply-add (fma.rn.f32, llvm.fmuladd, 'contract', no ContractionOff,\n"
      "             vfmadd231ss)\n"
      "  approx     approximate divide, sqrt, reciprocal or transcendental (div.full, .approx, !fpmath, afn,\n"
      "             vrcp14ps)\n"
      "  ftz        subnormals flushed to zero (.ftz, denormal-fp-math=preserve-sign, ldmxcsr setting FTZ/DAZ)\n"
      "  fast-math  re-association or no-NaN/Inf/signed-zero assumptions (reassoc, nnan, ninf, nsz, fast)\n"
      "Formats read: NVIDIA PTX (assembly), PoCL's LLVM bitcode (IR, via llvm-dis), Rusticl's SPIR-V\n"
      "(front-end IR only: the final code is opaque), the x86-64 machine code of Intel's OpenCL CPU runtime\n"
      "and of x86-64 ELF objects (via objdump). Other binaries are reported as opaque.\n"
      "--details lists every finding with the function it is in. --save DIR writes each binary read to\n"
      "DIR/<device>-<mode>-<program>-<dtype>.<ptx|poclbin|spv|elf|bin>. --llvm-dis names the bitcode\n"
      "disassembler (default: $REPROCL_LLVM_DIS, else the newest llvm-dis-N on PATH that reads it), --objdump\n"
      "the machine-code one (default: $REPROCL_OBJDUMP, else objdump from binutils).",
      opts,
      "a kernel built in reproducible mode has a finding (with --binary: any finding)",
      0,
      0};
  CLI_PARSE(&spec, argc, argv, NULL, NULL);
  if (binary && device) return cli_error("--binary audits a file; it takes no --device");
  if (binary && save) return cli_error("--save writes the binaries a device audit builds; --binary reads one");
  if (binary) return audit_file(binary, &ao, json, details);
  if (save && mkdir(save, 0777) != 0 && errno != EEXIST)
    return cli_error("cannot create %s: %s", save, strerror(errno));
  audit_run a = {modes, 0, 0, 0, save, &ao};
  return audit_devices(&a, device, json, details);
}
