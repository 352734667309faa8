/*
 * fuzz_neff.c - libFuzzer target: the NEFF reader on arbitrary bytes.
 *
 * Opens the input as a NEFF, then reads everything a load would read:
 * every I/O entry, every .json member as JSON and every .npy member as an
 * array.  The sanitizers report what goes wrong; the target itself only
 * checks the invariants the rest of the emulator relies on.
 *
 * Then it loads the emulator program of every subgraph and, when the
 * program is small enough to run quickly (FUZZ_MAX_RUN_BYTES of I/O and
 * temporaries, FUZZ_MAX_OP_WORK element operations in its costliest op),
 * runs it once on I/O buffers filled with one byte, with a deadline of
 * one second, and frees everything.
 *
 * Bytes of the header padding (ignored by the reader) steer the target,
 * so the fuzzer can reach every path: 0x22C bit 0 selects hash
 * validation, bit 1 makes each output share the memory of an input of
 * the same size (a caller passing one tensor as both); 0x22D is the byte
 * the I/O buffers are filled with (0 in the seed corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/json.h"
#include "neff/neff.h"
#include "neff_mutate.h"
#include "program/program.h"

#define FUZZ_MAX_RUN_BYTES ((uint64_t)16 << 20)
#define FUZZ_MAX_OP_WORK ((uint64_t)1 << 24)
#define FUZZ_DEADLINE_NS 1000000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
require(int ok)
{
    if (!ok) {
        abort();
    }
}

static bool
ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);

    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Walk a parsed tree, bounded by the parser's own depth limit. */
static size_t
walk(const struct nrtemu_json *v, int depth)
{
    size_t nodes = 1;

    require(depth <= NRTEMU_JSON_MAX_DEPTH);
    switch (v->type) {
    case NRTEMU_JSON_STRING:
        require(v->u.string.chars[v->u.string.len] == '\0');
        break;
    case NRTEMU_JSON_ARRAY:
        for (size_t i = 0; i < v->u.array.count; i++) {
            nodes += walk(v->u.array.items[i], depth + 1);
        }
        break;
    case NRTEMU_JSON_OBJECT:
        for (size_t i = 0; i < v->u.object.count; i++) {
            require(nrtemu__json_get(v, v->u.object.keys[i]) != NULL);
            nodes += walk(v->u.object.values[i], depth + 1);
        }
        break;
    default:
        break;
    }
    return nodes;
}

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The observer checks that ops are reported once each, in order. */
struct observed {
    size_t next;
};

static void
observe(void *ctx, size_t index, const char *op, const char *shapes,
        const char *note, uint64_t start_ns, uint64_t end_ns)
{
    struct observed *o = ctx;

    (void)note;
    require(index == o->next && op != NULL && shapes != NULL &&
            start_ns <= end_ns);
    require(strstr(shapes, "->") != NULL);
    o->next++;
}

/* Inputs an output may share memory with (alias mode): the first few. */
#define FUZZ_ALIAS_CANDIDATES 16

/*
 * Run the program of subgraph `sg` once, when it is small enough.  Every
 * loop here is linear in the I/O table: the harness must not be what is
 * slow on an input with thousands of I/O entries.
 */
static void
run_program(const struct nrtemu_neff *neff, int sg,
            struct nrtemu_program *program, void **io_data, bool alias,
            int fill)
{
    uint64_t bytes, work, io_bytes = 0;
    size_t candidates[FUZZ_ALIAS_CANDIDATES], n_candidates = 0;
    struct observed seen = {0};
    bool *owned;
    NRT_STATUS st;

    nrtemu__program_footprint(program, &bytes, &work);
    for (size_t i = 0; i < neff->io_count; i++) {
        if (neff->io[i].subgraph == sg) {
            io_bytes += neff->io[i].size < FUZZ_MAX_RUN_BYTES
                            ? neff->io[i].size
                            : FUZZ_MAX_RUN_BYTES;
        }
    }
    if (bytes > FUZZ_MAX_RUN_BYTES || io_bytes > FUZZ_MAX_RUN_BYTES ||
        work > FUZZ_MAX_OP_WORK) {
        return;
    }
    owned = calloc(neff->io_count ? neff->io_count : 1, sizeof *owned);
    require(owned != NULL);
    /* Inputs first, so that outputs can share their memory. */
    for (int pass = 0; pass < 2; pass++) {
        nrt_tensor_usage_t usage =
            pass == 0 ? NRT_TENSOR_USAGE_INPUT : NRT_TENSOR_USAGE_OUTPUT;
        for (size_t i = 0; i < neff->io_count; i++) {
            const struct nrtemu_neff_io *io = &neff->io[i];
            if (io->subgraph != sg || io->usage != usage) {
                continue;
            }
            for (size_t k = 0; alias && pass == 1 && k < n_candidates; k++) {
                if (neff->io[candidates[k]].size == io->size) {
                    io_data[i] = io_data[candidates[k]];
                    break;
                }
            }
            if (io_data[i] == NULL) {
                io_data[i] = malloc(io->size);
                require(io_data[i] != NULL);
                memset(io_data[i], fill, io->size);
                owned[i] = true;
            }
            if (pass == 0 && n_candidates < FUZZ_ALIAS_CANDIDATES) {
                candidates[n_candidates++] = i;
            }
        }
    }
    st = nrtemu__program_run("fuzz", program, io_data,
                             now_ns() + FUZZ_DEADLINE_NS, observe, &seen);
    require(st == NRT_SUCCESS || st == NRT_EXEC_OOB || st == NRT_TIMEOUT);
    for (size_t i = 0; i < neff->io_count; i++) {
        if (owned[i]) {
            free(io_data[i]);
        }
        io_data[i] = NULL;
    }
    free(owned);
}

/* Load the program of every subgraph; run the small ones. */
static void
programs(const struct nrtemu_neff *neff, bool alias, int fill)
{
    void **io_data =
        calloc(neff->io_count ? neff->io_count : 1, sizeof *io_data);

    require(io_data != NULL);
    for (int sg = 0; sg < neff->subgraph_count; sg++) {
        struct nrtemu_program *program = NULL;
        if (nrtemu__program_load("fuzz", neff, sg, &program) != NRT_SUCCESS) {
            require(program == NULL);
            continue;
        }
        require(program != NULL);
        run_program(neff, sg, program, io_data, alias, fill);
        nrtemu__program_free(program);
    }
    free(io_data);
}

#ifdef FUZZ_CUSTOM_MUTATOR
/*
 * libFuzzer: half of the mutations edit one tar member and rebuild the
 * archive around it (neff_mutate.h), the others are libFuzzer's own.
 */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed);

size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                        unsigned int seed)
{
    if (seed & 1) {
        size_t n = neff_mutate_member(data, size, max_size, seed >> 1,
                                      LLVMFuzzerMutate);
        if (n != 0) {
            return n;
        }
    }
    return LLVMFuzzerMutate(data, size, max_size);
}
#endif

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool validate = size > 0x22c && (data[0x22c] & 1);
    bool alias = size > 0x22c && (data[0x22c] & 2);
    int fill = size > 0x22d ? data[0x22d] : 0;
    struct nrtemu_neff *neff = NULL;
    volatile size_t sink = 0;

    if (nrtemu__neff_open("fuzz", data, size, validate, &neff) !=
        NRT_SUCCESS) {
        require(neff == NULL);
        return 0;
    }
    require(neff->subgraph_count > 0);
    for (size_t i = 0; i < neff->io_count; i++) {
        const struct nrtemu_neff_io *io = &neff->io[i];
        require(io->size > 0 && io->ndim <= NRTEMU_MAX_DIMS);
        require(strlen(io->name) < sizeof io->name);
        require(io->subgraph >= 0 && io->subgraph < neff->subgraph_count);
        sink += io->size;
    }
    for (size_t i = 0; i < neff->file_count; i++) {
        const struct nrtemu_neff_file *f = &neff->files[i];
        struct nrtemu_json_doc *doc;
        struct nrtemu_npy npy;

        require(nrtemu__neff_find(neff, f->path) == f);
        require(f->data >= neff->payload && f->size <= neff->payload_size &&
                (size_t)(f->data - neff->payload) <=
                    neff->payload_size - f->size);
        if (f->size > 0) {
            sink += f->data[0] + f->data[f->size - 1];
        }
        if (ends_with(f->path, ".json") &&
            nrtemu__neff_json("fuzz", neff, f->path, &doc) == NRT_SUCCESS) {
            sink += walk(nrtemu__json_root(doc), 0);
            nrtemu__json_free(doc);
        }
        if (ends_with(f->path, ".npy") &&
            nrtemu__neff_npy("fuzz", neff, f->path, &npy) == NRT_SUCCESS) {
            require(npy.ndim <= NRTEMU_MAX_DIMS);
            require(npy.data >= f->data &&
                    npy.data + npy.size == f->data + f->size);
            if (npy.size > 0) {
                sink += npy.data[0] + npy.data[npy.size - 1];
            }
        }
    }
    programs(neff, alias, fill);
    nrtemu__neff_free(neff);
    (void)sink;
    return 0;
}
