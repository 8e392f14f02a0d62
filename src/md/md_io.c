/* MD inputs and outputs: LAMMPS data files (atom_style atomic) and extended XYZ in, a deterministic lattice
 * generator (fcc, bcc, sc with velocities from rcl_rng), extended XYZ frames out. Malformed input is
 * answered with RCL_ERR_PARSE and "file:line: what was wrong". */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>

#include "md/md_internal.h"

/* ---- line reading -------------------------------------------------------------------------------- */

typedef struct {
  FILE *f;
  const char *path;
  size_t line;
  char *buf;
  size_t cap;
  char comment[64]; /* the start of the '#' comment the last stripped line had (LAMMPS style hints) */
  long long size;   /* the file's size in bytes: a claimed atom count is checked against what follows */
} reader;

/* Atom counts up to this are allocated without checking them against the file's size first. */
#define MD_SMALL_COUNT 4096

/* Bytes from the reader's position to the end of the file. */
static long long bytes_left(const reader *r) {
  long pos = ftell(r->f);
  return pos < 0 || pos > r->size ? 0 : r->size - pos;
}

/* The next line without its newline (and, with strip, without a '#' comment and trailing blanks);
 * 0 at end of file, < 0 on error. */
static int next_line(reader *r, int strip) {
  size_t len = 0;
  int c, any = 0;
  while ((c = fgetc(r->f)) != EOF) {
    any = 1;
    if (c == '\n') break;
    if (len + 2 > r->cap) {
      size_t nc = r->cap ? 2 * r->cap : 256;
      char *nb = rcl__realloc(r->buf, nc);
      if (!nb) return RCL_ERR_OUT_OF_MEMORY;
      r->buf = nb;
      r->cap = nc;
    }
    r->buf[len++] = (char)c;
  }
  if (ferror(r->f)) return rcl__fail(RCL_ERR_IO, "%s:%zu: read error: %s", r->path, r->line + 1, strerror(errno));
  if (!any) return 0;
  if (!r->buf) {
    r->buf = rcl__malloc(16);
    if (!r->buf) return RCL_ERR_OUT_OF_MEMORY;
    r->cap = 16;
  }
  r->buf[len] = '\0';
  r->line++;
  if (len && r->buf[len - 1] == '\r') r->buf[--len] = '\0';
  if (strip) {
    char *h = strchr(r->buf, '#');
    r->comment[0] = '\0';
    if (h) {
      snprintf(r->comment, sizeof r->comment, "%s", h + 1);
      *h = '\0';
    }
    len = strlen(r->buf);
    while (len && isspace((unsigned char)r->buf[len - 1])) r->buf[--len] = '\0';
  }
  return 1;
}

static int blank(const char *s) {
  while (*s && isspace((unsigned char)*s)) s++;
  return *s == '\0';
}

/* Splits s in place into at most max whitespace-separated tokens; returns their number. */
static int tokens(char *s, char **tok, int max) {
  int n = 0;
  while (*s) {
    while (*s && isspace((unsigned char)*s)) s++;
    if (!*s) break;
    if (n == max) return max + 1;
    tok[n++] = s;
    while (*s && !isspace((unsigned char)*s)) s++;
    if (*s) *s++ = '\0';
  }
  return n;
}

static int parse_double(double *out, const reader *r, const char *tok, const char *what) {
  char *end;
  errno = 0;
  double v = strtod(tok, &end);
  if (end == tok || *end || errno == ERANGE)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: %s \"%s\" is not a number", r->path, r->line, what, tok);
  if (!isfinite(v)) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: %s is %s", r->path, r->line, what, tok);
  *out = v;
  return 0;
}

static int parse_ll(long long *out, const reader *r, const char *tok, const char *what) {
  char *end;
  errno = 0;
  long long v = strtoll(tok, &end, 10);
  if (end == tok || *end || errno == ERANGE)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: %s \"%s\" is not an integer", r->path, r->line, what, tok);
  *out = v;
  return 0;
}

/* ---- LAMMPS data files ------------------------------------------------------------------------------ */

typedef struct {
  long long id;
  int type;
  double x[3], v[3];
  size_t line;
} raw_atom;

static int cmp_atom(const void *a, const void *b) {
  long long x = ((const raw_atom *)a)->id, y = ((const raw_atom *)b)->id;
  return (x > y) - (x < y);
}

static const char *const sections[] = {"Atoms", "Velocities", "Masses", "Pair Coeffs", "PairIJ Coeffs", NULL};
/* Sections of other atom styles and of molecular topology: named in the error. */
static const char *const foreign_sections[] = {"Bonds",
                                               "Angles",
                                               "Dihedrals",
                                               "Impropers",
                                               "Ellipsoids",
                                               "Lines",
                                               "Triangles",
                                               "Bodies",
                                               "Bond Coeffs",
                                               "Angle Coeffs",
                                               "Dihedral Coeffs",
                                               "Improper Coeffs",
                                               "BondBond Coeffs",
                                               "BondAngle Coeffs",
                                               "MiddleBondTorsion Coeffs",
                                               "EndBondTorsion Coeffs",
                                               "AngleTorsion Coeffs",
                                               "AngleAngleTorsion Coeffs",
                                               "BondBond13 Coeffs",
                                               "AngleAngle Coeffs",
                                               NULL};

/* Which section a (comment-stripped) line starts, or -1. */
static int section_of(const char *s, const char *const *names) {
  while (*s && isspace((unsigned char)*s)) s++;
  for (int i = 0; names[i]; i++) {
    size_t l = strlen(names[i]);
    if (!strncmp(s, names[i], l) && blank(s + l)) return i;
  }
  return -1;
}

/* What a LAMMPS data file has declared and given so far. */
typedef struct {
  long long natoms, ntypes; /* -1: not declared */
  int have_box[3];
  double lo[3], hi[3], mass[RCL_MD_MAX_TYPES];
  int have_mass[RCL_MD_MAX_TYPES];
  raw_atom *atoms; /* natoms, in file order until the Atoms section ends, then sorted by ID */
  int have_atoms, have_vel, have_pair;
  rcl_md_lj pair; /* Pair Coeffs and PairIJ Coeffs */
} lammps;

/* One header line (comment stripped, not blank): a count, the box bounds of one axis, or a zero count of
 * molecular topology. */
static int header_line(lammps *L, reader *r) {
  char *tok[12], line[256];
  snprintf(line, sizeof line, "%s", r->buf);
  int nt = tokens(r->buf, tok, 8), rc;
  if (nt == 2 && !strcmp(tok[1], "atoms")) {
    rc = parse_ll(&L->natoms, r, tok[0], "the atom count");
    if (!rc && L->natoms < 0)
      rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: the header declares %lld atoms", r->path, r->line, L->natoms);
  } else if (nt == 3 && !strcmp(tok[1], "atom") && !strcmp(tok[2], "types")) {
    rc = parse_ll(&L->ntypes, r, tok[0], "the atom type count");
  } else if (nt == 4 && tok[2][0] >= 'x' && tok[2][0] <= 'z' && !strcmp(tok[2] + 1, "lo") && tok[3][0] == tok[2][0] &&
             !strcmp(tok[3] + 1, "hi")) {
    int d = tok[2][0] - 'x';
    rc = parse_double(&L->lo[d], r, tok[0], "the lower box bound");
    if (!rc) rc = parse_double(&L->hi[d], r, tok[1], "the upper box bound");
    L->have_box[d] = 1;
  } else if (nt == 6 && !strcmp(tok[3], "xy")) {
    rc = rcl__fail(RCL_ERR_PARSE,
                   "%s:%zu: triclinic boxes (xy xz yz) are not supported; reprocl needs an orthorhombic box", r->path,
                   r->line);
  } else if ((nt == 2 || nt == 3) &&
             (!strcmp(tok[1], "bonds") || !strcmp(tok[1], "angles") || !strcmp(tok[1], "dihedrals") ||
              !strcmp(tok[1], "impropers") || !strcmp(tok[1], "extra") || (nt == 3 && !strcmp(tok[2], "types")))) {
    long long v;
    rc = parse_ll(&v, r, tok[0], "a count");
    if (!rc && v != 0 && strcmp(tok[1], "extra"))
      rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: \"%s\": molecular topology is not supported (atom_style atomic only)",
                     r->path, r->line, line);
  } else {
    rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: unknown header line \"%s\"", r->path, r->line, line);
  }
  return rc;
}

/* The header: the first line is a title; then counts and box bounds until the first section, whose line
 * is left in r->buf (*pending = 1). */
static int read_header(lammps *L, reader *r, int *pending) {
  int got;
  if ((got = next_line(r, 0)) <= 0) return got < 0 ? got : rcl__fail(RCL_ERR_PARSE, "%s: the file is empty", r->path);
  while ((got = next_line(r, 1)) > 0) {
    if (blank(r->buf)) continue;
    if (section_of(r->buf, sections) >= 0 || section_of(r->buf, foreign_sections) >= 0) {
      *pending = 1;
      return 0;
    }
    int rc = header_line(L, r);
    if (rc) return rc;
  }
  return got < 0 ? got : 0;
}

/* What the header must declare, checked before anything is allocated for it. */
static int check_header(const lammps *L, const reader *r) {
  long long natoms = L->natoms, ntypes = L->ntypes;
  if (natoms < 0) return rcl__fail(RCL_ERR_PARSE, "%s: the header has no \"N atoms\" line", r->path);
  if (natoms == 0) return rcl__fail(RCL_ERR_PARSE, "%s: the file declares 0 atoms", r->path);
  if (natoms > (1ll << 30))
    return rcl__fail(RCL_ERR_PARSE, "%s: %lld atoms are more than reprocl supports (2^30)", r->path, natoms);
  if (ntypes < 1 || ntypes > RCL_MD_MAX_TYPES)
    return rcl__fail(RCL_ERR_PARSE, "%s: the header declares %lld atom types; reprocl supports 1..%d", r->path, ntypes,
                     RCL_MD_MAX_TYPES);
  for (int d = 0; d < 3; d++) {
    if (!L->have_box[d])
      return rcl__fail(RCL_ERR_PARSE, "%s: the header has no \"%clo %chi\" line", r->path, 'x' + d, 'x' + d);
    if (!(L->hi[d] > L->lo[d]))
      return rcl__fail(RCL_ERR_PARSE, "%s: box %clo %.17g is not below %chi %.17g", r->path, 'x' + d, L->lo[d], 'x' + d,
                       L->hi[d]);
  }
  /* Nothing is allocated beyond what the input can hold: each Atoms line needs at least "1 1 0 0 0\n"
   * (10 bytes; the last one may lack its newline), and the section line already read is behind us.
   * Small counts (a few hundred kB of tables at most) are left to the line-by-line checks, whose
   * messages name the line. */
  long long left = bytes_left(r);
  if (natoms > MD_SMALL_COUNT && natoms > (left + 1) / 10)
    return rcl__fail(RCL_ERR_PARSE,
                     "%s: the header declares %lld atoms but only %lld bytes follow it (an Atoms line "
                     "needs at least 10): truncated file or wrong count",
                     r->path, natoms, left);
  return 0;
}

/* An Atoms line: id type x y z [ix iy iz] (the image flags are checked, not kept), into *a. */
static int atoms_line(raw_atom *a, const lammps *L, const reader *r, char **tok, int nt) {
  long long id, ti, tj;
  if (nt != 5 && nt != 8)
    return rcl__fail(RCL_ERR_PARSE,
                     "%s:%zu: an Atoms line of atom_style atomic has 5 or 8 columns (id type x y z "
                     "[ix iy iz]), this one has %d",
                     r->path, r->line, nt > 10 ? 11 : nt);
  int rc = parse_ll(&id, r, tok[0], "the atom ID");
  if (!rc) rc = parse_ll(&ti, r, tok[1], "the atom type");
  for (int d = 0; d < 3 && !rc; d++) rc = parse_double(&a->x[d], r, tok[2 + d], "the coordinate");
  for (int d = 5; d < nt && !rc; d++) rc = parse_ll(&tj, r, tok[d], "the image flag");
  if (!rc && id < 1) rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: atom ID %lld is not positive", r->path, r->line, id);
  if (!rc && (ti < 1 || ti > L->ntypes))
    rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: atom %lld has type %lld; the header declares %lld types", r->path, r->line,
                   id, ti, L->ntypes);
  for (int d = 0; d < 3 && !rc; d++)
    if (a->x[d] < L->lo[d] || a->x[d] > L->hi[d])
      rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: atom %lld lies outside the box: %c = %.17g is not in [%.17g, %.17g]",
                     r->path, r->line, id, 'x' + d, a->x[d], L->lo[d], L->hi[d]);
  if (!rc) {
    a->id = id;
    a->type = (int)ti;
    a->line = r->line;
  }
  return rc;
}

/* A Velocities line: id vx vy vz, matched to the (sorted) atoms; seen counts each atom's lines. */
static int velocities_line(lammps *L, const reader *r, char **tok, int nt, int *seen) {
  long long id;
  double v[4];
  if (nt != 4)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: a Velocities line has 4 columns (id vx vy vz), this one has %d", r->path,
                     r->line, nt > 10 ? 11 : nt);
  int rc = parse_ll(&id, r, tok[0], "the atom ID");
  for (int d = 0; d < 3 && !rc; d++) rc = parse_double(&v[d], r, tok[1 + d], "the velocity");
  if (rc) return rc;
  if (!L->have_atoms)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: Velocities must follow the Atoms section", r->path, r->line);
  raw_atom key = {id, 0, {0, 0, 0}, {0, 0, 0}, 0};
  raw_atom *a = bsearch(&key, L->atoms, (size_t)L->natoms, sizeof *L->atoms, cmp_atom);
  if (!a)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: velocity for atom %lld, which the Atoms section does not have", r->path,
                     r->line, id);
  if (seen[a - L->atoms]++)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: a second velocity for atom %lld", r->path, r->line, id);
  memcpy(a->v, v, sizeof a->v);
  return 0;
}

/* A Masses line: type mass. */
static int masses_line(lammps *L, const reader *r, char **tok, int nt) {
  long long ti;
  double m;
  if (nt != 2)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: a Masses line has 2 columns (type mass), this one has %d", r->path,
                     r->line, nt > 10 ? 11 : nt);
  int rc = parse_ll(&ti, r, tok[0], "the type");
  if (!rc) rc = parse_double(&m, r, tok[1], "the mass");
  if (!rc && (ti < 1 || ti > L->ntypes))
    rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: mass for type %lld; the header declares %lld types", r->path, r->line, ti,
                   L->ntypes);
  if (!rc && !(m > 0))
    rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: the mass of type %lld is %g; it must be positive", r->path, r->line, ti, m);
  if (!rc) {
    L->mass[ti - 1] = m;
    L->have_mass[ti - 1] = 1;
  }
  return rc;
}

/* A Pair Coeffs line (type eps sigma [cut]) or, ij, a PairIJ Coeffs line (i j eps sigma [cut]). */
static int coeffs_line(lammps *L, const reader *r, char **tok, int nt, int ij) {
  long long ti, tj;
  double v[2];
  int base = ij ? 2 : 1;
  if (nt != base + 2 && nt != base + 3)
    return rcl__fail(RCL_ERR_PARSE,
                     "%s:%zu: a %s line has %d or %d columns (%s epsilon sigma [cutoff]), this one "
                     "has %d",
                     r->path, r->line, sections[ij ? 4 : 3], base + 2, base + 3, ij ? "i j" : "type",
                     nt > 10 ? 11 : nt);
  int rc = parse_ll(&ti, r, tok[0], "the type");
  tj = ti;
  if (!rc && ij) rc = parse_ll(&tj, r, tok[1], "the type");
  if (!rc) rc = parse_double(&v[0], r, tok[base], "epsilon");
  if (!rc) rc = parse_double(&v[1], r, tok[base + 1], "sigma");
  if (!rc && (ti < 1 || ti > L->ntypes || tj < 1 || tj > L->ntypes))
    rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: coefficients for type %lld %lld; the header declares %lld types", r->path,
                   r->line, ti, tj, L->ntypes);
  if (!rc && (!(v[0] >= 0) || !(v[1] > 0)))
    rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: epsilon %g and sigma %g: epsilon must be >= 0 and sigma > 0", r->path,
                   r->line, v[0], v[1]);
  if (rc) return rc;
  if (ij) {
    rcl_md_lj_set_pair(&L->pair, (int)ti, (int)tj, v[0], v[1]);
  } else {
    L->pair.epsilon[ti - 1] = v[0];
    L->pair.sigma[ti - 1] = v[1];
  }
  return 0;
}

/* The want lines of section sec (blank lines skipped; another section's line before them is an error). */
static int section_lines(lammps *L, reader *r, int sec, size_t header_line, long long want, int *seen) {
  char *tok[12];
  for (long long done = 0; done < want;) {
    int got = next_line(r, 1), rc;
    if (got < 0) return got;
    if (got == 0)
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: the file ends inside section \"%s\" (line %zu) after %lld of %lld lines",
                       r->path, r->line, sections[sec], header_line, done, want);
    if (blank(r->buf)) continue;
    if (section_of(r->buf, sections) >= 0 || section_of(r->buf, foreign_sections) >= 0)
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: section \"%s\" (line %zu) has %lld lines; it needs %lld", r->path,
                       r->line, sections[sec], header_line, done, want);
    int nt = tokens(r->buf, tok, 10);
    switch (sec) {
    case 0:
      rc = atoms_line(&L->atoms[done], L, r, tok, nt);
      break;
    case 1:
      rc = velocities_line(L, r, tok, nt, seen);
      break;
    case 2:
      rc = masses_line(L, r, tok, nt);
      break;
    default:
      rc = coeffs_line(L, r, tok, nt, sec == 4);
    }
    if (rc) return rc;
    done++;
  }
  return 0;
}

/* After the Atoms section: the atoms sorted by ID, each ID once. */
static int sort_atoms(lammps *L, const reader *r) {
  raw_atom *atoms = L->atoms;
  qsort(atoms, (size_t)L->natoms, sizeof *atoms, cmp_atom);
  for (long long i = 1; i < L->natoms; i++)
    if (atoms[i].id == atoms[i - 1].id)
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: atom ID %lld appears twice (also line %zu)", r->path,
                       atoms[i].line > atoms[i - 1].line ? atoms[i].line : atoms[i - 1].line, atoms[i].id,
                       atoms[i].line < atoms[i - 1].line ? atoms[i].line : atoms[i - 1].line);
  return 0;
}

/* An Atoms section's style hint after '#' (on its section line) must name atomic. */
static int check_atom_style(const reader *r) {
  char hint[64], *t[2];
  snprintf(hint, sizeof hint, "%s", r->comment);
  if (tokens(hint, t, 1) == 1 && strcmp(t[0], "atomic"))
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: Atoms section of atom_style \"%s\": reprocl reads atom_style atomic",
                     r->path, r->line, t[0]);
  return 0;
}

/* One section, its section line in r->buf: Atoms, Velocities (a line for every atom), Masses, Pair Coeffs
 * or PairIJ Coeffs. */
static int read_section(lammps *L, reader *r) {
  int sec = section_of(r->buf, sections);
  if (sec < 0) {
    char *s = r->buf;
    while (isspace((unsigned char)*s)) s++;
    return rcl__fail(RCL_ERR_PARSE,
                     "%s:%zu: section \"%s\" is not supported (atom_style atomic: Atoms, Velocities, "
                     "Masses, Pair Coeffs, PairIJ Coeffs)",
                     r->path, r->line, s);
  }
  size_t header_line = r->line;
  int rc = sec == 0 ? check_atom_style(r) : 0;
  if (rc) return rc;
  long long natoms = L->natoms, ntypes = L->ntypes;
  long long want = sec <= 1 ? natoms : sec == 4 ? ntypes * (ntypes + 1) / 2 : ntypes;
  int *seen = sec == 1 ? rcl__calloc((size_t)natoms, sizeof *seen) : NULL;
  if (sec == 1 && !seen) return RCL_ERR_OUT_OF_MEMORY;
  if (sec == 0) L->have_atoms = 1;
  if (sec == 1) L->have_vel = 1;
  if (sec >= 3) L->have_pair = 1;
  rc = section_lines(L, r, sec, header_line, want, seen);
  if (!rc && sec == 0) rc = sort_atoms(L, r);
  if (!rc && sec == 1)
    for (long long i = 0; i < natoms && !rc; i++)
      if (!seen[i])
        rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: the Velocities section has no line for atom %lld", r->path, header_line,
                       L->atoms[i].id);
  rcl__free(seen);
  return rc;
}

/* The sections, from the one whose line read_header left in r->buf (pending) to the end of the file. */
static int read_sections(lammps *L, reader *r, int pending) {
  for (int got = pending; got > 0;) {
    int rc = read_section(L, r);
    if (rc) return rc;
    while ((got = next_line(r, 1)) > 0 && blank(r->buf)) {
    }
    if (got < 0) return got;
  }
  if (!L->have_atoms) return rcl__fail(RCL_ERR_PARSE, "%s: the file has no Atoms section", r->path);
  for (int t = 0; t < L->ntypes; t++)
    if (!L->have_mass[t])
      return rcl__fail(RCL_ERR_PARSE, "%s: no mass for atom type %d (a Masses section is needed)", r->path, t + 1);
  return 0;
}

/* The system of what was read, and into lj the pair coefficients if the file has any. */
static int make_system(rcl_md_system **out, rcl_md_lj *lj, const lammps *L) {
  rcl_md_system *s = NULL;
  int rc = rcl_md_system_alloc(&s, (size_t)L->natoms, (int)L->ntypes);
  if (rc) return rc;
  for (int d = 0; d < 3; d++) {
    s->lo[d] = L->lo[d];
    s->hi[d] = L->hi[d];
    s->periodic[d] = 1;
  }
  for (int t = 0; t < L->ntypes; t++) s->mass[t] = L->mass[t];
  for (size_t i = 0; i < (size_t)L->natoms; i++) {
    const raw_atom *a = &L->atoms[i];
    s->id[i] = a->id;
    s->type[i] = a->type;
    for (int d = 0; d < 3; d++) {
      s->pos[3 * i + d] = a->x[d];
      s->vel[3 * i + d] = L->have_vel ? a->v[d] : 0.0;
    }
  }
  if (lj && L->have_pair) {
    memcpy(lj->epsilon, L->pair.epsilon, sizeof lj->epsilon);
    memcpy(lj->sigma, L->pair.sigma, sizeof lj->sigma);
    memcpy(lj->pair_epsilon, L->pair.pair_epsilon, sizeof lj->pair_epsilon);
    memcpy(lj->pair_sigma, L->pair.pair_sigma, sizeof lj->pair_sigma);
    memcpy(lj->pair_set, L->pair.pair_set, sizeof lj->pair_set);
  }
  *out = s;
  return 0;
}

static int read_lammps(rcl_md_system **out, rcl_md_lj *lj, reader *r) {
  lammps L;
  memset(&L, 0, sizeof L);
  L.natoms = L.ntypes = -1;
  L.pair = (rcl_md_lj)RCL_MD_LJ_INIT;
  int pending = 0;
  int rc = read_header(&L, r, &pending);
  if (!rc) rc = check_header(&L, r);
  if (rc) return rc;
  L.atoms = rcl__calloc((size_t)L.natoms, sizeof *L.atoms);
  if (!L.atoms) return RCL_ERR_OUT_OF_MEMORY;
  rc = read_sections(&L, r, pending);
  if (!rc) rc = make_system(out, lj, &L);
  rcl__free(L.atoms);
  return rc;
}

/* ---- extended XYZ ------------------------------------------------------------------------------------- */

/* The value of key="..." or key=value on an extended-XYZ comment line, copied into val. */
static int xyz_key(const char *line, const char *key, char *val, size_t cap) {
  size_t kl = strlen(key);
  for (const char *p = line; (p = strstr(p, key)) != NULL; p += kl) {
    if ((p != line && !isspace((unsigned char)p[-1])) || p[kl] != '=') continue;
    const char *v = p + kl + 1, *e;
    if (*v == '"') {
      v++;
      e = strchr(v, '"');
      if (!e) return -1;
    } else {
      e = v;
      while (*e && !isspace((unsigned char)*e)) e++;
    }
    size_t l = (size_t)(e - v);
    if (l >= cap) return -1;
    memcpy(val, v, l);
    val[l] = '\0';
    return 1;
  }
  return 0;
}

/* What an extended-XYZ comment line declares: the box (Lattice, Origin), its periodic axes (pbc) and
 * whether atom lines carry velocities (Properties). */
typedef struct {
  double lo[3], len[3];
  int periodic[3], have_lattice, with_vel;
} xyz_header;

/* The atom count of line 1, checked against what the file can hold; leaves the comment line in r->buf. */
static int xyz_count(long long *out, reader *r) {
  int got = next_line(r, 0);
  if (got <= 0) return got < 0 ? got : rcl__fail(RCL_ERR_PARSE, "%s: the file is empty", r->path);
  long long n;
  char *tok[12];
  char first[64];
  snprintf(first, sizeof first, "%s", r->buf);
  if (tokens(r->buf, tok, 2) != 1 || parse_ll(&n, r, tok[0], "the atom count"))
    return rcl__fail(RCL_ERR_PARSE, "%s:1: an XYZ file starts with the number of atoms, not \"%s\"", r->path, first);
  if (n <= 0) return rcl__fail(RCL_ERR_PARSE, "%s:1: the file declares %lld atoms", r->path, n);
  if (n > (1ll << 30))
    return rcl__fail(RCL_ERR_PARSE, "%s:1: %lld atoms are more than reprocl supports (2^30)", r->path, n);
  if ((got = next_line(r, 0)) <= 0)
    return got < 0 ? got : rcl__fail(RCL_ERR_PARSE, "%s:2: the file ends before the comment line", r->path);
  /* Nothing is allocated beyond what the input can hold: an atom line needs at least "H 0 0 0\n" (8 bytes;
   * the last one may lack its newline). */
  long long left = bytes_left(r);
  if (n > MD_SMALL_COUNT && n > (left + 1) / 8)
    return rcl__fail(RCL_ERR_PARSE,
                     "%s:1: the file declares %lld atoms but only %lld bytes of atom lines follow (an "
                     "atom line needs at least 8): truncated file or wrong count",
                     r->path, n, left);
  *out = n;
  return 0;
}

/* Lattice="..." of the comment line: an orthorhombic box's lengths into h->len. */
static int xyz_lattice(xyz_header *h, const reader *r, const char *comment) {
  char val[1024];
  int k = xyz_key(comment, "Lattice", val, sizeof val);
  if (k < 0) return rcl__fail(RCL_ERR_PARSE, "%s:2: malformed Lattice=\"...\"", r->path);
  if (k > 0) {
    double m[9];
    char *t[10];
    if (tokens(val, t, 9) != 9) return rcl__fail(RCL_ERR_PARSE, "%s:2: Lattice needs 9 numbers", r->path);
    for (int i = 0; i < 9; i++)
      if (parse_double(&m[i], r, t[i], "a Lattice entry")) return RCL_ERR_PARSE;
    for (int i = 0; i < 9; i++)
      if (i % 4 != 0 && m[i] != 0)
        return rcl__fail(RCL_ERR_PARSE,
                         "%s:2: the Lattice is not orthorhombic (off-diagonal entry %g); reprocl needs "
                         "an orthorhombic box",
                         r->path, m[i]);
    for (int d = 0; d < 3; d++) {
      h->len[d] = m[4 * d];
      if (!(h->len[d] > 0))
        return rcl__fail(RCL_ERR_PARSE, "%s:2: Lattice length %g is not positive", r->path, h->len[d]);
    }
    h->have_lattice = 1;
  }
  return 0;
}

/* Origin="..." and pbc="..." of the comment line: the box's lower corner and its periodic axes. */
static int xyz_origin_pbc(xyz_header *h, const reader *r, const char *comment) {
  char val[1024];
  int k;
  if ((k = xyz_key(comment, "Origin", val, sizeof val)) < 0)
    return rcl__fail(RCL_ERR_PARSE, "%s:2: malformed Origin=\"...\"", r->path);
  if (k > 0) {
    char *t[4];
    if (tokens(val, t, 3) != 3) return rcl__fail(RCL_ERR_PARSE, "%s:2: Origin needs 3 numbers", r->path);
    for (int d = 0; d < 3; d++)
      if (parse_double(&h->lo[d], r, t[d], "an Origin entry")) return RCL_ERR_PARSE;
  }
  if ((k = xyz_key(comment, "pbc", val, sizeof val)) < 0)
    return rcl__fail(RCL_ERR_PARSE, "%s:2: malformed pbc=\"...\"", r->path);
  if (k > 0) {
    char *t[4];
    if (tokens(val, t, 3) != 3) return rcl__fail(RCL_ERR_PARSE, "%s:2: pbc needs 3 flags (T or F)", r->path);
    for (int d = 0; d < 3; d++) {
      if (strcasecmp(t[d], "T") && strcasecmp(t[d], "F") && strcasecmp(t[d], "true") && strcasecmp(t[d], "false"))
        return rcl__fail(RCL_ERR_PARSE, "%s:2: pbc flag \"%s\" is neither T nor F", r->path, t[d]);
      h->periodic[d] = toupper((unsigned char)t[d][0]) == 'T';
    }
  } else if (!h->have_lattice) {
    h->periodic[0] = h->periodic[1] = h->periodic[2] = 0;
  }
  return 0;
}

/* The comment line (in r->buf): box, periodic axes and columns, checked to fit together. */
static int xyz_comment(xyz_header *h, const reader *r) {
  char comment[4096], val[1024];
  snprintf(comment, sizeof comment, "%s", r->buf);
  *h = (xyz_header){{0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 0, 0};
  int rc = xyz_lattice(h, r, comment);
  if (!rc) rc = xyz_origin_pbc(h, r, comment);
  if (rc) return rc;
  int k;
  if ((k = xyz_key(comment, "Properties", val, sizeof val)) < 0)
    return rcl__fail(RCL_ERR_PARSE, "%s:2: malformed Properties=...", r->path);
  if (k > 0) {
    if (!strcmp(val, "species:S:1:pos:R:3:vel:R:3"))
      h->with_vel = 1;
    else if (strcmp(val, "species:S:1:pos:R:3"))
      return rcl__fail(RCL_ERR_PARSE, "%s:2: Properties=%s: reprocl reads species:S:1:pos:R:3[:vel:R:3]", r->path, val);
  }
  for (int d = 0; d < 3 && h->have_lattice; d++)
    if (!isfinite(h->lo[d] + h->len[d]))
      return rcl__fail(RCL_ERR_PARSE, "%s:2: Origin %g plus Lattice length %g is not a finite number", r->path,
                       h->lo[d], h->len[d]);
  if (!h->have_lattice && (h->periodic[0] || h->periodic[1] || h->periodic[2]))
    return rcl__fail(RCL_ERR_PARSE, "%s:2: pbc asks for periodic axes but there is no Lattice=\"...\" giving the box",
                     r->path);
  return 0;
}

/* Atom line i of n into s: its species numbered in order of first appearance in names. */
static int xyz_atom(rcl_md_system *s, reader *r, const xyz_header *h, long long i, long long n, char names[][32],
                    int *nnames) {
  char *tok[12];
  int got = next_line(r, 0);
  if (got <= 0)
    return got < 0 ? got
                   : rcl__fail(RCL_ERR_PARSE, "%s:%zu: the file ends after %lld of %lld atoms", r->path, r->line, i, n);
  int want = h->with_vel ? 7 : 4, nt = tokens(r->buf, tok, 10);
  if (nt != want)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: an atom line has %d columns (species x y z%s), this one has %d", r->path,
                     r->line, want, h->with_vel ? " vx vy vz" : "", nt > 10 ? 11 : nt);
  int t = 0;
  while (t < *nnames && strcmp(names[t], tok[0])) t++;
  if (t == *nnames) {
    if (*nnames == RCL_MD_MAX_TYPES || strlen(tok[0]) >= sizeof names[0])
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: species \"%s\": at most %d species are supported", r->path, r->line,
                       tok[0], RCL_MD_MAX_TYPES);
    snprintf(names[(*nnames)++], sizeof names[0], "%s", tok[0]);
  }
  s->type[i] = t + 1;
  int rc = 0;
  for (int d = 0; d < 3 && !rc; d++) rc = parse_double(&s->pos[3 * i + d], r, tok[1 + d], "the coordinate");
  for (int d = 0; d < 3 && !rc && h->with_vel; d++)
    rc = parse_double(&s->vel[3 * i + d], r, tok[4 + d], "the velocity");
  for (int d = 0; d < 3 && !rc && h->have_lattice; d++)
    if (s->pos[3 * i + d] < h->lo[d] || s->pos[3 * i + d] > h->lo[d] + h->len[d])
      rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: atom %lld lies outside the box: %c = %.17g is not in [%.17g, %.17g]",
                     r->path, r->line, i + 1, 'x' + d, s->pos[3 * i + d], h->lo[d], h->lo[d] + h->len[d]);
  return rc;
}

/* Species that are all the numbers 1..k keep their numbers as types (our own output); names are
 * numbered in order of first appearance. */
static void xyz_types(rcl_md_system *s, long long n, char names[][32], int nnames) {
  int numeric = 1;
  long maxtype = 0;
  for (int t = 0; t < nnames && numeric; t++) {
    char *e;
    long v = strtol(names[t], &e, 10);
    numeric = *e == '\0' && v >= 1 && v <= RCL_MD_MAX_TYPES;
    if (v > maxtype) maxtype = v;
  }
  s->ntypes = numeric ? (int)maxtype : nnames;
  if (numeric)
    for (size_t i = 0; i < (size_t)n; i++) s->type[i] = (int)strtol(names[s->type[i] - 1], NULL, 10);
}

/* The system's box: the Lattice's, or without one open axes around the atoms (the box only shapes the
 * cell grid). */
static int xyz_box(rcl_md_system *s, const reader *r, const xyz_header *h, long long n) {
  if (h->have_lattice) {
    for (int d = 0; d < 3; d++) {
      s->lo[d] = h->lo[d];
      s->hi[d] = h->lo[d] + h->len[d];
      s->periodic[d] = h->periodic[d];
    }
    return 0;
  }
  for (int d = 0; d < 3; d++) {
    double mn = s->pos[d], mx = s->pos[d];
    for (size_t i = 1; i < (size_t)n; i++) {
      mn = fmin(mn, s->pos[3 * i + d]);
      mx = fmax(mx, s->pos[3 * i + d]);
    }
    s->lo[d] = mn - 1.0;
    s->hi[d] = mx + 1.0;
    s->periodic[d] = 0;
    /* The margin must survive rounding: at |x| >= 2^53 "x + 1" is x, and the box would have no width. */
    if (!(s->lo[d] < mn) || !(s->hi[d] > mx) || !(s->hi[d] - s->lo[d] < INFINITY))
      return rcl__fail(RCL_ERR_PARSE,
                       "%s: the atoms span %c = %g .. %g: too large for an open box (a margin of 1 is "
                       "lost to rounding, or the width is not finite); give a Lattice",
                       r->path, 'x' + d, mn, mx);
  }
  return 0;
}

/* An extended XYZ file: the count, the comment line (box, pbc, columns), the atom lines, then types and box. */
static int read_xyz(rcl_md_system **out, reader *r) {
  long long n = 0;
  xyz_header h;
  int rc = xyz_count(&n, r);
  if (!rc) rc = xyz_comment(&h, r);
  if (rc) return rc;
  rcl_md_system *s = NULL;
  rc = rcl_md_system_alloc(&s, (size_t)n, 1);
  if (rc) return rc;
  char names[RCL_MD_MAX_TYPES][32];
  int nnames = 0;
  for (long long i = 0; i < n && !rc; i++) rc = xyz_atom(s, r, &h, i, n, names, &nnames);
  if (!rc) {
    xyz_types(s, n, names, nnames);
    rc = xyz_box(s, r, &h, n);
  }
  if (rc) {
    rcl_md_system_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* An optional sign and one or more decimal digits, nothing else. */
static int integer_text(const char *s) {
  if (*s == '+' || *s == '-') s++;
  size_t d = strspn(s, "0123456789");
  return d > 0 && s[d] == '\0';
}

int rcl__md_read_stream(rcl_md_system **out, rcl_md_lj *lj, FILE *f, const char *path) {
  reader r = {f, path, 0, NULL, 0, "", 0};
  /* A device (/dev/zero) would be read forever, one ever-growing line; a pipe cannot be rewound. */
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && !S_ISREG(st.st_mode)) {
    const char *kind = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISDIR(st.st_mode)                      ? "a directory"
                                                                  : "a pipe or socket";
    return rcl__fail(RCL_ERR_IO, "%s is not a regular file but %s", path, kind);
  }
  if (fseek(f, 0, SEEK_END) != 0 || (r.size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
    return rcl__fail(RCL_ERR_IO, "%s: cannot seek (a regular file is needed): %s", path, strerror(errno));
  /* An XYZ file starts with a lone integer; a LAMMPS data file with a title line. */
  int rc = next_line(&r, 0);
  int xyz = 0;
  if (rc > 0) {
    char *t[3];
    long long v;
    char copy[64];
    snprintf(copy, sizeof copy, "%s", r.buf);
    /* a lone integer, even one too large for a count (the XYZ reader then names it) */
    xyz = tokens(copy, t, 2) == 1 && (parse_ll(&v, &r, t[0], "count") == 0 || integer_text(t[0]));
    rcl_error_clear();
  }
  rewind(r.f);
  r.line = 0;
  if (rc >= 0) rc = xyz ? read_xyz(out, &r) : read_lammps(out, lj, &r);
  rcl__free(r.buf);
  return rc;
}

int rcl_md_read(rcl_md_system **out, rcl_md_lj *lj, const char *path) {
  if (!out || !path) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_read: NULL argument");
  *out = NULL;
  if (lj && lj->version != RCL_MD_LJ_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_lj.version is %u, expected %u (use RCL_MD_LJ_INIT)", lj->version,
                     RCL_MD_LJ_VERSION);
  FILE *f = fopen(path, "rb");
  if (!f) return rcl__fail(RCL_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  int rc = rcl__md_read_stream(out, lj, f, path);
  fclose(f);
  return rc;
}

/* ---- lattice --------------------------------------------------------------------------------------- */

/* The cube root by Newton's iteration from above, which decreases monotonically until rounding stops
 * it: only + - * / of binary64, so every IEEE machine gets the same bits (libm's cbrt and pow may not). */
static double cbrt_exact_ops(double x) {
  double y = x > 1 ? x : 1;
  for (int i = 0; i < 2000; i++) {
    double ny = (2.0 * y + x / (y * y)) / 3.0;
    if (!(ny < y)) break;
    y = ny;
  }
  return y;
}

int rcl_md_lattice(rcl_md_system **out, const char *kind, size_t cells, double density, double temperature,
                   uint64_t seed) {
  if (!out || !kind) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_lattice: NULL argument");
  *out = NULL;
  static const double fcc[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  static const double bcc[2][3] = {{0, 0, 0}, {0.5, 0.5, 0.5}};
  static const double sc[1][3] = {{0, 0, 0}};
  const double(*basis)[3];
  int nb;
  if (!strcasecmp(kind, "fcc"))
    basis = fcc, nb = 4;
  else if (!strcasecmp(kind, "bcc"))
    basis = bcc, nb = 2;
  else if (!strcasecmp(kind, "sc"))
    basis = sc, nb = 1;
  else
    return rcl__fail(RCL_ERR_INVALID_ARG, "unknown lattice \"%s\" (expected fcc, bcc or sc)", kind);
  if (cells < 1 || cells > 600)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%zu unit cells per side: expected 1..600", cells);
  if (!(density >= 1e-6 && density <= 1e3))
    return rcl__fail(RCL_ERR_INVALID_ARG, "density %g is outside [1e-6, 1000] (atoms per sigma^3)", density);
  if (!(temperature >= 0 && temperature <= 1e6))
    return rcl__fail(RCL_ERR_INVALID_ARG, "temperature %g is outside [0, 1e6]", temperature);
  size_t n = (size_t)nb * cells * cells * cells;
  rcl_md_system *s;
  int rc = rcl_md_system_alloc(&s, n, 1);
  if (rc) return rc;
  double a = cbrt_exact_ops((double)nb / density);
  for (int d = 0; d < 3; d++) {
    s->lo[d] = 0.0;
    s->hi[d] = (double)cells * a;
  }
  /* atoms in LAMMPS create_atoms order: z, y, x, then the basis */
  size_t i = 0;
  for (size_t z = 0; z < cells; z++)
    for (size_t y = 0; y < cells; y++)
      for (size_t x = 0; x < cells; x++)
        for (int b = 0; b < nb; b++, i++) {
          s->pos[3 * i] = ((double)x + basis[b][0]) * a;
          s->pos[3 * i + 1] = ((double)y + basis[b][1]) * a;
          s->pos[3 * i + 2] = ((double)z + basis[b][2]) * a;
        }
  if (temperature > 0 && n > 1) {
    /* uniform in [-0.5, 0.5) per component, then zero momentum, then scaled to the temperature */
    rcl_rng rng = {seed};
    double p[3] = {0, 0, 0};
    for (i = 0; i < 3 * n; i++) s->vel[i] = rcl_rng_uniform(&rng) - 0.5;
    for (i = 0; i < n; i++)
      for (int d = 0; d < 3; d++) p[d] += s->vel[3 * i + d];
    for (int d = 0; d < 3; d++) p[d] /= (double)n;
    double mv2 = 0;
    for (i = 0; i < n; i++)
      for (int d = 0; d < 3; d++) {
        s->vel[3 * i + d] -= p[d];
        mv2 += s->vel[3 * i + d] * s->vel[3 * i + d];
      }
    double t = mv2 / (3.0 * (double)n - 3.0), f = sqrt(temperature / t);
    for (i = 0; i < 3 * n; i++) s->vel[i] *= f;
  }
  *out = s;
  return 0;
}

int rcl_md_displace(rcl_md_system *sys, double amplitude, uint64_t seed) {
  if (!sys) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_displace: NULL system");
  double shortest = INFINITY;
  for (int d = 0; d < 3; d++) shortest = fmin(shortest, sys->hi[d] - sys->lo[d]);
  if (!(amplitude >= 0 && amplitude < shortest)) /* also refuses NaN */
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_displace: amplitude %g is not in [0, %g) (the shortest box side)",
                     amplitude, shortest);
  rcl_rng g = {seed};
  for (size_t i = 0; i < 3 * sys->natoms; i++) {
    int d = (int)(i % 3);
    double x = sys->pos[i] + amplitude * (rcl_rng_uniform(&g) - 0.5), len = sys->hi[d] - sys->lo[d];
    if (x < sys->lo[d])
      x += len;
    else if (x >= sys->hi[d])
      x -= len;
    sys->pos[i] = x;
  }
  return 0;
}

/* ---- output ---------------------------------------------------------------------------------------- */

int rcl_md_write_xyz(FILE *f, const rcl_md_system *sys, rcl_dtype dt, const void *pos, const void *vel, size_t step,
                     double time) {
  if (!f || !sys || !pos) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_write_xyz: NULL argument");
  if (rcl_dtype_size(dt) == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_write_xyz: unknown dtype %d", (int)dt);
  const char *fmt = dt == RCL_F32 ? " %.9g" : " %.17g";
  int ok = fprintf(f,
                   "%zu\nLattice=\"%.17g 0 0 0 %.17g 0 0 0 %.17g\" Origin=\"%.17g %.17g %.17g\" "
                   "Properties=species:S:1:pos:R:3%s Time=%.17g Step=%zu pbc=\"%c %c %c\"\n",
                   sys->natoms, sys->hi[0] - sys->lo[0], sys->hi[1] - sys->lo[1], sys->hi[2] - sys->lo[2], sys->lo[0],
                   sys->lo[1], sys->lo[2], vel ? ":vel:R:3" : "", time, step, sys->periodic[0] ? 'T' : 'F',
                   sys->periodic[1] ? 'T' : 'F', sys->periodic[2] ? 'T' : 'F') > 0;
  for (size_t i = 0; i < sys->natoms && ok; i++) {
    ok = fprintf(f, "%d", sys->type[i]) > 0;
    for (int k = 0; k < (vel ? 6 : 3) && ok; k++) {
      const void *src = k < 3 ? pos : vel;
      size_t j = 3 * i + (size_t)(k % 3);
      double v = dt == RCL_F32 ? (double)((const float *)src)[j] : ((const double *)src)[j];
      ok = fprintf(f, fmt, v) > 0;
    }
    ok = ok && fputc('\n', f) != EOF;
  }
  if (!ok || ferror(f)) return rcl__fail(RCL_ERR_IO, "writing an XYZ frame failed: %s", strerror(errno));
  return 0;
}
