/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Engine-only loss sweep: one sender, one receiver, 100 Gb/s, Bernoulli loss p on every
 * datagram in both directions, on the fake-clock testbed (no switches). For each transport
 * it prints goodput normalised to the same transport's loss-free goodput next to the ideal
 * selective-repeat bound 1-p, and writes results.csv (and a PNG through plots/) to a run
 * folder. The ns-3 experiments replace this once the fabric model lands; this program shows
 * what the engines do on their own.
 */

#include "engine-network.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace metaroce;
using namespace metaroce::test;

namespace
{

/// IB local ACK timeout exponent of the RoCEv2 runs: 4.096 us x 2^7 = 524 us, a datacenter
/// tuning (the IB/perftest default, 14, waits 67 ms per timeout).
constexpr uint8_t ROCEV2_TIMEOUT_EXPONENT = 7;

struct Point
{
    std::string transport;
    double loss;
    double goodputGbps;
    uint64_t retransmissions;
    uint64_t timeouts;
    bool complete;
};

Point
RunPoint(const std::string& transport, double loss, uint64_t bytes, uint64_t seed, uint32_t irnCap)
{
    NetworkConfig net;
    net.seed = seed;
    EngineNetwork n(net);
    uint32_t a = n.AddEndpoint();
    uint32_t b = n.AddEndpoint();
    ConnectionConfig cfg;
    cfg.transport = transport;
    if (transport == "rocev2-irn")
    {
        // The RoCEv2 baseline with IRN selective repeat (default IRN timers and window).
        cfg.transport = "rocev2";
        cfg.rocev2.recovery = "irn";
        cfg.rocev2.maxInflightPackets = irnCap; // IRN's BDP cap (0: the IRN window)
    }
    cfg.initialPathWindow = 8;
    cfg.initialWindow = "per-path";
    cfg.rocev2.localAckTimeout = ROCEV2_TIMEOUT_EXPONENT;
    uint32_t qa = 0;
    uint32_t qb = 0;
    Point p{transport, loss, 0, 0, 0, false};
    if (n.At(a).CreateConnection(cfg, qa) != PostStatus::OK ||
        n.At(b).CreateConnection(cfg, qb) != PostStatus::OK)
    {
        return p;
    }
    n.At(a).Connect(qa, EngineNetwork::AddressOf(b), qb);
    n.At(b).Connect(qb, EngineNetwork::AddressOf(a), qa);
    n.Link(a, b).loss = loss;
    n.Link(b, a).loss = loss;
    const uint32_t chunk = 4 << 20;
    uint32_t count = uint32_t(bytes / chunk);
    MemoryRegion src = n.At(a).RegisterMemory(nullptr, bytes, 0, 0x100000);
    MemoryRegion dst = n.At(b).RegisterMemory(nullptr, bytes, ACCESS_REMOTE_WRITE, 0x100000);
    for (uint32_t i = 0; i < count; ++i)
    {
        SendWr wr;
        wr.wrId = i;
        wr.sge = {src.addr + uint64_t(i) * chunk, chunk, src.lkey};
        wr.remoteAddr = dst.addr + uint64_t(i) * chunk;
        wr.rkey = dst.rkey;
        n.At(a).PostSend(0, qa, wr);
    }
    n.Kick(a);
    Time last = 0;
    size_t ok = 0;
    n.onCompletion = [&](uint32_t, const Completion& c) {
        last = n.Now();
        ok += c.status == WcStatus::SUCCESS;
    };
    n.RunUntil(MilliSeconds(2000));
    p.complete = ok == count;
    p.goodputGbps = last > 0 ? double(bytes) * 8 / (double(last) / 1e12) / 1e9 : 0;
    p.retransmissions = n.At(a).Counters().Get(Counter::TX_RETRANSMIT);
    p.timeouts = n.At(a).Counters().Get(Counter::RTO);
    return p;
}

} // namespace

int
main(int argc, char** argv)
{
    std::string out;
    uint64_t bytes = 64ull << 20;
    uint64_t seed = 1;
    uint32_t irnCap = 0;
    for (int i = 1; i < argc; ++i)
    {
        std::string arg = argv[i];
        auto value = [&](const char* name) -> const char* {
            size_t n = std::strlen(name);
            if (arg.compare(0, n, name) == 0 && arg.size() > n && arg[n] == '=')
            {
                return argv[i] + n + 1;
            }
            return nullptr;
        };
        if (const char* v = value("--out"))
        {
            out = v;
        }
        else if (const char* v = value("--bytes"))
        {
            bytes = std::strtoull(v, nullptr, 10);
        }
        else if (const char* v = value("--seed"))
        {
            seed = std::strtoull(v, nullptr, 10);
        }
        else if (const char* v = value("--irn-bdp-cap"))
        {
            irnCap = uint32_t(std::strtoul(v, nullptr, 10));
        }
        else
        {
            std::fprintf(stderr,
                         "usage: %s [--out=DIR] [--bytes=N (multiple of 4 MiB)] [--seed=N] "
                         "[--irn-bdp-cap=PACKETS (0 = the IRN window)]\n",
                         argv[0]);
            return arg == "--help" ? 0 : 2;
        }
    }
    if (bytes < (4u << 20))
    {
        bytes = 4u << 20;
    }
    if (out.empty())
    {
        char stamp[64];
        std::time_t t = std::time(nullptr);
        std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&t));
        out = std::string("runs/engine-demo-") + stamp;
    }
    std::string cmd = "mkdir -p '" + out + "'";
    if (std::system(cmd.c_str()) != 0)
    {
        std::fprintf(stderr, "error: cannot create run folder %s\n", out.c_str());
        return 1;
    }
    const double losses[] = {0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.10};
    const char* transports[] = {"metaroce", "rocev2", "rocev2-irn"};
    std::vector<Point> points;
    size_t total = sizeof(losses) / sizeof(losses[0]) * (sizeof(transports) / sizeof(char*));
    size_t done = 0;
    auto wallStart = std::chrono::steady_clock::now();
    for (const char* tr : transports)
    {
        for (double loss : losses)
        {
            std::fprintf(stderr,
                         "\r[%zu/%zu] %-10s loss %5.1f%% ...",
                         done + 1,
                         total,
                         tr,
                         loss * 100);
            std::fflush(stderr);
            points.push_back(RunPoint(tr, loss, bytes, seed, irnCap));
            ++done;
        }
    }
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    std::fprintf(stderr, "\r%60s\r", "");
    std::string csv = out + "/results.csv";
    FILE* f = std::fopen(csv.c_str(), "w");
    if (f == nullptr)
    {
        std::fprintf(stderr, "error: cannot write %s\n", csv.c_str());
        return 1;
    }
    std::fprintf(f,
                 "transport,loss,goodput_gbps,normalized,ideal,retransmissions,timeouts,"
                 "complete\n");
    std::printf("Engine-only loss sweep: %llu MiB, 100 Gb/s, 2 us links, Bernoulli loss on every "
                "datagram both ways, seed %llu (%.1f s wall)\n"
                "MetaRoCE: 8 paths; RoCEv2: go-back-N + DCQCN, no PFC, local ACK timeout "
                "%.0f us; rocev2-irn: IRN selective repeat + DCQCN, RTO_low/high %.0f/%.0f us, "
                "window %u, BDP cap %u packets\n\n",
                (unsigned long long)(bytes >> 20),
                (unsigned long long)seed,
                wall,
                4.096 * double(1u << ROCEV2_TIMEOUT_EXPONENT),
                double(ConnectionConfig().rocev2.irnRtoLow) / 1e6,
                double(ConnectionConfig().rocev2.irnRtoHigh) / 1e6,
                ConnectionConfig().rocev2.irnWindow,
                irnCap > 0 ? std::min(irnCap, ConnectionConfig().rocev2.irnWindow)
                           : ConnectionConfig().rocev2.irnWindow);
    std::printf("%-10s %7s %12s %11s %8s %9s %6s\n",
                "transport",
                "loss%",
                "goodput Gb/s",
                "normalized",
                "1-p",
                "retransmit",
                "RTOs");
    for (const Point& p : points)
    {
        double base = 0;
        for (const Point& q : points)
        {
            if (q.transport == p.transport && q.loss == 0)
            {
                base = q.goodputGbps;
            }
        }
        if (base == 0)
        {
            std::printf("%-10s %7.1f %12s (transport not available in this build)\n",
                        p.transport.c_str(),
                        p.loss * 100,
                        "-");
            continue;
        }
        double norm = p.goodputGbps / base;
        std::printf("%-10s %7.1f %12.2f %11.3f %8.3f %9llu %6llu%s\n",
                    p.transport.c_str(),
                    p.loss * 100,
                    p.goodputGbps,
                    norm,
                    1 - p.loss,
                    (unsigned long long)p.retransmissions,
                    (unsigned long long)p.timeouts,
                    p.complete ? "" : "  INCOMPLETE");
        std::fprintf(f,
                     "%s,%g,%.4f,%.4f,%.4f,%llu,%llu,%d\n",
                     p.transport.c_str(),
                     p.loss,
                     p.goodputGbps,
                     norm,
                     1 - p.loss,
                     (unsigned long long)p.retransmissions,
                     (unsigned long long)p.timeouts,
                     p.complete ? 1 : 0);
    }
    std::fclose(f);
    std::printf("\nraw results: %s\n", csv.c_str());
    return 0;
}
