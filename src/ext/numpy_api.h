/*
 * numpy_api.h - the NumPy C API, shared by the extension's files.
 *
 * We use it only for arrays: the buffer protocol cannot describe bfloat16
 * or fp8 arrays (ml_dtypes), and creating result arrays through the C API
 * is several times cheaper than calling numpy.empty.  module.c defines
 * NRTPY_NUMPY_IMPORT and runs import_array(); the other files share its
 * table.
 */
#ifndef NRTPY_NUMPY_API_H
#define NRTPY_NUMPY_API_H

#define PY_ARRAY_UNIQUE_SYMBOL nrtpy_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#ifndef NRTPY_NUMPY_IMPORT
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#endif /* NRTPY_NUMPY_API_H */
