/* The one option parser of every command (see opt.h). */
#include "opt.h"

#include <string.h>

#include "cli.h"

static const cli_opt help_opt = {CLI_OPT_FLAG, "help", 'h', NULL, NULL, NULL, "show this help"};

static int is_option(const cli_opt *o) {
  return o->kind == CLI_OPT_FLAG || o->kind == CLI_OPT_STRING || o->kind == CLI_OPT_PARSE || o->kind == CLI_OPT_REJECT;
}

static const cli_opt *find_long(const cli_opt *opts, const char *name, size_t len) {
  if (len == 4 && !strncmp(name, "help", 4)) return &help_opt;
  for (const cli_opt *o = opts; o && o->kind != CLI_OPT_END; o++)
    if (is_option(o) && strlen(o->name) == len && !strncmp(o->name, name, len)) return o;
  return NULL;
}

static const cli_opt *find_short(const cli_opt *opts, char c) {
  if (c == 'h') return &help_opt;
  for (const cli_opt *o = opts; o && o->kind != CLI_OPT_END; o++)
    if (is_option(o) && o->short_name == c) return o;
  return NULL;
}

/* Edit distance of a and b[0..bl) counting a swap of two neighbours as one edit (optimal string alignment),
 * capped: enough to suggest `--dtype` for `--dtyp` and `--grid` for `--gird`. */
static size_t distance(const char *a, const char *b, size_t bl) {
  size_t al = strlen(a), d[64][64];
  if (al >= 63 || bl >= 63) return 99;
  for (size_t i = 0; i <= al; i++) d[i][0] = i;
  for (size_t j = 0; j <= bl; j++) d[0][j] = j;
  for (size_t i = 1; i <= al; i++)
    for (size_t j = 1; j <= bl; j++) {
      size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[al][bl];
}

const char *cli_opt_nearest(const char *word, size_t len, const char *const *names, size_t n) {
  const char *best = NULL;
  size_t bd = 3;
  for (size_t i = 0; i < n; i++) {
    size_t d = distance(names[i], word, len);
    if (len >= 2 && !strncmp(names[i], word, len)) d = 1; /* a prefix, as getopt took it before */
    if (d < bd) bd = d, best = names[i];
  }
  return best;
}

static int unknown(const cli_cmd_spec *cmd, const char *arg, const char *name, size_t len) {
  const char *names[128];
  size_t n = 0;
  for (const cli_opt *o = cmd->opts; o && o->kind != CLI_OPT_END && n < 128; o++)
    if (is_option(o)) names[n++] = o->name;
  const char *best = cli_opt_nearest(name, len, names, n);
  if (best)
    return cli_error("unknown option %s (did you mean --%s?); `reprocl %s --help` lists the options", arg, best,
                     cmd->name);
  return cli_error("unknown option %s; `reprocl %s --help` lists the options", arg, cmd->name);
}

/* Applies option o (spelled `spelled`) with value (NULL for a flag). */
static int apply(const cli_opt *o, const char *spelled, const char *value) {
  switch (o->kind) {
  case CLI_OPT_FLAG:
    *(int *)o->target = 1;
    return 0;
  case CLI_OPT_STRING:
    *(const char **)o->target = value;
    return 0;
  case CLI_OPT_PARSE:
    return o->fn(o->target, spelled, value);
  default:
    return 0;
  }
}

int cli_opt_parse(const cli_cmd_spec *cmd, int argc, char **argv, const char **args, int *nargs) {
  int n = 0, only_args = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (only_args || a[0] != '-' || a[1] == '\0') {
      if (cmd->max_args >= 0 && n >= cmd->max_args)
        return cmd->max_args
                   ? cli_error("unexpected argument \"%s\" (%s takes at most %d)", a, cmd->name, cmd->max_args)
                   : cli_error("unexpected argument \"%s\"", a);
      args[n++] = a;
      continue;
    }
    if (!strcmp(a, "--")) {
      only_args = 1;
      continue;
    }
    const cli_opt *o;
    const char *value = NULL;
    char spelled[72];
    if (a[1] == '-') {
      const char *name = a + 2, *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      if (!(o = find_long(cmd->opts, name, len))) return unknown(cmd, a, name, len);
      snprintf(spelled, sizeof spelled, "--%s", o->name);
      if (eq) {
        if (o->kind == CLI_OPT_FLAG || o->kind == CLI_OPT_REJECT)
          return cli_error("%s takes no value (got \"%s\")", spelled, a);
        value = eq + 1;
      }
    } else {
      if (!(o = find_short(cmd->opts, a[1]))) return unknown(cmd, a, a + 1, strlen(a + 1));
      snprintf(spelled, sizeof spelled, "-%c", a[1]);
      if (a[2]) {
        if (o->kind == CLI_OPT_FLAG || o->kind == CLI_OPT_REJECT)
          return cli_error("unknown option %s (%s takes no value)", a, spelled);
        value = a + 2;
      }
    }
    if (o == &help_opt) {
      cli_opt_help(stdout, cmd);
      return CLI_OPT_HELP;
    }
    if (o->kind == CLI_OPT_REJECT) {
      char why[512];
      snprintf(why, sizeof why, "%s", o->help);
      for (char *p = why; *p; p++)
        if (*p == '\n') *p = ' ';
      return cli_error("%s does not apply to reprocl %s: %s", spelled, cmd->name, why);
    }
    if (o->kind != CLI_OPT_FLAG && o->kind != CLI_OPT_REJECT && !value) {
      if (i + 1 >= argc) return cli_error("%s needs a value (%s)", spelled, o->value_name ? o->value_name : "VALUE");
      value = argv[++i];
    }
    int rc = apply(o, spelled, value);
    if (rc) return rc;
  }
  if (n < cmd->min_args)
    return cli_error("missing argument%s: usage: reprocl %s %s", cmd->min_args - n > 1 ? "s" : "", cmd->name,
                     cmd->synopsis ? cmd->synopsis : "");
  if (nargs) *nargs = n;
  return 0;
}

/* Prints text indented by `indent` after its first line. */
static void put_indented(FILE *f, const char *text, int indent) {
  for (const char *p = text; *p; p++) {
    fputc(*p, f);
    if (*p == '\n' && p[1]) fprintf(f, "%*s", indent, "");
  }
}

void cli_opt_help(FILE *f, const cli_cmd_spec *cmd) {
  fprintf(f, "usage: reprocl %s %s\n\n", cmd->name, cmd->synopsis ? cmd->synopsis : "[options]");
  if (cmd->about) fprintf(f, "%s\n", cmd->about);
  const int col = 26;
  fprintf(f, "\noptions:\n");
  for (const cli_opt *o = cmd->opts;; o++) {
    const cli_opt *p = (!o || o->kind == CLI_OPT_END) ? &help_opt : o;
    if (p->kind == CLI_OPT_SECTION) {
      fprintf(f, "%s:\n", p->name);
      continue;
    }
    char left[96];
    int w = snprintf(left, sizeof left, "  %s%c%s--%s%s%s", p->short_name ? "-" : "", p->short_name,
                     p->short_name ? ", " : "", p->name, p->value_name ? " " : "", p->value_name ? p->value_name : "");
    if (!p->short_name)
      w = snprintf(left, sizeof left, "  --%s%s%s", p->name, p->value_name ? " " : "",
                   p->value_name ? p->value_name : "");
    fputs(left, f);
    if (w >= col - 1)
      fprintf(f, "\n%*s", col, "");
    else
      fprintf(f, "%*s", col - w, "");
    if (p->kind == CLI_OPT_REJECT) fputs("does not apply here: ", f);
    put_indented(f, p->help ? p->help : "", col);
    fputc('\n', f);
    if (p == &help_opt) break;
  }
  fprintf(f, "\nexit status: 0 success%s\n", cmd->finding ? ", every result agrees" : "");
  if (cmd->finding) {
    fprintf(f, "             1 ");
    put_indented(f, cmd->finding, 15);
    fputc('\n', f);
  }
  fprintf(f, "             2 bad usage or input\n             3 could not run\n(the rule of every command: docs/cli.md)\n");
}

int cli_opt_dtype(void *target, const char *opt, const char *value) {
  return rcl_dtype_parse((rcl_dtype *)target, value) ? cli_error("%s: %s", opt, rcl_error_last()) : 0;
}

int cli_opt_repeats(void *target, const char *opt, const char *value) {
  return cli_parse_int((int *)target, opt, value, 1, 1000);
}

int cli_opt_size(void *target, const char *opt, const char *value) {
  return cli_parse_size((size_t *)target, opt, value);
}

int cli_opt_double(void *target, const char *opt, const char *value) {
  return cli_parse_double((double *)target, opt, value);
}

int cli_opt_u64(void *target, const char *opt, const char *value) {
  return cli_parse_u64((uint64_t *)target, opt, value);
}
