/* Declarative command-line options (after libgit2's src/cli/opt.h): each command describes its options in a
 * table, and one parser serves every command, so every command spells, checks and documents its options the
 * same way. Long options match exactly (no prefix abbreviations: `--dtyp` is an error naming `--dtype`), take
 * their value as `--name VALUE` or `--name=VALUE`, and `--help`/`-h` is built in. Errors name the command
 * ("reprocl run: error: ...") and exit with status 2 (the exit-status rule is in cli.h and docs/cli.md). */
#ifndef REPROCL_CLI_OPT_H
#define REPROCL_CLI_OPT_H
#include <stddef.h>
#include <stdio.h>

typedef enum {
  CLI_OPT_END = 0, /* terminates a table */
  CLI_OPT_FLAG,    /* no value: sets *(int *)target to 1 */
  CLI_OPT_STRING,  /* a value: *(const char **)target = the argument (last one wins) */
  CLI_OPT_PARSE,   /* a value, given to fn(target, "--name", value) at each occurrence */
  CLI_OPT_SECTION, /* no option: a heading in the help ("tunables:") */
  CLI_OPT_REJECT   /* a common option that does not apply to this command: an error saying why (the help) */
} cli_opt_kind;

/* Parses value for option `opt` ("--dtype") into target; returns 0 or an exit status (cli_error's 2). */
typedef int (*cli_opt_fn)(void *target, const char *opt, const char *value);

typedef struct {
  cli_opt_kind kind;
  const char *name;       /* long name without "--" (the heading for CLI_OPT_SECTION) */
  char short_name;        /* one-letter alias ("-o"), or 0 */
  const char *value_name; /* the value's name in the help: "FILE", "f32|f64" */
  void *target;
  cli_opt_fn fn;
  const char *help; /* one line; further lines after '\n' are indented under it */
} cli_opt;

#define CLI_FLAG(name, target, help)                                                                                   \
  { CLI_OPT_FLAG, name, 0, NULL, target, NULL, help }
#define CLI_STR(name, target, value_name, help)                                                                        \
  { CLI_OPT_STRING, name, 0, value_name, target, NULL, help }
#define CLI_VAL(name, target, fn, value_name, help)                                                                    \
  { CLI_OPT_PARSE, name, 0, value_name, target, fn, help }
/* The same with a one-letter alias. */
#define CLI_FLAG_S(c, name, target, help)                                                                              \
  { CLI_OPT_FLAG, name, c, NULL, target, NULL, help }
#define CLI_STR_S(c, name, target, value_name, help)                                                                   \
  { CLI_OPT_STRING, name, c, value_name, target, NULL, help }
/* A common option this command refuses, and why (shown in the help and in the error). */
#define CLI_NOT_HERE(name, why)                                                                                        \
  { CLI_OPT_REJECT, name, 0, NULL, NULL, NULL, why }
#define CLI_SECTION(title)                                                                                             \
  { CLI_OPT_SECTION, title, 0, NULL, NULL, NULL, NULL }
#define CLI_END                                                                                                        \
  { CLI_OPT_END, NULL, 0, NULL, NULL, NULL, NULL }

/* The common options: the same name, value and help text in every command that has them. */
/* dflt: the default in words, e.g. CLI_DEFAULT_DEVICE or "all". */
#define CLI_OPT_DEVICE(target, dflt)                                                                                   \
  CLI_STR("device", target, "D|all", "device index, name substring or 'all' (default: " dflt ")")
#define CLI_DEFAULT_DEVICE "$REPROCL_DEVICE or 0"
#define CLI_OPT_DTYPE(target) CLI_VAL("dtype", target, cli_opt_dtype, "f32|f64", "element type")
#define CLI_OPT_JSON(target) CLI_FLAG("json", target, "print the result as JSON on stdout")
#define CLI_OPT_NATIVE(target)                                                                                         \
  CLI_FLAG("native", target, "also run the vendor-default (native) build and show how far it drifts")
#define CLI_OPT_OUT(target, what) CLI_STR("out", target, "FILE", what)
/* The output file of the commands that write one document (bench, compile, fingerprint): -o, --output. */
#define CLI_OPT_OUTPUT(target, what) CLI_STR_S('o', "output", target, "FILE", what)

/* A command: its name as typed ("spmv", "run reduce"), the rest of its usage line, what it does, its options,
 * and what exit status 1 means for it (NULL: the command has no finding, so never exits 1). Positional
 * arguments: between min_args and max_args (max_args < 0: any number). */
typedef struct {
  const char *name;
  const char *synopsis;
  const char *about;
  const cli_opt *opts;
  const char *finding;
  int min_args, max_args;
} cli_cmd_spec;

/* Returned by cli_opt_parse when it printed the help: the command returns 0. */
#define CLI_OPT_HELP (-1)

/* Parses argv[1..argc) (argv[0] is the command's own name) by the table of cmd. The positional arguments are
 * left in argv order in args[0..*nargs) (pointers into argv; args may be NULL when max_args is 0; it must hold
 * max_args entries otherwise, or argc for max_args < 0). Returns 0, CLI_OPT_HELP after printing the help on
 * stdout, or the exit status 2 after printing the error. */
int cli_opt_parse(const cli_cmd_spec *cmd, int argc, char **argv, const char **args, int *nargs);
/* Prints the help of cmd: usage line, description, the options table, the exit statuses. */
void cli_opt_help(FILE *f, const cli_cmd_spec *cmd);
/* The usual way to begin a command:  CLI_PARSE(&spec, argc, argv, NULL, NULL); */
#define CLI_PARSE(cmd, argc, argv, args, nargs)                                                                        \
  do {                                                                                                                 \
    int cli_parse_rc_ = cli_opt_parse(cmd, argc, argv, args, nargs);                                                   \
    if (cli_parse_rc_) return cli_parse_rc_ == CLI_OPT_HELP ? 0 : cli_parse_rc_;                                       \
  } while (0)

/* Value parsers for CLI_VAL, by target type: rcl_dtype (cli_opt_dtype); int in [1, 1000] (cli_opt_repeats, for
 * --repeats); size_t with k/M/G and 2^k (cli_opt_size); double (cli_opt_double); uint64_t (cli_opt_u64). */
int cli_opt_dtype(void *target, const char *opt, const char *value);
int cli_opt_repeats(void *target, const char *opt, const char *value);
int cli_opt_size(void *target, const char *opt, const char *value);
int cli_opt_double(void *target, const char *opt, const char *value);
int cli_opt_u64(void *target, const char *opt, const char *value);

/* The name in names[0..n) nearest to word[0..len) by edit distance (at most 2 edits, or word a prefix of
 * it), or NULL: the suggestion in "unknown option --dtyp (did you mean --dtype?)" and for commands. */
const char *cli_opt_nearest(const char *word, size_t len, const char *const *names, size_t n);

#endif
