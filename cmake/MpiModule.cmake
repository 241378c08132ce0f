# The MPI module libdptrain_mpi.so (modules/mpi/): built when DPTRAIN_MPI is ON, which is the default when
# MPI's C bindings are found (Debian: libopenmpi-dev), except in sanitizer and fuzz builds. libdptrain.so
# never links MPI: it loads the module when a trainer asks for the MPI communicator.
find_package(MPI QUIET COMPONENTS C)
set(dpt_mpi_default OFF)
if(MPI_C_FOUND AND NOT DPTRAIN_SANITIZE AND NOT DPTRAIN_FUZZ)
  set(dpt_mpi_default ON)
endif()
option(DPTRAIN_MPI "Build the MPI module libdptrain_mpi.so (needs MPI, e.g. libopenmpi-dev)" ${dpt_mpi_default})
set(DPTRAIN_HAVE_MPI_MODULE OFF)
if(DPTRAIN_MPI)
  if(NOT MPI_C_FOUND)
    message(WARNING "MPI module not built: MPI not found (install libopenmpi-dev, or -DDPTRAIN_MPI=OFF)")
  else()
    set(DPTRAIN_HAVE_MPI_MODULE ON)
    message(STATUS "MPI module: on (MPI ${MPI_C_VERSION})")
  endif()
endif()
