/* SPDX-License-Identifier: MIT */
/*
 * softib: how a function becomes part of the libibverbs.so.1 export table.
 *
 * The library is compiled with -fvisibility=hidden and linked with
 * src/verbs/libibverbs.map, a version script that reproduces rdma-core 44's
 * version nodes (IBVERBS_1.0 <- 1.1 <- 1.5 ... <- 1.14, and the standalone
 * IBVERBS_PRIVATE_34).  The "abi_exports" test (tests/abi/check_exports.sh)
 * compares the result with tests/abi/libibverbs.expected: name, version,
 * default vs hidden.
 *
 * Two kinds of versioned symbol exist in an ELF export table:
 *
 *  - the DEFAULT version, "name@@VER" (objdump -T prints "VER name").  A
 *    program linked against libibverbs binds to it.  A name has at most one
 *    default version.  All 146 of them are listed in libibverbs.map;
 *  - HIDDEN (non-default) versions, "name@VER" (objdump -T prints
 *    "(VER) name").  Nothing can link against them any more; they exist only
 *    so that binaries built long ago against VER still find their symbol.
 *    softib has 33 "name@IBVERBS_1.0" plus "ibv_register_driver@IBVERBS_1.1",
 *    all in compat.c, and they are not listed in the map.
 *
 * Rules:
 *
 *  1. Every exported definition carries SIB_EXPORT (default visibility).  A
 *     hidden-visibility definition never reaches the dynamic symbol table,
 *     not even when SIB_SYMVER renames it.  Anything SIB_EXPORT that is not
 *     listed in the map is hidden again by its "local: *".
 *
 *  2. A default version is simply defined under its own name, whether or not
 *     the name also has a hidden 1.0 twin.  The map gives it its node:
 *
 *         #undef ibv_query_port            (verbs.h makes some names macros:
 *                                           ibv_query_port, ibv_reg_mr,
 *                                           ibv_reg_mr_iova, and
 *                                           ibv_get_device_list under
 *                                           RDMA_STATIC_PROVIDERS)
 *         SIB_EXPORT int ibv_query_port(struct ibv_context *ctx, uint8_t port,
 *                                       struct _compat_ibv_port_attr *attr)
 *         { ... }                          -> ibv_query_port@@IBVERBS_1.1
 *
 *     Do not add SIB_SYMVER(ibv_query_port, "ibv_query_port@@...") with the
 *     same name as impl (GNU ld: "multiple definition").  If a differently
 *     named implementation is wanted, SIB_SYMVER(sib_query_port,
 *     "ibv_query_port@@IBVERBS_1.1") also works (sib_query_port itself stays
 *     local).
 *
 *  3. Hidden compat versions use a single '@' and a distinct impl name:
 *
 *         SIB_EXPORT int sib_compat_ibv_query_port_1_0(...) { ... }
 *         SIB_SYMVER(sib_compat_ibv_query_port_1_0, "ibv_query_port@IBVERBS_1.0");
 *
 *     Never list a hidden-only name in libibverbs.map, and never put a
 *     "local:" pattern into a node that has hidden versions (see the map).
 *
 * SIB_SYMVER must be used at file scope, in the same translation unit as the
 * definition of impl.  It emits a GNU as ".symver" directive; do not build
 * this library with -flto (GCC 10+ would need __attribute__((symver)) then).
 */
#ifndef SIB_VERBS_EXPORT_H
#define SIB_VERBS_EXPORT_H

#ifndef SIB_EXPORT
#define SIB_EXPORT __attribute__((visibility("default")))
#endif

/* SIB_SYMVER(impl, "name@VER") binds the SIB_EXPORT function impl, defined
 * in this file, to the hidden version name@VER ("name@@VER": default). */
#define SIB_SYMVER(impl, versioned_name) \
	__asm__(".symver " #impl ", " versioned_name)

#endif /* SIB_VERBS_EXPORT_H */
