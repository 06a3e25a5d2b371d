/* A minimal OSU-style reference (osu_latency / osu_bw loops, same counts as
 * interlab mpi): `osu_mini lat|bw SIZE WARMUP ITERS [WINDOW]` prints one number,
 * one-way latency in us or bandwidth in MB/s (10^6 B/s). Compiled with mpicc by
 * crates/cli/tests/mpi_cli.rs; Debian has no OSU micro-benchmarks package. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 5) { if (rank == 0) fprintf(stderr, "usage: osu_mini lat|bw SIZE WARMUP ITERS [WINDOW]\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    int bw = strcmp(argv[1], "bw") == 0;
    int size = atoi(argv[2]), warmup = atoi(argv[3]), iters = atoi(argv[4]);
    int window = argc > 5 ? atoi(argv[5]) : 64;
    char *s = malloc(size + 1), *r = malloc(size + 1), ack[4] = {0};
    memset(s, 'a', size + 1);
    MPI_Request *req = malloc(sizeof(MPI_Request) * window);
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < warmup + iters; i++) {
        if (i == warmup) { MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime(); }
        if (!bw) {
            if (rank == 0) { MPI_Send(s, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD); MPI_Recv(r, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
            else { MPI_Recv(r, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(s, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD); }
        } else if (rank == 0) {
            for (int j = 0; j < window; j++) MPI_Isend(s, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int j = 0; j < window; j++) MPI_Irecv(r, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) {
        if (bw) printf("%.3f\n", (double)size * window * iters / t / 1e6);
        else printf("%.3f\n", t * 1e6 / (2.0 * iters));
    }
    MPI_Finalize();
    return 0;
}
