# The CUDA backend module libdptrain_cuda.so (modules/cuda/): built when DPTRAIN_CUDA is ON, which is
# the default when the CUDA toolkit is found (except in sanitizer and fuzz builds, where CUDA's libraries
# would only add noise and time). It links cudart, cuBLAS, cuDNN and NCCL; libdptrain.so never does.
# Sets DPTRAIN_HAVE_CUDA_MODULE.
find_package(CUDAToolkit QUIET)
set(dpt_cuda_default OFF)
if(CUDAToolkit_FOUND AND NOT DPTRAIN_SANITIZE AND NOT DPTRAIN_FUZZ)
  set(dpt_cuda_default ON)
endif()
option(DPTRAIN_CUDA "Build the CUDA backend module libdptrain_cuda.so (needs the CUDA toolkit, cuDNN, NCCL)"
       ${dpt_cuda_default})
set(DPTRAIN_HAVE_CUDA_MODULE OFF)
if(NOT DPTRAIN_CUDA)
  message(STATUS "CUDA module: off (DPTRAIN_CUDA=OFF)")
  return()
endif()

# cuDNN and NCCL have no CMake targets: look for them where the toolkit lives.
if(CUDAToolkit_FOUND)
  find_path(DPTRAIN_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  # (the versioned names: Python's nvidia-* wheels ship no unversioned library)
  find_library(DPTRAIN_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(DPTRAIN_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(DPTRAIN_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${CUDAToolkit_LIBRARY_DIR})
endif()
set(dpt_cuda_missing "")
foreach(piece IN ITEMS CUDAToolkit_FOUND CUDAToolkit_NVCC_EXECUTABLE DPTRAIN_CUDNN_INCLUDE_DIR DPTRAIN_CUDNN_LIBRARY
                       DPTRAIN_NCCL_INCLUDE_DIR DPTRAIN_NCCL_LIBRARY)
  if(NOT ${piece})
    list(APPEND dpt_cuda_missing ${piece})
  endif()
endforeach()
if(dpt_cuda_missing)
  message(WARNING "CUDA module not built: not found: ${dpt_cuda_missing} (or configure with -DDPTRAIN_CUDA=OFF)")
  return()
endif()

# Real code for sm_80 (A100) and sm_90 (H100/H200), PTX for later GPUs. Never "native": it fails without a GPU.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual" CACHE STRING "CUDA architectures of libdptrain_cuda.so")
endif()
if(NOT DEFINED CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
endif()
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(DPTRAIN_HAVE_CUDA_MODULE ON)
message(STATUS "CUDA module: CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, "
               "cuDNN ${DPTRAIN_CUDNN_LIBRARY}, NCCL ${DPTRAIN_NCCL_LIBRARY}")
