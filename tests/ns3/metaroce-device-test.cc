/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * MetaRoceNetDevice and MetaRoceChannel: serialization, strict priority, PFC, link state,
 * bad frames and pcap.
 */

#include "metaroce-test-traffic.h"

#include "ns3/boolean.h"
#include "ns3/metaroce-byte-order.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-frame.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-pcap-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/node.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

/// Two hosts joined by one MetaRoceChannel, no switch.
struct Pair
{
    Ptr<Node> nodeA = CreateObject<Node>();
    Ptr<Node> nodeB = CreateObject<Node>();
    Ptr<MetaRoceNetDevice> a = CreateObject<MetaRoceNetDevice>();
    Ptr<MetaRoceNetDevice> b = CreateObject<MetaRoceNetDevice>();
    Ptr<MetaRoceChannel> channel = CreateObject<MetaRoceChannel>();

    Pair(DataRate rate, Time delay)
    {
        channel->SetAttribute("Delay", TimeValue(delay));
        a->SetDataRate(rate);
        b->SetDataRate(rate);
        a->SetAddress(Mac48Address("02:00:00:00:00:0a"));
        b->SetAddress(Mac48Address("02:00:00:00:00:0b"));
        nodeA->AddDevice(a);
        nodeB->AddDevice(b);
        a->Attach(channel);
        b->Attach(channel);
    }
};

/// One frame seen at a receiver.
struct Arrival
{
    Time at;          //!< arrival time
    uint32_t size;    //!< frame size
    uint16_t srcPort; //!< UDP source port (0 if not UDP)
};

class MetaRoceDeviceTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        RngSeedManager::SetSeed(1);
        RngSeedManager::SetRun(1);
    }

    void TearDown() override
    {
        Simulator::Destroy();
    }

    /// Record every frame that reaches \p device.
    static void Record(Ptr<MetaRoceNetDevice> device, std::vector<Arrival>& log)
    {
        device->SetFrameReceiveCallback(MakeBoundCallback(
            +[](std::vector<Arrival>* out, Ptr<MetaRoceNetDevice>, Ptr<Packet> frame) {
                uint8_t headers[METAROCE_HEADER_PEEK_SIZE];
                metaroce::ParsedFrame parsed;
                const bool ok =
                    MetaRocePeekFrame(frame, headers, parsed) == metaroce::FrameStatus::OK;
                out->push_back(
                    {Simulator::Now(), frame->GetSize(), ok ? parsed.meta.srcPort : uint16_t(0)});
            },
            &log));
    }
};

TEST_F(MetaRoceDeviceTest, SerializationAndPropagationDelay)
{
    Pair pair(DataRate("10Gbps"), MicroSeconds(2));
    std::vector<Arrival> log;
    Record(pair.b, log);
    Ptr<Packet> frame = metaroce_test::MakeFrame(0x0a000001, 0x0a000002, 1, 1000);
    const uint32_t size = frame->GetSize();
    Simulator::Schedule(MicroSeconds(1), [&]() { pair.a->Enqueue(frame, 3); });
    Simulator::Run();

    ASSERT_EQ(log.size(), 1U);
    // (frame + FCS/preamble/IFG 24 bytes) at 10 Gb/s, then 2 us of propagation.
    const double txSeconds = (size + 24) * 8 / 10e9;
    EXPECT_NEAR(pair.a->GetTransmissionTime(size).GetSeconds(), txSeconds, 1e-9);
    EXPECT_NEAR(log[0].at.GetSeconds(), 3e-6 + txSeconds, 1e-9);
    EXPECT_EQ(pair.a->GetCounters().txFrames, 1U);
    EXPECT_EQ(pair.b->GetCounters().rxFrames, 1U);
    // Runts are padded to 60 bytes on the wire.
    EXPECT_EQ(pair.a->GetTransmissionTime(20), pair.a->GetTransmissionTime(60));
}

TEST_F(MetaRoceDeviceTest, StrictPriorityHighestFirst)
{
    Pair pair(DataRate("10Gbps"), MicroSeconds(1));
    std::vector<Arrival> log;
    Record(pair.b, log);
    Simulator::Schedule(MicroSeconds(1), [&]() {
        // The first frame goes on the wire at once; the rest queue up.
        pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 100, 500), 1);
        pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 101, 500), 1);
        pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 102, 500), 1);
        pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 500, 500), 5);
        pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 700, 500), 7);
        EXPECT_EQ(pair.a->GetQueueBytes(1), 2U * 542);
        EXPECT_EQ(pair.a->GetQueueBytes(), 4U * 542);
    });
    Simulator::Run();
    ASSERT_EQ(log.size(), 5U);
    const std::vector<uint16_t> expected = {100, 700, 500, 101, 102};
    for (size_t i = 0; i < expected.size(); ++i)
    {
        EXPECT_EQ(log[i].srcPort, expected[i]) << "frame " << i;
    }
    EXPECT_EQ(pair.a->GetQueueBytes(), 0U);
}

TEST_F(MetaRoceDeviceTest, PfcPausesOnePriorityAndXonResumes)
{
    Pair pair(DataRate("10Gbps"), MicroSeconds(1));
    std::vector<Arrival> log;
    Record(pair.b, log);
    std::vector<std::pair<uint8_t, uint16_t>> pausesSeen;
    pair.a->TraceConnectWithoutContext(
        "PfcPauseReceived",
        MakeBoundCallback(
            +[](std::vector<std::pair<uint8_t, uint16_t>>* out, uint8_t p, uint16_t q) {
                out->push_back({p, q});
            },
            &pausesSeen));

    // B pauses A's priority 3 for 1000 quanta (1000 * 512 bits at 10 Gb/s = 51.2 us).
    Simulator::Schedule(MicroSeconds(1), [&]() { pair.b->SendPause(3, 1000); });
    // While paused: three priority-3 frames and one priority-7 frame.
    Simulator::Schedule(MicroSeconds(10), [&]() {
        for (uint16_t port = 30; port < 33; ++port)
        {
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, port, 1000), 3);
        }
        pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 70, 1000), 7);
        EXPECT_TRUE(pair.a->IsPaused(3));
        EXPECT_FALSE(pair.a->IsPaused(7));
        EXPECT_EQ(pair.a->GetPausedMask(), 0x08);
    });
    Simulator::Run();
    ASSERT_EQ(pausesSeen.size(), 1U);
    EXPECT_EQ(pausesSeen[0].first, 3);
    EXPECT_EQ(pausesSeen[0].second, 1000);
    ASSERT_EQ(log.size(), 4U);
    EXPECT_EQ(log[0].srcPort, 70); // priority 7 is not paused
    EXPECT_LT(log[0].at, MicroSeconds(13));
    // The pause frame arrives at 1 us + 60+24 bytes at 10G (67 ns) + 1 us.
    const Time pauseStart = MicroSeconds(2) + pair.b->GetTransmissionTime(60);
    const Time pauseEnd = pauseStart + NanoSeconds(51200);
    for (size_t i = 1; i < 4; ++i)
    {
        EXPECT_GT(log[i].at, pauseEnd) << "priority 3 frame " << i << " left during the pause";
    }
    EXPECT_EQ(pair.b->GetCounters().pauseSent, 1U);
    EXPECT_EQ(pair.a->GetCounters().pauseReceived, 1U);

    // XON ends a pause early.
    log.clear();
    const Time t0 = Simulator::Now();
    Simulator::Schedule(MicroSeconds(1), [&]() { pair.b->SendPause(3, 0xffff); });
    Simulator::Schedule(MicroSeconds(5),
                        [&]() { pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 33, 1000), 3); });
    Simulator::Schedule(MicroSeconds(20), [&]() { pair.b->SendPause(3, 0); });
    Simulator::Run();
    ASSERT_EQ(log.size(), 1U);
    EXPECT_GT(log[0].at, t0 + MicroSeconds(21));
    EXPECT_LT(log[0].at, t0 + MicroSeconds(25)); // long before the 3.3 ms pause would expire
}

TEST_F(MetaRoceDeviceTest, PauseFrameGoesAheadOfQueuedData)
{
    Pair pair(DataRate("10Gbps"), MicroSeconds(1));
    std::vector<Arrival> log;
    Record(pair.b, log);
    pair.b->SetAttribute("PfcEnabled", BooleanValue(false)); // only observe the frame order
    std::vector<uint32_t> sizes;
    pair.b->TraceConnectWithoutContext(
        "Sniffer",
        MakeBoundCallback(
            +[](std::vector<uint32_t>* out, Ptr<const Packet> p) { out->push_back(p->GetSize()); },
            &sizes));
    Simulator::Schedule(MicroSeconds(1), [&]() {
        for (uint16_t i = 0; i < 5; ++i)
        {
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, i, 1000), 3);
        }
        pair.a->SendPause(3, 100);
    });
    Simulator::Run();
    ASSERT_EQ(sizes.size(), 6U);
    EXPECT_EQ(sizes[0], 1042U);                             // already on the wire
    EXPECT_EQ(sizes[1], MetaRoceNetDevice::PFC_FRAME_SIZE); // then the pause
    EXPECT_EQ(log.size(), 5U); // the pause is consumed by the MAC, not passed up
}

TEST_F(MetaRoceDeviceTest, LinkDownDropsEverythingAndSendsNothing)
{
    Pair pair(DataRate("10Gbps"), MicroSeconds(5));
    std::vector<Arrival> log;
    Record(pair.b, log);
    Simulator::Schedule(MicroSeconds(1), [&]() {
        for (uint16_t i = 0; i < 10; ++i)
        {
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, i, 1000), 3);
        }
    });
    // After ~3 frames are on their way (0.85 us each, 5 us of flight), cut the link.
    Simulator::Schedule(MicroSeconds(4), [&]() { pair.channel->SetLinkUp(false); });
    Simulator::Schedule(MicroSeconds(20), [&]() {
        EXPECT_FALSE(pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 99, 100), 3));
        pair.a->SendPause(3, 10);
    });
    Simulator::Schedule(MicroSeconds(30), [&]() { pair.channel->SetLinkUp(true); });
    Simulator::Schedule(MicroSeconds(31), [&]() {
        EXPECT_TRUE(pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 98, 100), 3));
    });
    Simulator::Run();
    ASSERT_EQ(log.size(), 1U); // nothing sent before the cut arrived (5 us of flight)
    EXPECT_EQ(log[0].srcPort, 98);
    const auto& txDrops = pair.a->GetCounters().drops;
    const auto& rxDrops = pair.b->GetCounters().drops;
    const uint32_t down = static_cast<uint32_t>(MetaRoceDropReason::LINK_DOWN);
    // 10 queued + 1 refused + 1 pause: each is dropped exactly once, on one side or the other.
    EXPECT_EQ(txDrops[down] + rxDrops[down], 12U);
    EXPECT_GT(rxDrops[down], 0U); // frames in flight were lost on the wire
    EXPECT_EQ(pair.a->GetQueueBytes(), 0U);
}

TEST_F(MetaRoceDeviceTest, PullModeFeedsAtLineRate)
{
    Pair pair(DataRate("25Gbps"), MicroSeconds(1));
    metaroce_test::Sink sink;
    sink.Attach(pair.b);
    metaroce_test::Blaster blaster(pair.a, 0x0a000001, 0x0a000002);
    blaster.SetFrames(1000);
    blaster.SetPayload(4096);
    blaster.Start(MicroSeconds(1));
    Simulator::Run();
    EXPECT_EQ(sink.frames, 1000U);
    // Back to back: 1000 frames of 4138 + 24 wire bytes at 25 Gb/s.
    // Exactly 1000 x 1331.84 ns: the transmitter carries the sub-nanosecond remainders.
    EXPECT_EQ(Simulator::Now(), MicroSeconds(2) + NanoSeconds(1331840));
    ASSERT_EQ(sink.sequence.size(), 1000U);
    for (uint32_t i = 0; i < 1000; ++i)
    {
        ASSERT_EQ(sink.sequence[i], i);
    }
}

TEST_F(MetaRoceDeviceTest, BadFramesAreCountedAndDropped)
{
    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(2);
    metaroce_test::Sink sink;
    sink.Attach(fabric->GetHostPorts(1)[0]);
    Ptr<MetaRoceNetDevice> port = fabric->GetHostPorts(0)[0];
    const uint32_t dst = fabric->GetHostAddress(1);

    std::vector<Ptr<Packet>> bad;
    bad.push_back(Create<Packet>(10));  // runt: no Ethernet header
    bad.push_back(Create<Packet>(100)); // zeros: EtherType 0
    Ptr<Packet> good = metaroce_test::MakeFrame(1, dst, 7, 200);
    uint8_t bytes[300];
    const uint32_t size = good->CopyData(bytes, sizeof(bytes));
    bytes[metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_CHECKSUM_OFFSET] ^= 0x55;
    bad.push_back(Create<Packet>(bytes, size)); // bad IPv4 checksum
    bad.push_back(Create<Packet>(bytes, 40));   // truncated IPv4
    bytes[metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_CHECKSUM_OFFSET] ^= 0x55;
    bytes[metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_TTL_OFFSET] = 1;
    // Fix the checksum of the TTL-1 header so that only the TTL is wrong.
    metaroce::WriteU16(bytes + metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_CHECKSUM_OFFSET, 0);
    metaroce::WriteU16(bytes + metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_CHECKSUM_OFFSET,
                       metaroce::InternetChecksum(bytes + metaroce::ETHERNET_HEADER_SIZE, 20));
    bad.push_back(Create<Packet>(bytes, size));                     // TTL expires
    bad.push_back(metaroce_test::MakeFrame(1, 0x0b000001, 7, 100)); // no route
    bad.push_back(Create<Packet>(5000));                            // longer than the MTU

    Simulator::Schedule(MicroSeconds(1), [&]() {
        for (const Ptr<Packet>& p : bad)
        {
            port->Enqueue(p, 3);
        }
        port->Enqueue(good, 3);
    });
    Simulator::Run();
    Ptr<MetaRoceSwitch> sw = fabric->GetSwitch(0);
    const MetaRoceSwitch::Counters& c = sw->GetCounters();
    EXPECT_EQ(c.Drops(MetaRoceDropReason::MALFORMED), 3U);
    // The runt never reaches the switch logic: the port's MAC drops it.
    EXPECT_EQ(sw->GetPort(0)->GetCounters().drops[uint32_t(MetaRoceDropReason::MALFORMED)], 1U);
    EXPECT_EQ(c.Drops(MetaRoceDropReason::TTL_EXPIRED), 1U);
    EXPECT_EQ(c.Drops(MetaRoceDropReason::NO_ROUTE), 1U);
    EXPECT_EQ(port->GetCounters().drops[uint32_t(MetaRoceDropReason::MTU_EXCEEDED)], 1U);
    EXPECT_EQ(sink.frames, 1U);
    EXPECT_EQ(sink.malformed, 0U);
    ASSERT_EQ(sink.ttls.size(), 1U);
    EXPECT_EQ(sink.ttls[0], 63); // one switch hop; the checksum still verifies (parsed OK)
}

TEST_F(MetaRoceDeviceTest, PcapFileHoldsRealEthernetFrames)
{
    const std::string file = ::testing::TempDir() + "metaroce-pcap-test.pcap";
    std::remove(file.c_str());
    {
        // The file is closed when the last reference to the device's trace sink goes away.
        MetaRoceTopologyHelper topo;
        Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(2);
        metaroce_test::Sink sink;
        sink.Attach(fabric->GetHostPorts(1)[0]);
        topo.EnablePcap(file, fabric->GetHostPorts(1)[0], false, true);
        metaroce_test::Blaster blaster(fabric->GetHostPorts(0)[0],
                                       fabric->GetHostAddress(0),
                                       fabric->GetHostAddress(1));
        blaster.SetFrames(5);
        blaster.SetPayload(300);
        blaster.Start(MicroSeconds(1));
        Simulator::Run();
        Simulator::Destroy();
        EXPECT_EQ(sink.frames, 5U);
    }

    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(in.good());
    uint8_t header[24];
    in.read(reinterpret_cast<char*>(header), sizeof(header));
    ASSERT_EQ(in.gcount(), 24);
    // Nanosecond pcap magic a1b23c4d, written little endian; link type 1 (Ethernet).
    EXPECT_EQ(header[0], 0x4d);
    EXPECT_EQ(header[1], 0x3c);
    EXPECT_EQ(header[20], 1);
    size_t records = 0;
    uint8_t recordHeader[16];
    while (in.read(reinterpret_cast<char*>(recordHeader), sizeof(recordHeader)))
    {
        const uint32_t caplen = recordHeader[8] | (recordHeader[9] << 8) |
                                (recordHeader[10] << 16) | (uint32_t(recordHeader[11]) << 24);
        std::vector<uint8_t> frame(caplen);
        in.read(reinterpret_cast<char*>(frame.data()), caplen);
        metaroce::ParsedFrame parsed;
        EXPECT_EQ(metaroce::ParseFrame(frame.data(), frame.size(), parsed),
                  metaroce::FrameStatus::OK);
        ++records;
    }
    EXPECT_EQ(records, 5U);

    // Decode with tshark when it is installed (the wireshark label covers it elsewhere).
    if (std::system("command -v tshark >/dev/null 2>&1") == 0)
    {
        const std::string command =
            "tshark -r " + file + " 2>/dev/null | wc -l > " + file + ".count";
        ASSERT_EQ(std::system(command.c_str()), 0);
        std::ifstream count(file + ".count");
        int lines = 0;
        count >> lines;
        EXPECT_EQ(lines, 5);
    }
}

TEST_F(MetaRoceDeviceTest, DegradedLinkRunsAtItsFraction)
{
    Pair pair(DataRate("10Gbps"), MicroSeconds(1));
    std::vector<Arrival> log;
    Record(pair.b, log);
    pair.channel->ScheduleDegrade(0.25, Time(0), MilliSeconds(1));
    Simulator::Schedule(MicroSeconds(1), [&]() {
        for (uint16_t i = 0; i < 100; ++i)
        {
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, i, 1000), 3);
        }
    });
    Simulator::Run();
    ASSERT_EQ(log.size(), 100U);
    EXPECT_EQ(pair.a->GetDataRate(), DataRate("10Gbps")); // restored at 1 ms
    // At a quarter of the rate each frame takes four times as long.
    // 100 frames of 1066 wire bytes at 2.5 Gb/s: 341.12 us.
    EXPECT_NEAR(log.back().at.GetSeconds(), 2e-6 + 100 * 1066 * 8 / 2.5e9, 1e-9);
}

} // namespace

// MetaRoceCreateFrame carries an all-zero payload as a virtual zero area (no copy) and gives
// the same bytes as Packet(bytes, size); a payload with real bytes is copied as is.
TEST(MetaRoceFrameTest, ZeroPayloadFrameHasTheSameBytesAsACopy)
{
    std::vector<uint8_t> frame(4200, 0);
    for (uint32_t i = 0; i < 100; ++i)
    {
        frame[i] = static_cast<uint8_t>(i * 7 + 1); // headers
    }
    for (uint32_t i = 4196; i < 4200; ++i)
    {
        frame[i] = static_cast<uint8_t>(0xa0 + i); // trailer (ICRC)
    }
    for (bool realPayload : {false, true})
    {
        if (realPayload)
        {
            frame[2000] = 0x5a;
        }
        Ptr<Packet> built = MetaRoceCreateFrame(frame.data(), 4200, 100, 4096);
        ASSERT_EQ(built->GetSize(), 4200U);
        std::vector<uint8_t> out(4200, 0xff);
        ASSERT_EQ(built->CopyData(out.data(), 4200), 4200U);
        EXPECT_EQ(out, frame) << "real payload " << realPayload;
        // A switch-style header rewrite keeps the rest of the frame intact.
        built->RemoveAtStart(42);
        uint8_t rewritten[42] = {};
        built->AddHeader(MetaRoceRawHeader(rewritten, 42));
        ASSERT_EQ(built->CopyData(out.data(), 4200), 4200U);
        EXPECT_TRUE(std::equal(out.begin() + 42, out.end(), frame.begin() + 42));
    }
}
