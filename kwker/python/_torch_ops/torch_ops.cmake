# The compiled PyTorch operators (kwker/_torch_ops*.so, loaded by kwker.torch_ops), built
# against the torch installed in the build environment, with _torch_build.json naming that
# torch. The wheel's version then ends in +torch2.M (build_support/torch_version.py). Skipped,
# with a status line, when torch does not import or KWKER_BUILD_TORCH_OPS=0; Kwker then ships
# its Python-registered operators only. Nothing here is ever compiled at run time.
if("$ENV{KWKER_BUILD_TORCH_OPS}" STREQUAL "0")
  message(STATUS "kwker: compiled PyTorch operators off (KWKER_BUILD_TORCH_OPS=0)")
  return()
endif()
execute_process(
  COMMAND "${Python_EXECUTABLE}" -c
    "import torch, torch.utils.cpp_extension as c; print(torch.__version__); print('|'.join(c.include_paths())); print(c.library_paths()[0]); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE _kw_torch RESULT_VARIABLE _kw_rc ERROR_VARIABLE _kw_err
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _kw_rc EQUAL 0)
  message(STATUS "kwker: torch does not import in the build environment; compiled PyTorch "
                 "operators not built (the Python-registered ones still ship)")
  return()
endif()
string(REPLACE "\n" ";" _kw_torch "${_kw_torch}")
list(GET _kw_torch 0 KWKER_TORCH_VERSION)
list(GET _kw_torch 1 _kw_inc)
list(GET _kw_torch 2 _kw_libdir)
list(GET _kw_torch 3 _kw_abi)
string(REPLACE "|" ";" _kw_inc "${_kw_inc}")
string(REGEX MATCH "^[0-9]+\\.[0-9]+" _kw_minor "${KWKER_TORCH_VERSION}")
message(STATUS "kwker: compiled PyTorch operators for torch ${KWKER_TORCH_VERSION}")

add_library(_torch_ops MODULE python/_torch_ops/ops.cc python/_torch_ops/linear_ops.cc)
target_include_directories(_torch_ops SYSTEM PRIVATE ${_kw_inc})
target_include_directories(_torch_ops PRIVATE include)
target_compile_definitions(_torch_ops PRIVATE
  KWKER_TORCH_BUILT_FOR="${KWKER_TORCH_VERSION}" _GLIBCXX_USE_CXX11_ABI=${_kw_abi})
# -fopenmp for at::parallel_for (rows split over torch's own threads), linked against the
# libgomp torch ships (same soname, already loaded by torch): one OpenMP runtime per process.
target_compile_options(_torch_ops PRIVATE -O2 -fopenmp)
foreach(_kw_lib c10 torch_cpu torch)
  find_library(_kw_path_${_kw_lib} ${_kw_lib} PATHS "${_kw_libdir}" NO_DEFAULT_PATH REQUIRED)
  target_link_libraries(_torch_ops PRIVATE "${_kw_path_${_kw_lib}}")
endforeach()
find_file(_kw_gomp libgomp.so.1 PATHS "${_kw_libdir}" NO_DEFAULT_PATH)
if(_kw_gomp)
  target_link_libraries(_torch_ops PRIVATE "${_kw_gomp}")
else()
  target_link_libraries(_torch_ops PRIVATE gomp)
endif()
target_link_libraries(_torch_ops PRIVATE kwker)
# Every symbol resolved at the link (torch's libraries are all named above), so none can stay
# unversioned and escape the manylinux check; below glibc 2.32, the operators keep their own
# __libc_single_threaded (single_threaded.cc says why).
target_link_options(_torch_ops PRIVATE -Wl,--no-undefined)
if(KWKER_GLIBC AND KWKER_GLIBC VERSION_LESS 2.32)
  target_sources(_torch_ops PRIVATE python/_torch_ops/single_threaded.cc)
endif()
# libkwker from the wheel's lib/; torch's libraries are already loaded by `import torch`.
set_target_properties(_torch_ops PROPERTIES PREFIX "" INSTALL_RPATH "$ORIGIN/lib")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/_torch_build.json
  "{\"torch\": \"${KWKER_TORCH_VERSION}\", \"torch_minor\": \"${_kw_minor}\"}\n")
install(TARGETS _torch_ops LIBRARY DESTINATION .)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/_torch_build.json DESTINATION .)
