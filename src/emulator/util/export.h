/*
 * export.h - marks the functions that form the library's ABI.
 *
 * The library is built with -fvisibility=hidden and a version script, so a
 * function is visible to clients only when it carries NRTEMU_EXPORT and its
 * name matches nrt_*, nrta_* or nrtemu_* (exports.map).  Both guards exist so
 * that a helper can never leak into the dynamic symbol table by accident.
 */
#ifndef NRTEMU_EXPORT_H
#define NRTEMU_EXPORT_H

#define NRTEMU_EXPORT __attribute__((visibility("default")))

#endif /* NRTEMU_EXPORT_H */
