/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_TEST_UTIL_H
#define METAROCE_HIL_TEST_UTIL_H

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

/**
 * \file
 * Test helpers: a pair of network namespaces joined by a veth pair (created by the
 * constructor, removed by the destructor), and child processes with bounded run time and
 * captured output.
 */

namespace metaroce
{
namespace hil
{
namespace test
{

/**
 * Two network namespaces "mr-hil-<pid>-<n>-a/b" joined by veth "va"/"vb" (10.250.1.1/.2), or,
 * with \p middle, each joined by its own veth pair to a third namespace "...-m" (devices "fa"
 * facing A and "fb" facing B, no addresses) where a forwarder bridges them.
 */
class NetnsPair
{
  public:
    /**
     * Create the namespaces; Ok() says whether it worked, Why() why not.
     * \param queues receive and transmit queues of each veth device (without \p middle)
     */
    explicit NetnsPair(int mtu = 9000, bool middle = false, int queues = 1);
    /// Remove the namespaces (and with them the veth pair).
    ~NetnsPair();
    NetnsPair(const NetnsPair&) = delete;
    NetnsPair& operator=(const NetnsPair&) = delete;

    /// \return true if both namespaces and the link are up.
    bool Ok() const
    {
        return m_ok;
    }

    /// \return why the setup failed (or why it cannot run here).
    const std::string& Why() const
    {
        return m_why;
    }

    /// \return the name of namespace A (10.250.1.1, device va).
    const std::string& A() const
    {
        return m_a;
    }

    /// \return the name of namespace B (10.250.1.2, device vb).
    const std::string& B() const
    {
        return m_b;
    }

    /// \return the name of the middle namespace (devices fa, fb), "" without one.
    const std::string& M() const
    {
        return m_m;
    }

    /// \return "" if namespaces can be made here, else the reason (not root, no `ip`).
    static std::string Unavailable();

  private:
    std::string m_a;   //!< namespace A
    std::string m_b;   //!< namespace B
    std::string m_m;   //!< middle namespace ("" without one)
    bool m_ok{false};  //!< set up
    std::string m_why; //!< setup failure
};

/// A child process whose stdout and stderr go to one file.
class Process
{
  public:
    /// Start \p argv (argv[0] is looked up in PATH).
    explicit Process(const std::vector<std::string>& argv);
    /// Kill the process if it still runs.
    ~Process();
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    /// Wait up to \p timeout. \return the exit status, or -1 (then the process is killed).
    int Wait(std::chrono::milliseconds timeout);
    /// Send \p signal.
    void Signal(int signal);
    /// \return everything the process printed so far.
    std::string Output() const;
    /// \return how many bytes the process printed so far (without reading them).
    uint64_t OutputSize() const;

    /// \return the process id (the program's own: `ip netns exec` and `prlimit` exec it).
    pid_t Pid() const
    {
        return m_pid;
    }

  private:
    pid_t m_pid{-1};   //!< child
    std::string m_log; //!< output file
    int m_status{-1};  //!< exit status once known
};

/// Run a shell command quietly. \return its exit status.
int RunQuiet(const std::string& cmd);

/// Wait up to \p timeout until \p process has printed \p text. \return true if it did.
bool WaitForOutput(const Process& process,
                   const std::string& text,
                   std::chrono::milliseconds timeout);

/// \return "prog args... in namespace ns" as an argv for `ip netns exec`.
std::vector<std::string> InNetns(const std::string& ns, std::vector<std::string> argv);

/**
 * Send \p count datagrams of \p size random bytes (seed \p seed) from namespace \p ns to
 * 10.250.1.1:4791 with metaroce-udp-blast, and wait up to 10 s. \return its exit status, or
 * -1; \p output gets what it printed.
 */
int BlastRandomDatagrams(const std::string& ns, int size, int count, int seed, std::string& output);

/// \return user plus system CPU time process \p pid has used so far (0 if it is gone).
std::chrono::milliseconds CpuTime(pid_t pid);

/// \return how many IPv4 TCP sockets (listeners too) process \p pid holds open (0 if it is
/// gone): its descriptors that are sockets listed in its network namespace's /proc/net/tcp.
size_t TcpSocketsHeld(pid_t pid);

/// \return the key=value fields of the last line starting with "RESULT" in \p output.
std::map<std::string, std::string> ParseResult(const std::string& output);

} // namespace test
} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_TEST_UTIL_H
