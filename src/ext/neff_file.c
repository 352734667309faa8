/*
 * neff_file.c - NEFF files: reading one whole, and the NEFF reader and
 * header layout of the emulator made visible to Python (nrtpy.neff).
 */
#include "ext.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* NEFF_FILE_MAX_BYTES: far above any real NEFF, and a bound on what a
 * mistaken path (a disk image, /dev/zero) can make us allocate. */
int
neff_file_read(const char *path, unsigned char **out, size_t *out_size)
{
    /* O_NONBLOCK: opening a FIFO must not block (close() would wait for
     * this call forever); anything but a regular file is refused below. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    struct stat st;
    int e = 0;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        e = errno;
    } else if (!S_ISREG(st.st_mode)) {
        e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    } else if ((uint64_t)st.st_size > NEFF_FILE_MAX_BYTES) {
        e = EFBIG;
    } else if ((buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1)) ==
               NULL) {
        e = ENOMEM;
    }
    size_t size = e == 0 ? (size_t)st.st_size : 0, got = 0;
    while (e == 0 && got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            e = n < 0 ? errno : EIO; /* EIO: the file shrank meanwhile */
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    if (e != 0) {
        free(buf);
        return e;
    }
    *out = buf;
    *out_size = size;
    return 0;
}

/* The emulator's NEFF reader, resolved once (see emulator_function()). */
static struct {
    NRT_STATUS (*describe)(const void *image, size_t size, char **json_out);
    void (*buffer_free)(char *buffer);
    const char *(*last_error)(void);
} reader;

static int
reader_resolve(void)
{
    if (reader.describe != NULL) {
        return 0;
    }
    void *describe = emulator_function("nrtemu_neff_describe");
    void *buffer_free =
        describe ? emulator_function("nrtemu_buffer_free") : NULL;
    void *last_error =
        buffer_free ? emulator_function("nrtemu_last_error") : NULL;
    if (last_error == NULL) {
        return -1;
    }
    *(void **)&reader.buffer_free = buffer_free;
    *(void **)&reader.last_error = last_error;
    *(void **)&reader.describe = describe;
    return 0;
}

PyObject *
module_neff_describe(PyObject *module, PyObject *arg)
{
    (void)module;
    PyObject *fs_path = NULL;

    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "path must be a str, not %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (reader_resolve() < 0 || !PyUnicode_FSConverter(arg, &fs_path)) {
        return NULL;
    }
    unsigned char *image = NULL;
    size_t size = 0;
    char *json = NULL;
    char detail[1024] = "";
    NRT_STATUS st = NRT_SUCCESS;
    int err;

    Py_BEGIN_ALLOW_THREADS
        err = neff_file_read(PyBytes_AS_STRING(fs_path), &image, &size);
        if (err == 0) {
            st = reader.describe(image, size, &json);
            if (st != NRT_SUCCESS) {
                /* Thread-local: read on the thread that failed. */
                snprintf(detail, sizeof detail, "%s", reader.last_error());
            }
            free(image);
        }
    Py_END_ALLOW_THREADS
    Py_DECREF(fs_path);

    if (err != 0) {
        /* A FIFO, device or directory: the errno says which. */
        errno = err;
        return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
    }
    if (st == NRT_RESOURCE) {
        return PyErr_Format(PyExc_MemoryError, "%U: %s", arg, detail);
    }
    if (st != NRT_SUCCESS) {
        return PyErr_Format(PyExc_ValueError,
                            "%U: not a NEFF, or a damaged one: %s", arg,
                            detail);
    }
    PyObject *text = PyUnicode_FromString(json);
    reader.buffer_free(json);
    return text;
}

int
neff_constants_add_to_module(PyObject *module)
{
    if (PyModule_AddIntConstant(module, "NEFF_HEADER_SIZE",
                                NRTEMU_NEFF_HEADER_SIZE) < 0) {
        return -1;
    }
    PyObject *mask =
        PyLong_FromUnsignedLongLong(NRTEMU_NEFF_FEATURES_SUPPORTED);
    if (mask == NULL) {
        return -1;
    }
    int rc = PyModule_AddObjectRef(module, "NEFF_FEATURES_SUPPORTED", mask);
    Py_DECREF(mask);
    if (rc < 0) {
        return -1;
    }
    /* ((name, offset, length, kind), ...), in header order. */
    static const struct {
        const char *name;
        int offset, len;
        const char *kind;
    } rows[] = {
#define FIELD_ROW(name, offset, len, kind) {#name, offset, len, #kind},
        NRTEMU_NEFF_HEADER_FIELDS(FIELD_ROW)
#undef FIELD_ROW
    };
    const Py_ssize_t count = (Py_ssize_t)(sizeof rows / sizeof rows[0]);
    PyObject *fields = PyTuple_New(count);
    if (fields == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *row = Py_BuildValue("(siis)", rows[i].name, rows[i].offset,
                                      rows[i].len, rows[i].kind);
        if (row == NULL) {
            Py_DECREF(fields);
            return -1;
        }
        PyTuple_SET_ITEM(fields, i, row);
    }
    rc = PyModule_AddObjectRef(module, "NEFF_HEADER_FIELDS", fields);
    Py_DECREF(fields);
    return rc;
}
