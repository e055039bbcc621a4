#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Doxygen INPUT_FILTER: Doxygen 1.9 splits a /// comment at a "./" that
# starts a line (an end-of-list marker, with a warning), as in
# "./domex-cost-model.txt"; such a path is written "name (in the working
# directory)" instead. The headers stay as they are for C++ readers.
exec sed -E 's#^([[:space:]]*///[[:space:]]+)\./([^[:space:],]+)#\1\2 (in the working directory)#' "$1"
