/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-udp-blast: a plain UDP blast (no transport, no acknowledgements) as the baseline of
 * the HIL benchmark, and a source of random datagrams for robustness tests.
 *
 *   metaroce-udp-blast sink [--port P] [--idle S] [--duration S]
 *   metaroce-udp-blast send DST_IP [--port P] [--size N | --engine-mtu M] [--duration S]
 *                      [--count N] [--random SEED] [--src-port P]
 *
 * The sink counts what arrives and ends after --idle seconds without data (once data came) or
 * after --duration. Both print a final "RESULT ..." line.
 */

#include "metaroce-endpoint.h"
#include "metaroce-hil-options.h"
#include "metaroce-random.h"

#include <arpa/inet.h>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace
{

using Clock = std::chrono::steady_clock;

double
Seconds(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

int
Sink(uint16_t port, double idle, double duration)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int buf = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    {
        std::perror("bind");
        return 1;
    }
    timeval tv{0, 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::printf("sink listening on UDP %u\n", port);
    std::fflush(stdout);
    constexpr unsigned BATCH = 64;
    std::vector<uint8_t> buffers(BATCH * 65536);
    mmsghdr msgs[BATCH];
    iovec iov[BATCH];
    uint64_t bytes = 0;
    uint64_t datagrams = 0;
    Clock::time_point start = Clock::now();
    Clock::time_point first{};
    Clock::time_point last{};
    while (true)
    {
        for (unsigned i = 0; i < BATCH; ++i)
        {
            iov[i] = {buffers.data() + i * 65536, 65536};
            std::memset(&msgs[i], 0, sizeof(msgs[i]));
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, nullptr);
        Clock::time_point now = Clock::now();
        if (n > 0)
        {
            if (datagrams == 0)
            {
                first = now;
            }
            for (int i = 0; i < n; ++i)
            {
                bytes += msgs[i].msg_len;
            }
            datagrams += uint64_t(n);
            last = now;
        }
        if (datagrams > 0 && Seconds(last, now) > idle)
        {
            break;
        }
        if (duration > 0 && Seconds(start, now) > duration)
        {
            break;
        }
    }
    double span = datagrams > 1 ? Seconds(first, last) : 0;
    double gbps = span > 0 ? double(bytes) * 8 / span / 1e9 : 0;
    std::printf("RESULT role=sink gbps=%.3f datagrams=%" PRIu64 " bytes=%" PRIu64 " seconds=%.3f\n",
                gbps,
                datagrams,
                bytes,
                span);
    close(fd);
    return 0;
}

int
Send(const std::string& dst,
     uint16_t port,
     uint16_t srcPort,
     size_t size,
     double duration,
     uint64_t count,
     bool random,
     uint64_t seed)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int buf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    int pmtu = IP_PMTUDISC_DO;
    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
    if (srcPort)
    {
        sockaddr_in local{};
        local.sin_family = AF_INET;
        local.sin_port = htons(srcPort);
        bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local));
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    if (inet_pton(AF_INET, dst.c_str(), &to.sin_addr) != 1)
    {
        std::fprintf(stderr, "bad address %s\n", dst.c_str());
        return 64;
    }
    if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0)
    {
        std::perror("connect");
        return 1;
    }
    constexpr unsigned BATCH = 32;
    std::vector<uint8_t> buffers(BATCH * size);
    metaroce::Rng rng(seed);
    for (auto& b : buffers)
    {
        b = uint8_t(rng.Next());
    }
    mmsghdr msgs[BATCH];
    iovec iov[BATCH];
    uint64_t sent = 0;
    uint64_t bytes = 0;
    Clock::time_point start = Clock::now();
    while (true)
    {
        unsigned n = BATCH;
        if (count > 0 && count - sent < n)
        {
            n = unsigned(count - sent);
        }
        for (unsigned i = 0; i < n; ++i)
        {
            size_t len = size;
            if (random)
            {
                // Random lengths and bytes: truncated headers, garbage opcodes, bad ICRCs.
                len = 1 + size_t(rng.Below(size));
                for (size_t k = 0; k < len && k < 64; ++k)
                {
                    buffers[i * size + k] = uint8_t(rng.Next());
                }
            }
            iov[i] = {buffers.data() + i * size, len};
            std::memset(&msgs[i], 0, sizeof(msgs[i]));
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int k = sendmmsg(fd, msgs, n, 0);
        if (k < 0)
        {
            if (errno == ECONNREFUSED || errno == ENOBUFS)
            {
                continue; // ICMP from an earlier datagram, or a full queue
            }
            std::perror("sendmmsg");
            return 1;
        }
        for (int i = 0; i < k; ++i)
        {
            bytes += msgs[i].msg_len;
        }
        sent += uint64_t(k);
        double elapsed = Seconds(start, Clock::now());
        if ((count > 0 && sent >= count) || (count == 0 && elapsed >= duration))
        {
            break;
        }
    }
    double elapsed = Seconds(start, Clock::now());
    std::printf("RESULT role=sender gbps=%.3f datagrams=%" PRIu64 " bytes=%" PRIu64
                " seconds=%.3f size=%zu\n",
                elapsed > 0 ? double(bytes) * 8 / elapsed / 1e9 : 0,
                sent,
                bytes,
                elapsed,
                size);
    close(fd);
    return 0;
}

} // namespace

int
main(int argc, char** argv)
{
    using namespace metaroce::hil;
    uint16_t port = metaroce::ROCE_UDP_PORT;
    uint16_t srcPort = 0;
    uint64_t size = 4096;
    double duration = 2;
    double idle = 1;
    uint64_t count = 0;
    bool random = false;
    uint64_t seed = 1;
    ToolOptions options("metaroce-udp-blast",
                        "usage: metaroce-udp-blast sink [--port P] [--idle S] [--duration S]\n"
                        "       metaroce-udp-blast send DST_IP [--port P] [--size N | "
                        "--engine-mtu M] [--duration S]\n"
                        "                          [--count N] [--random SEED] [--src-port P]\n"
                        "Plain UDP datagrams at full speed, the ceiling for metaroce-perf.");
    options.Add("port", "P", "UDP port (4791)", Number(port));
    options.Add("src-port", "P", "send: UDP source port (0: any)", Number(srcPort));
    options.Add("size", "N", "send: datagram bytes, 1..65507 (4096)", Number(size));
    options.Add("engine-mtu",
                "M",
                "send: datagrams as large as the engine's at MTU M",
                [&size](const std::string& text) {
                    uint32_t mtu = 0;
                    std::string expected = Number(mtu)(text);
                    if (expected.empty())
                    {
                        size = metaroce::Endpoint::MaxDatagramSize(mtu);
                    }
                    return expected;
                });
    options.Add("duration", "S", "seconds to run (2)", Real(duration, 0, 1e9));
    options.Add("idle", "S", "sink: stop after S idle seconds (1)", Real(idle, 0, 1e9));
    options.Add("count", "N", "send: stop after N datagrams (0: no limit)", Number(count));
    options.Add("random",
                "SEED",
                "send: random payload bytes from SEED",
                [&random, &seed](const std::string& text) {
                    std::string expected = Number(seed)(text);
                    random = random || expected.empty();
                    return expected;
                });
    options.AllowPositional(2);
    int status = options.Parse(argc, argv);
    if (status >= 0)
    {
        return status;
    }
    const auto& words = options.Positional();
    if (words.empty())
    {
        return options.UsageError("a mode (sink or send) is needed");
    }
    const std::string& mode = words[0];
    if (mode != "sink" && mode != "send")
    {
        return options.UsageError("unknown mode '" + mode + "' (sink or send)");
    }
    if (mode == "send" && words.size() < 2)
    {
        return options.UsageError("send needs DST_IP");
    }
    if (mode == "sink" && words.size() > 1)
    {
        return options.UsageError("unexpected argument '" + words[1] + "'");
    }
    if (size == 0 || size > 65507)
    {
        return options.UsageError("the datagram size must be in 1..65507");
    }
    return mode == "sink" ? Sink(port, idle, duration)
                          : Send(words[1], port, srcPort, size, duration, count, random, seed);
}
