// SPDX-License-Identifier: MIT
/*
 * Placeholder until helper D's route.c (SIB_CTL_ROUTE, the map's
 * route_gen) is merged: D's file replaces this one whole.  Nothing caches
 * routes yet, so a forwarding change has nothing to invalidate.
 */
#include "daemon/softibd.h"

void sibd_route_changed(struct sibd *d) { (void)d; }
