#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified ibv_uc_pingpong between two processes (server on softib0,
# client on softib1): rc_pingpong.sh with the UC tool.  Arguments go to
# both sides (e.g. -s 4096 -e).
SIB_PINGPONG=ibv_uc_pingpong exec bash "$(dirname "$0")/rc_pingpong.sh" "$@"
