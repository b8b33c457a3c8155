/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-huge-pages.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

namespace ns3
{

namespace
{

/// The glibc tunable that makes malloc ask for transparent huge pages.
constexpr const char* TUNABLE = "glibc.malloc.hugetlb";
/// Set for the second run only, so that a failed tunable can never make the program loop.
constexpr const char* REEXEC_MARK = "METAROCE_HUGE_PAGES_REEXEC";

/// \return the part of \p path after its last '/'
std::string
BaseName(const std::string& path)
{
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// \return the kernel's THP mode (always, madvise, never) or an empty string when unknown
std::string
KernelThpMode()
{
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    if (!std::getline(in, line))
    {
        return "";
    }
    const std::size_t open = line.find('[');
    const std::size_t close = line.find(']', open);
    return open == std::string::npos || close == std::string::npos
               ? ""
               : line.substr(open + 1, close - open - 1);
}

/// \return true if the C library reads glibc.malloc.hugetlb (glibc 2.35 and later)
bool
LibcHasTunable(std::string& why)
{
#ifdef __GLIBC__
    const char* version = gnu_get_libc_version();
    unsigned major = 0;
    unsigned minor = 0;
    if (std::sscanf(version, "%u.%u", &major, &minor) == 2 &&
        (major > 2 || (major == 2 && minor >= 35)))
    {
        return true;
    }
    why = std::string("glibc ") + version + " has no " + TUNABLE;
    return false;
#else
    why = "the C library is not glibc";
    return false;
#endif
}

/// \return the value of glibc.malloc.hugetlb in GLIBC_TUNABLES, or an empty string if unset
std::string
TunableValue(const char* tunables)
{
    if (tunables == nullptr)
    {
        return "";
    }
    std::stringstream list(tunables);
    std::string item;
    std::string value;
    while (std::getline(list, item, ':'))
    {
        const std::string prefix = std::string(TUNABLE) + "=";
        if (item.compare(0, prefix.size(), prefix) == 0)
        {
            value = item.substr(prefix.size());
        }
    }
    return value;
}

/**
 * \param path a file of "Key: value" lines under /proc
 * \param format sscanf format of the wanted line, with one %llu
 * \return the number on the first line that matches, or 0 when none does
 */
uint64_t
ProcNumber(const char* path, const char* format)
{
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
    {
        unsigned long long value = 0;
        if (std::sscanf(line.c_str(), format, &value) == 1)
        {
            return value;
        }
    }
    return 0;
}

} // namespace

std::string
MetaRoceUseHugePages(char** argv)
{
    const bool secondRun = std::getenv(REEXEC_MARK) != nullptr;
    unsetenv(REEXEC_MARK); // not inherited by anything this run starts
    const char* choice = std::getenv("METAROCE_HUGE_PAGES");
    if (choice != nullptr && std::strcmp(choice, "0") == 0)
    {
        return "4 KiB pages (METAROCE_HUGE_PAGES=0)";
    }
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    const std::string value = TunableValue(tunables);
    if (!value.empty())
    {
        return value == "0" ? std::string("4 KiB pages (GLIBC_TUNABLES ") + TUNABLE + "=0)"
                            : std::string("transparent huge pages requested (GLIBC_TUNABLES ") +
                                  TUNABLE + "=" + value + ")";
    }
    if (secondRun)
    {
        return "4 KiB pages (GLIBC_TUNABLES did not reach the second run)";
    }
    const std::string mode = KernelThpMode();
    if (mode == "always")
    {
        // glibc acts on the tunable only in madvise mode; here every region gets them anyway.
        return "transparent huge pages (the kernel's mode is always)";
    }
    if (mode != "madvise")
    {
        return "4 KiB pages (the kernel's transparent huge pages are " +
               (mode.empty() ? std::string("unknown") : mode) + ")";
    }
    std::string why;
    if (!LibcHasTunable(why))
    {
        return "4 KiB pages (" + why + ")";
    }
    const char* preload = std::getenv("LD_PRELOAD");
    if (preload != nullptr && *preload != '\0')
    {
        // A tool such as valgrind or heaptrack watches this process through a preloaded
        // library: a new run could escape it (valgrind does not follow exec by default).
        return "4 KiB pages (LD_PRELOAD is set: a tool watches this process)";
    }
    if (ProcNumber("/proc/self/status", "TracerPid: %llu") != 0)
    {
        // Under gdb or strace a new run would hit early breakpoints twice.
        return "4 KiB pages (a debugger or tracer is attached)";
    }
    if (argv == nullptr || argv[0] == nullptr)
    {
        return "4 KiB pages (no program name)";
    }
    char self[PATH_MAX];
    const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (length <= 0)
    {
        return "4 KiB pages (/proc/self/exe is unreadable)";
    }
    self[length] = '\0';
    if (BaseName(self) != BaseName(argv[0]))
    {
        // Another program runs this one (a loader, an emulator): starting /proc/self/exe would
        // start that program without its own arguments.
        return std::string("4 KiB pages (the running image is ") + self + ", not " + argv[0] + ")";
    }
    // Copied: setenv may invalidate what getenv returned.
    const bool hadTunables = tunables != nullptr;
    const std::string previous = hadTunables ? tunables : "";
    const std::string updated =
        previous.empty() ? std::string(TUNABLE) + "=1" : previous + ":" + TUNABLE + "=1";
    setenv("GLIBC_TUNABLES", updated.c_str(), 1);
    setenv(REEXEC_MARK, "1", 1);
    std::fflush(nullptr);
    // /proc/self/exe is the running image even if its file has been replaced since.
    execv("/proc/self/exe", argv);
    // Only reached when the new run could not start: go on as we are.
    const int error = errno;
    if (hadTunables)
    {
        setenv("GLIBC_TUNABLES", previous.c_str(), 1);
    }
    else
    {
        unsetenv("GLIBC_TUNABLES");
    }
    unsetenv(REEXEC_MARK);
    return std::string("4 KiB pages (could not start ") + self + " again: " + std::strerror(error) +
           ")";
}

uint64_t
MetaRoceAnonHugePageBytes()
{
    return ProcNumber("/proc/self/smaps_rollup", "AnonHugePages: %llu kB") * 1024;
}

} // namespace ns3
