#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibv_ud_pingpong (UD QPs, address handles, DETH and Q_Key, the
# GRH area with -g) between two processes: server on softib0, client on
# softib1, as rc_pingpong.sh.  Arguments go to both sides (e.g. -s 2048 -e;
# -s is at most the port's active MTU, the tool's own check).
SIB_PINGPONG=ibv_ud_pingpong exec bash "$(dirname "$0")/rc_pingpong.sh" "$@"
