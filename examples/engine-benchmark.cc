/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Engine micro-benchmarks (Google Benchmark): data packets per second through a MetaRoCE (or
 * RoCEv2) sender/receiver pair wired back to back with no fabric model, with and without
 * random loss, and heap allocations per packet in steady state (operator new is counted).
 *
 *   build/bin/metaroce-engine-benchmark [--benchmark_filter=...]
 *
 * Counters: pkts/s = data datagrams delivered per wall second; allocs/pkt = calls to
 * operator new per delivered data datagram, measured after a warm-up transfer.
 */

#include "metaroce-endpoint.h"
#include "metaroce-icrc.h"

#include <atomic>
#include <benchmark/benchmark.h>
#include <cstdlib>
#include <new>
#include <vector>

namespace
{
std::atomic<uint64_t> g_allocations{0};
} // namespace

// The replaced operator new allocates with malloc, so free is the matching release; GCC's
// mismatch heuristic does not see that the pair is replaced together.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void*
operator new(std::size_t n)
{
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1))
    {
        return p;
    }
    throw std::bad_alloc();
}

void
operator delete(void* p) noexcept
{
    std::free(p);
}

void
operator delete(void* p, std::size_t) noexcept
{
    std::free(p);
}

using namespace metaroce;

namespace
{

/// Two endpoints back to back: datagrams are handed over directly, time advances per packet.
class Pair
{
  public:
    Pair(const std::string& transport, double loss, uint32_t paths, bool icrc)
        : m_loss(loss),
          m_rng(7),
          m_buf(Endpoint::MaxDatagramSize(4096))
    {
        EndpointConfig ea;
        ea.localIp = 0x0a000001;
        ea.icrc = icrc; // off but in the *_icrc case: the CRC is measured apart (BenchmarkCrc32)
        EndpointConfig eb = ea;
        eb.localIp = 0x0a000002;
        m_a = std::make_unique<Endpoint>(ea);
        m_b = std::make_unique<Endpoint>(eb);
        ConnectionConfig cfg;
        cfg.transport = transport;
        if (transport == "metaroce-classic")
        {
            // the recovery policies before issue 16, for a same-run cost ratio
            cfg.transport = "metaroce";
            cfg.lossDetection = "sack-gap";
            cfg.tailProbe = "none";
            cfg.failureDetection = "rto";
            cfg.rtoPolicy = "fixed";
            cfg.ackPolicy = "per-path";
        }
        cfg.numPaths = paths;
        cfg.initialPathWindow = 16;
        cfg.initialWindow = "per-path";
        cfg.maxOutstandingWrs = 64;
        m_a->CreateConnection(cfg, m_qa);
        m_b->CreateConnection(cfg, m_qb);
        m_a->Connect(m_qa, eb.localIp, m_qb);
        m_b->Connect(m_qb, ea.localIp, m_qa);
        m_src = m_a->RegisterMemory(nullptr, 1u << 30, 0, 0x1000);
        m_dst = m_b->RegisterMemory(nullptr, 1u << 30, ACCESS_REMOTE_WRITE, 0x1000);
    }

    /// Keep 16 x 1 MiB WRITEs outstanding and move packets until \p packets data datagrams
    /// were delivered. \return delivered data datagrams.
    uint64_t Run(uint64_t packets)
    {
        uint64_t delivered = 0;
        while (delivered < packets)
        {
            while (m_posted - m_completed < 16)
            {
                SendWr wr;
                wr.wrId = m_posted;
                wr.sge = {m_src.addr + (m_posted % 512) * (1u << 20), 1u << 20, m_src.lkey};
                wr.remoteAddr = m_dst.addr + (m_posted % 512) * (1u << 20);
                wr.rkey = m_dst.rkey;
                m_a->PostSend(m_now, m_qa, wr);
                ++m_posted;
            }
            TxDatagram tx;
            tx.buffer = m_buf.data();
            tx.capacity = m_buf.size();
            bool moved = false;
            if (m_a->PollTransmit(m_now, tx))
            {
                moved = true;
                if (m_loss == 0 || m_rng.Uniform() >= m_loss)
                {
                    m_b->HandleDatagram(m_now, tx.meta, tx.buffer, tx.length);
                    ++delivered;
                }
                m_now += NanoSeconds(330); // 4 KiB at 100 Gb/s
            }
            while (m_b->PollTransmit(m_now, tx))
            {
                m_a->HandleDatagram(m_now + MicroSeconds(4), tx.meta, tx.buffer, tx.length);
            }
            Completion c;
            while (m_a->PollCompletion(c))
            {
                ++m_completed;
            }
            if (!moved)
            {
                Time t = std::min(m_a->NextTimeout(), m_b->NextTimeout());
                m_now = std::max(m_now + NanoSeconds(330), t == TIME_INFINITE ? m_now : t);
                m_a->HandleTimeout(m_now);
                m_b->HandleTimeout(m_now);
            }
        }
        return delivered;
    }

  private:
    double m_loss;
    Rng m_rng;
    std::vector<uint8_t> m_buf;
    std::unique_ptr<Endpoint> m_a;
    std::unique_ptr<Endpoint> m_b;
    uint32_t m_qa{0};
    uint32_t m_qb{0};
    MemoryRegion m_src;
    MemoryRegion m_dst;
    Time m_now{0};
    uint64_t m_posted{0};
    uint64_t m_completed{0};
};

void
BenchmarkPair(benchmark::State& state,
              const std::string& transport,
              double loss,
              uint32_t paths = 8,
              bool icrc = false)
{
    Pair pair(transport, loss, paths, icrc);
    pair.Run(20000); // warm up: grow every pool to its steady size
    uint64_t packets = 0;
    uint64_t allocs = 0;
    for (auto _ : state)
    {
        uint64_t before = g_allocations.load();
        packets += pair.Run(10000);
        allocs += g_allocations.load() - before;
    }
    state.counters["pkts/s"] = benchmark::Counter(double(packets), benchmark::Counter::kIsRate);
    state.counters["allocs/pkt"] = double(allocs) / double(packets);
}

/// CRC-32 (the ICRC's) over state.range(0) bytes: tables below 128 bytes, PCLMULQDQ folding
/// from there on where the CPU has it (metaroce-icrc.cc).
void
BenchmarkCrc32(benchmark::State& state)
{
    std::vector<uint8_t> bytes(size_t(state.range(0)));
    for (size_t i = 0; i < bytes.size(); ++i)
    {
        bytes[i] = uint8_t(i * 131 + 7);
    }
    uint32_t crc = 0;
    for (auto _ : state)
    {
        bytes[0] = uint8_t(crc);
        crc = Crc32::Compute(bytes.data(), bytes.size());
        benchmark::DoNotOptimize(crc);
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0));
}

} // namespace

BENCHMARK_CAPTURE(BenchmarkPair, metaroce_lossless, std::string("metaroce"), 0.0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BenchmarkPair, metaroce_loss_1pct, std::string("metaroce"), 0.01)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BenchmarkPair, metaroce_classic_lossless, std::string("metaroce-classic"), 0.0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BenchmarkPair, metaroce_classic_loss_1pct, std::string("metaroce-classic"), 0.01)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BenchmarkPair, rocev2_lossless, std::string("rocev2"), 0.0)
    ->Unit(benchmark::kMillisecond);
// Many paths: what a per-packet pass over the paths would cost (issue 16's 128 paths).
BENCHMARK_CAPTURE(BenchmarkPair, metaroce_lossless_64paths, std::string("metaroce"), 0.0, 64)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BenchmarkPair, metaroce_lossless_128paths, std::string("metaroce"), 0.0, 128)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BenchmarkPair, metaroce_loss_1pct_128paths, std::string("metaroce"), 0.01, 128)
    ->Unit(benchmark::kMillisecond);

// The HIL's setting: every datagram's ICRC computed and checked.
BENCHMARK_CAPTURE(BenchmarkPair, metaroce_lossless_icrc, std::string("metaroce"), 0.0, 8, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BenchmarkCrc32)->Arg(64)->Arg(1024)->Arg(4096)->Arg(9000);

BENCHMARK_MAIN();
