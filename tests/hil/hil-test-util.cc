/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "hil-test-util.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace metaroce
{
namespace hil
{
namespace test
{
namespace
{

/// Run a shell command quietly. \return its exit status.
int
Shell(const std::string& cmd)
{
    int st = std::system((cmd + " >/dev/null 2>&1").c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/// Remove namespaces left behind by test processes that no longer exist (killed by a timeout).
void
SweepStale()
{
    FILE* p = popen("ip netns list 2>/dev/null", "r");
    if (!p)
    {
        return;
    }
    char line[256];
    while (std::fgets(line, sizeof(line), p))
    {
        int pid = 0;
        int n = 0;
        char side = 0;
        if (std::sscanf(line, "mr-hil-%d-%d-%c", &pid, &n, &side) == 3 && pid > 0 &&
            kill(pid, 0) != 0)
        {
            std::string name = line;
            name = name.substr(0, name.find_first_of(" \n"));
            Shell("ip netns del " + name);
        }
    }
    pclose(p);
}

} // namespace

std::string
NetnsPair::Unavailable()
{
    if (geteuid() != 0)
    {
        return "needs root to create network namespaces (run the hil tests as root)";
    }
    if (Shell("ip netns list") != 0)
    {
        return "`ip netns` is not available (install iproute2)";
    }
    return "";
}

NetnsPair::NetnsPair(int mtu, bool middle, int queues)
{
    m_why = Unavailable();
    if (!m_why.empty())
    {
        return;
    }
    SweepStale();
    static int counter = 0;
    std::string base = "mr-hil-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    m_a = base + "-a";
    m_b = base + "-b";
    std::string m = std::to_string(mtu);
    std::vector<std::string> steps = {
        "ip netns add " + m_a,
        "ip netns add " + m_b,
    };
    if (middle)
    {
        m_m = base + "-m";
        steps.insert(steps.end(),
                     {
                         "ip netns add " + m_m,
                         "ip link add va netns " + m_a + " mtu " + m + " type veth peer name fa " +
                             "netns " + m_m + " mtu " + m,
                         "ip link add vb netns " + m_b + " mtu " + m + " type veth peer name fb " +
                             "netns " + m_m + " mtu " + m,
                         "ip -n " + m_m + " link set dev fa up",
                         "ip -n " + m_m + " link set dev fb up",
                         "ip -n " + m_m + " link set dev lo up",
                     });
    }
    else
    {
        const std::string q = queues > 1 ? " numrxqueues " + std::to_string(queues) +
                                               " numtxqueues " + std::to_string(queues)
                                         : "";
        steps.push_back("ip link add va netns " + m_a + " mtu " + m + q +
                        " type veth peer name vb netns " + m_b + " mtu " + m + q);
    }
    steps.insert(steps.end(),
                 {
                     "ip -n " + m_a + " addr add 10.250.1.1/24 dev va",
                     "ip -n " + m_b + " addr add 10.250.1.2/24 dev vb",
                     "ip -n " + m_a + " link set va up",
                     "ip -n " + m_b + " link set vb up",
                     "ip -n " + m_a + " link set lo up",
                     "ip -n " + m_b + " link set lo up",
                 });
    for (const auto& step : steps)
    {
        if (Shell(step) != 0)
        {
            m_why = "setup step failed: " + step;
            return;
        }
    }
    m_ok = true;
}

NetnsPair::~NetnsPair()
{
    if (!m_a.empty())
    {
        Shell("ip netns del " + m_a);
        Shell("ip netns del " + m_b);
    }
    if (!m_m.empty())
    {
        Shell("ip netns del " + m_m);
    }
}

Process::Process(const std::vector<std::string>& argv)
{
    char path[] = "/tmp/metaroce-hil-test-XXXXXX";
    int fd = mkstemp(path);
    m_log = path;
    m_pid = fork();
    if (m_pid == 0)
    {
        dup2(fd, 1);
        dup2(fd, 2);
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        std::vector<char*> args;
        for (const auto& a : argv)
        {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::perror("execvp");
        _exit(127);
    }
    close(fd);
}

Process::~Process()
{
    if (m_pid > 0 && m_status < 0)
    {
        kill(m_pid, SIGKILL);
        waitpid(m_pid, nullptr, 0);
    }
    unlink(m_log.c_str());
}

int
Process::Wait(std::chrono::milliseconds timeout)
{
    if (m_status >= 0)
    {
        return m_status;
    }
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true)
    {
        int st = 0;
        pid_t r = waitpid(m_pid, &st, WNOHANG);
        if (r == m_pid)
        {
            m_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            return m_status;
        }
        if (std::chrono::steady_clock::now() >= deadline)
        {
            kill(m_pid, SIGKILL);
            waitpid(m_pid, nullptr, 0);
            m_status = 255;
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

void
Process::Signal(int signal)
{
    if (m_pid > 0 && m_status < 0)
    {
        kill(m_pid, signal);
    }
}

std::string
Process::Output() const
{
    std::ifstream in(m_log);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

uint64_t
Process::OutputSize() const
{
    struct stat st
    {
    };

    return stat(m_log.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

int
BlastRandomDatagrams(const std::string& ns, int size, int count, int seed, std::string& output)
{
    Process blast(InNetns(ns,
                          {METAROCE_UDP_BLAST_BIN,
                           "send",
                           "10.250.1.1",
                           "--port",
                           "4791",
                           "--size",
                           std::to_string(size),
                           "--count",
                           std::to_string(count),
                           "--random",
                           std::to_string(seed)}));
    int status = blast.Wait(std::chrono::milliseconds(10000));
    output = blast.Output();
    return status;
}

std::chrono::milliseconds
CpuTime(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Fields after the command name (which may hold spaces) start after its ')'; utime and
    // stime are fields 14 and 15 of the line, 12 and 13 after it.
    size_t paren = text.rfind(')');
    if (paren == std::string::npos)
    {
        return std::chrono::milliseconds(0);
    }
    std::istringstream fields(text.substr(paren + 2));
    std::string field;
    uint64_t ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i)
    {
        if (i >= 14)
        {
            ticks += std::stoull(field);
        }
    }
    return std::chrono::milliseconds(ticks * 1000 / uint64_t(sysconf(_SC_CLK_TCK)));
}

size_t
TcpSocketsHeld(pid_t pid)
{
    const std::string proc = "/proc/" + std::to_string(pid);
    std::set<std::string> inodes; // of the process's sockets
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(proc + "/fd", ec);
         !ec && it != std::filesystem::directory_iterator();
         it.increment(ec))
    {
        std::error_code linkError;
        const std::string target = std::filesystem::read_symlink(it->path(), linkError).string();
        if (!linkError && target.rfind("socket:[", 0) == 0)
        {
            inodes.insert(target.substr(8, target.size() - 9));
        }
    }
    std::ifstream tcp(proc + "/net/tcp");
    std::string line;
    std::getline(tcp, line); // the header
    size_t held = 0;
    while (std::getline(tcp, line))
    {
        // sl local rem st queues timer retransmits uid timeout inode ...
        std::istringstream fields(line);
        std::string field;
        for (int i = 0; i < 10 && fields >> field; ++i)
        {
        }
        held += inodes.count(field);
    }
    return held;
}

int
RunQuiet(const std::string& cmd)
{
    return Shell(cmd);
}

bool
WaitForOutput(const Process& process, const std::string& text, std::chrono::milliseconds timeout)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (process.Output().find(text) == std::string::npos)
    {
        if (std::chrono::steady_clock::now() >= deadline)
        {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

std::vector<std::string>
InNetns(const std::string& ns, std::vector<std::string> argv)
{
    std::vector<std::string> full = {"ip", "netns", "exec", ns};
    full.insert(full.end(), argv.begin(), argv.end());
    return full;
}

std::map<std::string, std::string>
ParseResult(const std::string& output)
{
    std::map<std::string, std::string> fields;
    std::istringstream in(output);
    std::string line;
    std::string last;
    while (std::getline(in, line))
    {
        if (line.rfind("RESULT ", 0) == 0)
        {
            last = line;
        }
    }
    std::istringstream words(last.substr(last.empty() ? 0 : 7));
    std::string word;
    while (words >> word)
    {
        size_t eq = word.find('=');
        if (eq != std::string::npos)
        {
            fields[word.substr(0, eq)] = word.substr(eq + 1);
        }
    }
    return fields;
}

} // namespace test
} // namespace hil
} // namespace metaroce
