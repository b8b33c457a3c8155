/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HUGE_PAGES_H
#define METAROCE_HUGE_PAGES_H

#include <cstdint>
#include <string>

/**
 * \file
 * Transparent huge pages for the heap of a simulation program.
 *
 * A large fabric keeps its events, packets and device state spread over a heap of a hundred MiB
 * or more, and with 4 KiB pages a good part of each packet-hop is spent on TLB misses
 * (docs/benchmarks.md: 1.1-1.4x on benchmark 1 before the prefetching events, 1.05x with them).
 * Where the kernel gives transparent huge pages only on request ("madvise", Debian's default),
 * glibc's malloc (2.35 and later) requests them when the tunable glibc.malloc.hugetlb=1 is in
 * GLIBC_TUNABLES, which glibc reads once, when the program starts. MetaRoceUseHugePages()
 * therefore adds the tunable and starts the program again, once, with the same arguments and
 * the same environment plus the tunable (which processes the program starts inherit). Results
 * do not change: only where the heap's pages come from.
 */

namespace ns3
{

/**
 * Ask for huge pages for the heap. Call it first in main(), before anything else runs: it may
 * replace the process with a new run of the same program (execv of /proc/self/exe, same
 * arguments) and then not return. It does nothing, and says why in the returned text, when:
 * - the environment has METAROCE_HUGE_PAGES=0;
 * - GLIBC_TUNABLES already sets glibc.malloc.hugetlb (the user's choice, or the second run);
 * - the kernel's transparent huge pages are "always" (every region gets them already), off
 *   ("never") or unknown;
 * - the C library is not glibc 2.35 or later;
 * - LD_PRELOAD is set (valgrind, heaptrack and other tools watch the process that way, and a
 *   new run could escape them);
 * - a debugger or tracer is attached (TracerPid in /proc/self/status);
 * - the running image is not the program itself (a loader or emulator runs it, or the file was
 *   replaced since it started);
 * - the new run cannot be started (the text has the error; the program goes on with 4 KiB pages).
 * \param argv main's argv (argv[0] names the program)
 * \return a one-line description of the heap's pages, for a benchmark's report
 */
std::string MetaRoceUseHugePages(char** argv);

/**
 * \return the bytes of this process's anonymous memory now backed by transparent huge pages
 *         (AnonHugePages of /proc/self/smaps_rollup); 0 when unknown
 */
uint64_t MetaRoceAnonHugePageBytes();

} // namespace ns3

#endif // METAROCE_HUGE_PAGES_H
