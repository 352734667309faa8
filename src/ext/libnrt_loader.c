/*
 * libnrt_loader.c - choose the libnrt to drive and resolve its functions.
 *
 * NRTPY_LIBNRT selects the library:
 *   emulator   the nrtpy emulator installed next to this extension
 *   system     the Neuron runtime's libnrt.so.1 (loader path, then
 *              /opt/aws/neuron/lib)
 *   <path>     any libnrt.so.1, given by a path containing '/'
 *   auto       (default) the system library when it loads and a Neuron
 *              device node exists, else the emulator; a device node with a
 *              system library that fails to load warns (RuntimeWarning,
 *              with the dlerror() texts) before falling back
 * The library is opened RTLD_LOCAL, so its symbols never interpose on other
 * libraries, and no LD_LIBRARY_PATH is needed for either choice.
 *
 * Test hook: NRTPY_NEURON_DEVICE_GLOB replaces the device-node pattern
 * (/dev/neuron[0-9]*), so tests can drive the hardware branch of `auto`
 * without a device.  It is not a user setting.
 */
#include "ext.h"

#include <dlfcn.h>
#include <glob.h>
#include <string.h>

struct libnrt libnrt;

static const char SYSTEM_FALLBACK[] = "/opt/aws/neuron/lib/libnrt.so.1";
static const char DEVICE_GLOB[] = "/dev/neuron[0-9]*";

/* The emulator lives in lib/ beside this extension's own file. */
static int
emulator_path(char *out, size_t outlen)
{
    Dl_info info;
    if (dladdr((void *)&emulator_path, &info) == 0 || info.dli_fname == NULL) {
        PyErr_SetString(PyExc_ImportError,
                        "nrtpy: cannot locate the _nrtpy extension file");
        return -1;
    }
    const char *slash = strrchr(info.dli_fname, '/');
    size_t dirlen = slash ? (size_t)(slash - info.dli_fname) : 1;
    const char *dir = slash ? info.dli_fname : ".";
    int n = snprintf(out, outlen, "%.*s/lib/libnrt.so.1", (int)dirlen, dir);
    if (n < 0 || (size_t)n >= outlen) {
        PyErr_SetString(PyExc_ImportError, "nrtpy: install path too long");
        return -1;
    }
    return 0;
}

/* The device-node pattern; NRTPY_NEURON_DEVICE_GLOB is a test hook. */
static const char *
device_glob(void)
{
    const char *pattern = getenv("NRTPY_NEURON_DEVICE_GLOB");
    return pattern != NULL && pattern[0] != '\0' ? pattern : DEVICE_GLOB;
}

/* Whether a device node exists; the first one found goes to `node`. */
static bool
neuron_device_present(char *node, size_t nodelen)
{
    glob_t g;
    bool found = glob(device_glob(), 0, NULL, &g) == 0 && g.gl_pathc > 0;
    if (found) {
        snprintf(node, nodelen, "%s", g.gl_pathv[0]);
    }
    globfree(&g);
    return found;
}

/* dlopen, keeping the dlerror() text before anything can overwrite it. */
static void *
open_library(const char *path, char *err, size_t errlen)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "unknown dlopen error");
    }
    return h;
}

/* On failure `err` holds both dlerror() texts: the first names the real
 * cause when the loader found a libnrt.so.1 that cannot load. */
static void *
open_system(char *err, size_t errlen)
{
    void *h = open_library("libnrt.so.1", err, errlen);
    if (h == NULL) {
        size_t used = strlen(err);
        if (used + 2 < errlen) {
            snprintf(err + used, errlen - used, "; ");
            used += 2;
        }
        h = open_library(SYSTEM_FALLBACK, err + used, errlen - used);
    }
    return h;
}

static int
resolve_symbols(void)
{
#define RESOLVE_REQUIRED(name)                                             \
    *(void **)&libnrt.name = dlsym(libnrt.handle, #name);                  \
    if (libnrt.name == NULL) {                                             \
        PyErr_Format(PyExc_ImportError,                                    \
                     "nrtpy: %s does not export the required function %s", \
                     libnrt.path, #name);                                  \
        return -1;                                                         \
    }
    LIBNRT_REQUIRED(RESOLVE_REQUIRED)
#undef RESOLVE_REQUIRED
#define RESOLVE_OPTIONAL(name) \
    *(void **)&libnrt.name = dlsym(libnrt.handle, #name);
    LIBNRT_OPTIONAL(RESOLVE_OPTIONAL)
#undef RESOLVE_OPTIONAL
    /* Only our emulator exports its instance name. */
    libnrt.emulated = libnrt.nrtemu_instance_name != NULL;
    return 0;
}

int
libnrt_load(void)
{
    char err[1024] = "";
    char path[sizeof(libnrt.path)];
    const char *choice = getenv("NRTPY_LIBNRT");
    void *h = NULL;

    if (choice == NULL || choice[0] == '\0') {
        choice = "auto";
    }
    if (strcmp(choice, "auto") == 0) {
        char node[256];
        if (neuron_device_present(node, sizeof node)) {
            h = open_system(err, sizeof err);
            /* Say why hardware goes unused, or the user never learns. */
            if (h == NULL &&
                PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                                 "nrtpy: a Neuron device exists (%s) but the "
                                 "system libnrt failed to load (%s); using "
                                 "the emulator",
                                 node, err) < 0) {
                return -1;
            }
        }
        if (h == NULL) {
            choice = "emulator";
        } else {
            snprintf(path, sizeof path, "libnrt.so.1");
        }
    }
    if (h == NULL && strcmp(choice, "emulator") == 0) {
        if (emulator_path(path, sizeof path) < 0) {
            return -1;
        }
        h = open_library(path, err, sizeof err);
    } else if (h == NULL && strcmp(choice, "system") == 0) {
        snprintf(path, sizeof path, "libnrt.so.1");
        h = open_system(err, sizeof err);
    } else if (h == NULL && strchr(choice, '/') != NULL) {
        snprintf(path, sizeof path, "%s", choice);
        h = open_library(path, err, sizeof err);
    } else if (h == NULL) {
        PyErr_Format(PyExc_ImportError,
                     "nrtpy: NRTPY_LIBNRT=%s is not one of 'auto', "
                     "'emulator', 'system' or a path to a libnrt.so.1",
                     choice);
        return -1;
    }
    if (h == NULL) {
        PyErr_Format(PyExc_ImportError,
                     "nrtpy: cannot load libnrt (NRTPY_LIBNRT=%s): %s", choice,
                     err);
        return -1;
    }

    libnrt.handle = h;
    /* Report the file really loaded, wherever the loader found it. */
    Dl_info info;
    void *any = dlsym(h, "nrt_init");
    if (any != NULL && dladdr(any, &info) != 0 && info.dli_fname != NULL) {
        snprintf(libnrt.path, sizeof libnrt.path, "%s", info.dli_fname);
    } else {
        snprintf(libnrt.path, sizeof libnrt.path, "%s", path);
    }
    if (resolve_symbols() < 0) {
        dlclose(h);
        memset(&libnrt, 0, sizeof libnrt);
        return -1;
    }
    return 0;
}

int
libnrt_require(const void *fn, const char *name)
{
    if (fn != NULL) {
        return 0;
    }
    raise_nrtpy_error("the loaded libnrt (%s) does not provide %s",
                      libnrt.path, name);
    return -1;
}

void *
emulator_function(const char *name)
{
    static void *bundled; /* opened once, under the GIL; never closed */
    char path[sizeof(libnrt.path)];
    char err[1024];

    if (libnrt.emulated) {
        void *fn = dlsym(libnrt.handle, name);
        if (fn != NULL) {
            return fn;
        }
    }
    if (bundled == NULL) {
        if (emulator_path(path, sizeof path) < 0) {
            return NULL;
        }
        bundled = open_library(path, err, sizeof err);
        if (bundled == NULL) {
            PyErr_Format(PyExc_ImportError,
                         "nrtpy: cannot load the bundled emulator: %s", err);
            return NULL;
        }
    }
    void *fn = dlsym(bundled, name);
    if (fn == NULL) {
        PyErr_Format(PyExc_ImportError,
                     "nrtpy: the bundled emulator does not export %s", name);
    }
    return fn;
}
