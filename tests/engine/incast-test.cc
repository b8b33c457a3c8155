/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Two-sided congestion control: the receiver's fair-share rate hint settles an N-to-1 incast.

#include "engine-network.h"

#include <gtest/gtest.h>

namespace metaroce
{
namespace test
{
namespace
{

/// Records when each connection's rate limit last changed, and to what.
class RateLog : public EngineObserver
{
  public:
    void OnRateChange(Time now, uint32_t, double bps) override
    {
        lastChange = now;
        rate = bps;
    }

    Time lastChange{-1};
    double rate{0};
};

struct IncastResult
{
    Time settle{0};        //!< when the last sender got within 20% of its fair share
    Time finish{0};        //!< when the last sender completed
    Time firstFinish{0};   //!< when the first sender completed
    uint64_t dropped{0};   //!< drops in the bottleneck queue
    uint64_t peakQueue{0}; //!< bytes
    bool allDone{false};
};

IncastResult
RunIncast(uint32_t senders, bool hint, uint32_t bytesPerSender)
{
    NetworkConfig net;
    net.downlinkRateBps = 100e9;
    net.downlinkBufferBytes = 8 << 20;
    net.ecnThresholdBytes = 200 * 1024;
    EngineNetwork n(net);
    EndpointConfig rcfg;
    rcfg.rateHint = hint;
    uint32_t rx = n.AddEndpoint(rcfg);
    MemoryRegion dmr = n.At(rx).RegisterMemory(nullptr,
                                               uint64_t(bytesPerSender) * senders,
                                               ACCESS_REMOTE_WRITE,
                                               0x10000);
    ConnectionConfig cfg;
    cfg.initialWindow = "per-connection"; // a first flight of 2 packets on each of 8 paths
    cfg.initialPathWindow = 2;
    std::vector<RateLog> logs(senders);
    std::vector<uint32_t> tx(senders);
    IncastResult res;
    size_t done = 0;
    n.onCompletion = [&](uint32_t, const Completion&) {
        if (done++ == 0)
        {
            res.firstFinish = n.Now();
        }
        res.finish = n.Now();
    };
    for (uint32_t i = 0; i < senders; ++i)
    {
        tx[i] = n.AddEndpoint();
        auto [qs, qr] = n.Connect(tx[i], rx, cfg);
        (void)qr;
        n.At(tx[i]).SetObserver(&logs[i]);
        MemoryRegion smr = n.At(tx[i]).RegisterMemory(nullptr, bytesPerSender, 0, 0x10000);
        SendWr wr;
        wr.sge = {smr.addr, bytesPerSender, smr.lkey};
        wr.remoteAddr = dmr.addr + uint64_t(i) * bytesPerSender;
        wr.rkey = dmr.rkey;
        n.At(tx[i]).PostSend(0, qs, wr);
        n.Kick(tx[i]);
    }
    n.RunUntil(MilliSeconds(20));
    res.allDone = done == senders;
    double fair = 100e9 / senders;
    for (const RateLog& l : logs)
    {
        bool within = l.rate > 0 && l.rate < fair * 1.2 && l.rate > fair * 0.8;
        res.settle = std::max(res.settle, within ? l.lastChange : TIME_INFINITE);
    }
    res.dropped = n.Dropped();
    res.peakQueue = n.PeakQueue(rx);
    return res;
}

TEST(IncastTest, RateHintSettlesEverySenderToItsFairShareWithinTwoRtts)
{
    // Base RTT: 2 x 2 us propagation + serialisation of a data packet and an ACK. The first
    // burst queues at the receiver's downlink, so the RTT the senders see includes draining
    // one packet of every sender (the receiver cannot count a sender before its first packet
    // is out of the queue): "2 RTTs" is 2 x (base RTT + N packet times).
    const Time baseRtt = MicroSeconds(4) + TransmissionTime(4206, 100e9) * 2;
    for (uint32_t senders : {16u, 32u})
    {
        IncastResult r = RunIncast(senders, true, 256 * 1024);
        ASSERT_TRUE(r.allDone);
        Time rtt = baseRtt + TransmissionTime(uint64_t(senders) * 4206, 100e9);
        EXPECT_LE(r.settle, 2 * rtt)
            << senders << " senders settled at " << r.settle / 1e6 << " us";
        EXPECT_EQ(r.dropped, 0u);
        // Fair: the last sender finishes soon after the first.
        EXPECT_LT(double(r.finish - r.firstFinish), 0.2 * double(r.finish));
        // Total time close to the bottleneck's: 256 KiB x N at 100 Gb/s plus overheads.
        double ideal = double(TransmissionTime(uint64_t(senders) * 256 * 1024, 100e9));
        EXPECT_LT(double(r.finish), ideal * 1.25);
    }
}

TEST(IncastTest, WithoutTheHintSendersNeverGetAPacingLimit)
{
    IncastResult r = RunIncast(16, false, 256 * 1024);
    ASSERT_TRUE(r.allDone);
    EXPECT_EQ(r.settle, TIME_INFINITE) << "no hint, no rate limit: only ECN AIMD acts";
}

} // namespace
} // namespace test
} // namespace metaroce
