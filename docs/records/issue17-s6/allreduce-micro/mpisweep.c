#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
  uint64_t a[16] = {1}, b[16 * 64]; double d = 1, e;
  int words[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  double best[9]; for (int k = 0; k < 9; k++) best[k] = 1e9;
  int reps = 20000;
  for (int round = 0; round < 9; round++)
    for (int k = 0; k < 9; k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int i = 0; i < reps; i++) {
        if (k == 0) MPI_Allreduce(&d, &e, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else MPI_Allgather(a, words[k], MPI_UINT64_T, b, words[k], MPI_UINT64_T, MPI_COMM_WORLD);
      }
      double mine = (MPI_Wtime() - t0) / reps, s; MPI_Allreduce(&mine, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (round && s < best[k]) best[k] = s;
    }
  if (!rank) { printf("K=%d allreduce-1d %.3f us |", size, best[0]*1e6); for (int k = 1; k < 9; k++) printf(" ag%d %.2fx", words[k], best[k]/best[0]); printf("\n"); }
  MPI_Finalize();
  return 0;
}
