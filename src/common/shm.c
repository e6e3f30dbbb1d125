/* SPDX-License-Identifier: MIT */
/*
 * The process's pointer to the fabric map (sib_shm.h).  It lives here, below
 * both the HCA that reads it and the verbs library that maps it, so that
 * neither needs the other for it.  Written once before any context opens.
 */
#include <stddef.h>

#include "common/sib_shm.h"

struct sib_fabric_shm *sib_fabric;
