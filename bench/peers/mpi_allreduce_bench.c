/* MPI_Allreduce measured exactly as bench/allreduce_bench measures Ringwork: per
 * iteration restore the buffer, barrier, time one in-place float32 sum all-reduce,
 * check every element; median over blocks of the block averages. CSV on rank 0.
 *
 *   mpicc -O2 -o mpi_allreduce_bench mpi_allreduce_bench.c
 *   mpirun -np 2 ./mpi_allreduce_bench LABEL MIN_BYTES MAX_BYTES FACTOR RUNS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float contribution(int rank, size_t i) {
  return (float)((long)((rank * 7 + i * 3) % 17) - 8);
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 6) {
    if (rank == 0) fprintf(stderr, "usage: LABEL MIN_BYTES MAX_BYTES FACTOR RUNS\n");
    MPI_Finalize();
    return 2;
  }
  const char* label = argv[1];
  const long min_bytes = atol(argv[2]), max_bytes = atol(argv[3]);
  const long factor = atol(argv[4]), runs = atol(argv[5]);
  double* blocks = malloc(sizeof(double) * runs);
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    size_t count = bytes / 4 > 0 ? bytes / 4 : 1;
    float* pristine = malloc(count * 4);
    float* data = malloc(count * 4);
    float* want = malloc(count * 4);
    for (size_t i = 0; i < count; ++i) {
      pristine[i] = contribution(rank, i);
      float sum = 0;
      for (int r = 0; r < size; ++r) sum += contribution(r, i);
      want[i] = sum;
    }
    long iterations = (256L << 20) / (long)(count * 4);
    if (iterations < 20) iterations = 20;
    if (iterations > 2000) iterations = 2000;
    long wrong = 0;
    for (long run = -1; run < runs; ++run) {
      const long iters = run < 0 ? 5 : iterations;
      double total = 0;
      for (long it = 0; it < iters; ++it) {
        memcpy(data, pristine, count * 4);
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, data, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        total += MPI_Wtime() - start;
        for (size_t i = 0; i < count; ++i) wrong += memcmp(&data[i], &want[i], 4) != 0;
      }
      if (run >= 0) blocks[run] = total / iters * 1e6;
    }
    qsort(blocks, runs, sizeof(double), compare_doubles);
    double median = runs % 2 ? blocks[runs / 2] : (blocks[runs / 2 - 1] + blocks[runs / 2]) / 2;
    double mean_median;
    long total_wrong;
    MPI_Allreduce(&median, &mean_median, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    mean_median /= size;
    /* Any rank's fastest and slowest block. */
    double fastest, slowest;
    MPI_Allreduce(&blocks[0], &fastest, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&blocks[runs - 1], &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      const double algbw = count * 4 / (mean_median * 1e-6) / 1e9;
      printf("%s,%d,%zu,%zu,mpi,%ld,%.2f,%.2f,%.2f,%.3f,%.3f,%ld\n", label, size, count * 4, count,
             iterations, mean_median, fastest, slowest, algbw, algbw * 2.0 * (size - 1) / size,
             total_wrong);
      fflush(stdout);
    }
    free(pristine);
    free(data);
    free(want);
  }
  free(blocks);
  MPI_Finalize();
  return 0;
}
