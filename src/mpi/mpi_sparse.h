/* The distributed CSR matrix of the MPI layer (mpi_matrix.c: scatter and halo plan; mpi_sparse.c: SpMV and
 * CG). Not installed. */
#ifndef REPROCL_MPI_SPARSE_H
#define REPROCL_MPI_SPARSE_H
#include "mpi/mpi_internal.h"
#include "sparse/sparse_internal.h"

/* 2048 rows (the block of reduce.ordered) per cut where every rank gets at least 8 such blocks: a rank's
 * slice of the CG vectors then holds whole blocks (speed only: any cut gives the same bits). */
#define MPI_ROW_GRANULE 2048

struct rcl_mpi_matrix {
  MPI_Comm comm;
  int size, rank, root;
  rcl_context *ctx;
  rcl_dtype dt;
  size_t es, nrows, ncols, nnz;
  size_t *bounds;         /* size + 1: rank r owns rows [bounds[r], bounds[r + 1]) */
  size_t *cbounds;        /* size + 1: and entries [cbounds[r], cbounds[r + 1]) of x */
  rcl_csr_local L;        /* this rank's rows: halo before, own columns, halo after */
  rcl_csr_local J;        /* the Jacobi preconditioner's rows (own columns only) */
  rcl_spmv_matrix *M, *D; /* L.A and J.A on the context (NULL for a rank without rows; M NULL when in pieces) */
  /* L.A in pieces of rows where a long run of rows (the interior, piece 1) references own entries of x only:
   * CG computes it while the halo travels, the boundary (pieces 0 and 2, before and after it) once the halo
   * is in. Piece i: rows [pr[i], pr[i + 1]), P[i] (NULL where empty); each row the same sum as in L.A. */
  rcl_spmv_matrix *P[3];
  size_t pr[4];
  int *rcount, *rdispl; /* halo values received from each rank, at their place in L's halo order */
  int *scount, *sdispl; /* own values sent to each rank, from sidx */
  uint32_t *sidx;       /* nsend own entries (0-based in this rank's columns), grouped by destination */
  int *sdirect;         /* per rank: 1 where its sidx are one run of consecutive own entries (sent in place) */
  size_t nsend;
  unsigned char *sbuf; /* nsend values to send, then the halo's values received */
  int jacobi_rc;       /* 0: J exists; 1: A is not square; < 0: why there is none (jacobi_msg) */
  char jacobi_msg[256];
};

/* The halo exchange of a vector: this rank's entries own (its columns) in, the halo's values out (L's
 * halo order: nbefore, then nafter) in halo (NULL: M->sbuf + nsend values). Collective (point to point with
 * the ranks that share entries). */
RCL_INTERNAL int rcl__mpi_halo_exchange(rcl_mpi_matrix *M, const void *own, void *halo);

/* ---- the phases' clock (rcl_mpi_phases_collect; mpi_sparse.c, used by mpi_stencil.c too) ---------------------
 * A clock of one call: p is this thread's collector (NULL: not collecting, and every lap is free), t the time
 * of the last lap. RCL_MPI_LAP(c, field) adds the time since the last lap to p->field. */
typedef struct {
  rcl_mpi_phases *p;
  double t, t0;
} rcl__mpi_clock;
RCL_INTERNAL void rcl__mpi_clock_start(rcl__mpi_clock *c);
RCL_INTERNAL double rcl__mpi_clock_lap(rcl__mpi_clock *c);
/* The call's end: the time since the last lap is setup_s's; the call counted, its total time added. */
RCL_INTERNAL void rcl__mpi_clock_stop(rcl__mpi_clock *c);
#define RCL_MPI_LAP(c, field)                                                                                          \
  do {                                                                                                                 \
    if ((c)->p) (c)->p->field += rcl__mpi_clock_lap(c);                                                                \
  } while (0)

#endif
