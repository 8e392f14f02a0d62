/* Latency of the collectives the reproducible allreduce could use, same rounds-in-turn method as reprocl-mpi bench. */
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
static void op_nc(void *in, void *inout, int *len, MPI_Datatype *t) { (void)t; uint64_t *a = in, *b = inout; for (int i = 0; i < *len * 8; i++) b[i] += a[i]; }
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Op nc, cm; MPI_Op_create(op_nc, 0, &nc); MPI_Op_create(op_nc, 1, &cm);
  MPI_Datatype t8; MPI_Type_contiguous(8, MPI_UINT64_T, &t8); MPI_Type_commit(&t8);
  uint64_t a[8] = {1}, b[8 * 64]; double d = 1, e;
  const char *names[] = {"Allreduce 1 double SUM", "Allgather 8 u64", "Allreduce 8 u64 SUM", "Allreduce t8 noncommut op", "Allreduce t8 commut op", "Allgather 1 u64"};
  double best[6]; for (int k = 0; k < 6; k++) best[k] = 1e9;
  int reps = 20000;
  for (int round = 0; round < 7; round++)
    for (int k = 0; k < 6; k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int i = 0; i < reps; i++) switch (k) {
        case 0: MPI_Allreduce(&d, &e, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
        case 1: MPI_Allgather(a, 8, MPI_UINT64_T, b, 8, MPI_UINT64_T, MPI_COMM_WORLD); break;
        case 2: MPI_Allreduce(a, b, 8, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD); break;
        case 3: MPI_Allreduce(a, b, 1, t8, nc, MPI_COMM_WORLD); break;
        case 4: MPI_Allreduce(a, b, 1, t8, cm, MPI_COMM_WORLD); break;
        case 5: MPI_Allgather(a, 1, MPI_UINT64_T, b, 1, MPI_UINT64_T, MPI_COMM_WORLD); break;
      }
      double mine = (MPI_Wtime() - t0) / reps, s; MPI_Allreduce(&mine, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (round && s < best[k]) best[k] = s;
    }
  if (!rank) for (int k = 0; k < 6; k++) printf("K=%d %-28s %.3f us (%.2fx)\n", size, names[k], best[k] * 1e6, best[k] / best[0]);
  MPI_Finalize();
  return 0;
}
