/*
 * The smallest hooked::mpi program: a context over MPI_COMM_WORLD, built
 * through find_package(hooked COMPONENTS mpi) or pkg-config's hooked-mpi.
 */
#include <hooked/mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  hk_status st = HK_STATUS_INIT;
  hk_mpi *mpi = NULL;
  int rc = 0;

  MPI_Init(&argc, &argv);
  if (hk_mpi_new(&mpi, NULL, &st) != HK_OK) {
    fprintf(stderr, "hk_mpi_new: %s\n", st.message);
    rc = 1;
  } else {
    printf("rank %d of %d, chief %d\n", hk_mpi_rank(mpi), hk_mpi_size(mpi), hk_mpi_is_chief(mpi));
  }
  hk_mpi_free(mpi);
  MPI_Finalize();
  return rc;
}
