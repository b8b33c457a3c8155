/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns-3 unit tests of MetaRoceNetDevice, its channel and its frames: serialisation and
 * propagation, strict priority, PFC, link failure and degradation, pull mode, bad frames, pcap
 * files; and its owner interface: what a device calls on the MetaRocePortOwner set with
 * SetPortOwner (PULL and PUSH owners), and which callbacks set afterwards turn that shortcut
 * off. They run in an ns-3 tree (./test.py -s metaroce-device) and in the standalone build
 * (ctest -R ns3-suite.metaroce-device).
 */

#include "metaroce-seeded-test-case.h"
#include "metaroce-test-traffic.h"

#include "ns3/boolean.h"
#include "ns3/metaroce-byte-order.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-frame.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-pcap-helper.h"
#include "ns3/metaroce-port-owner.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/node.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/test.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

/// An owner that records every call a port makes and feeds queued frames on pulls.
class RecordingOwner : public MetaRocePortOwner
{
  public:
    /// One ReceiveFromPort or DequeuedFromPort call.
    struct Call
    {
        uint32_t port;             //!< port index (receive) or cookie (dequeue)
        MetaRoceNetDevice* device; //!< the device
        uint32_t size;             //!< frame size
        uint8_t priority;          //!< priority (dequeue only)
    };

    /// \param mode how the device feeds its transmitter
    explicit RecordingOwner(FeedMode mode)
        : MetaRocePortOwner(mode)
    {
    }

    void ReceiveFromPort(uint32_t port,
                         MetaRoceNetDevice* device,
                         Ptr<Packet> frame,
                         MetaRoceFrameInfo& /* info */) override
    {
        received.push_back({port, device, frame->GetSize(), 0});
    }

    Ptr<Packet> PullForPort(uint32_t port, MetaRoceFrameInfo& /* info */) override
    {
        pulledPorts.push_back(port);
        if (toSend.empty())
        {
            return nullptr;
        }
        Ptr<Packet> frame = toSend.front();
        toSend.pop_front();
        return frame;
    }

    void DequeuedFromPort(MetaRoceNetDevice* device,
                          Ptr<const Packet> frame,
                          uint8_t priority,
                          uint32_t cookie) override
    {
        dequeued.push_back({cookie, device, frame->GetSize(), priority});
    }

    std::vector<Call> received;        //!< ReceiveFromPort calls
    std::vector<Call> dequeued;        //!< DequeuedFromPort calls
    std::vector<uint32_t> pulledPorts; //!< PullForPort calls
    std::deque<Ptr<Packet>> toSend;    //!< what PullForPort returns, in order
};

/// \return a 1000-byte-payload UDP frame
Ptr<Packet>
Frame()
{
    return metaroce_test::MakeFrame(0x0a000001, 0x0a000002, 1, 1000);
}

/// Two hosts joined by one MetaRoceChannel, no switch.
struct Pair
{
    Ptr<Node> nodeA = CreateObject<Node>();                         //!< node of a
    Ptr<Node> nodeB = CreateObject<Node>();                         //!< node of b
    Ptr<MetaRoceNetDevice> a = CreateObject<MetaRoceNetDevice>();   //!< one end
    Ptr<MetaRoceNetDevice> b = CreateObject<MetaRoceNetDevice>();   //!< the other end
    Ptr<MetaRoceChannel> channel = CreateObject<MetaRoceChannel>(); //!< the link

    /// The devices' and the channel's default rate and delay.
    Pair()
        : Pair(std::nullopt, std::nullopt)
    {
    }

    /**
     * \param rate both devices' rate (none: the default)
     * \param delay the channel's delay (none: the default)
     */
    Pair(std::optional<DataRate> rate, std::optional<Time> delay)
    {
        if (delay)
        {
            channel->SetAttribute("Delay", TimeValue(*delay));
        }
        if (rate)
        {
            a->SetDataRate(*rate);
            b->SetDataRate(*rate);
        }
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

/// Record every frame that reaches \p device in \p log.
void
Record(Ptr<MetaRoceNetDevice> device, std::vector<Arrival>& log)
{
    device->SetFrameReceiveCallback(MakeBoundCallback(
        +[](std::vector<Arrival>* out, Ptr<MetaRoceNetDevice>, Ptr<Packet> frame) {
            uint8_t headers[METAROCE_HEADER_PEEK_SIZE];
            metaroce::ParsedFrame parsed;
            const bool ok = MetaRocePeekFrame(frame, headers, parsed) == metaroce::FrameStatus::OK;
            out->push_back(
                {Simulator::Now(), frame->GetSize(), ok ? parsed.meta.srcPort : uint16_t(0)});
        },
        &log));
}

} // namespace

/**
 * \ingroup metaroce-tests
 * A PUSH owner gets the frames its port receives and the dequeues of what it enqueued, but not
 * the MAC control frames (PFC pauses), and is never pulled.
 */
class MetaRocePushOwnerTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRocePushOwnerTestCase()
        : metaroce_test::SeededTestCase("a push owner gets receives and dequeues, not MAC control")
    {
    }

  private:
    void DoRun() override
    {
        Pair pair;
        RecordingOwner sender(MetaRocePortOwner::PUSH);
        RecordingOwner receiver(MetaRocePortOwner::PUSH);
        pair.a->SetPortOwner(&sender, 2);
        pair.b->SetPortOwner(&receiver, 5);
        const uint32_t size = Frame()->GetSize();
        bool enqueued = false;
        Simulator::ScheduleNow([&]() {
            enqueued = pair.a->Enqueue(Frame(), 3, 42) && pair.a->Enqueue(Frame(), 1, 43);
            pair.a->SendPause(4, 100); // consumed by b's MAC, never given to the owner
        });
        Simulator::Run();
        NS_TEST_ASSERT_MSG_EQ(enqueued, true, "both frames enqueued");
        NS_TEST_ASSERT_MSG_EQ(sender.dequeued.size(), 2U, "dequeues");
        NS_TEST_EXPECT_MSG_EQ(sender.dequeued[0].port, 42U, "the cookie");
        NS_TEST_EXPECT_MSG_EQ(int(sender.dequeued[0].priority), 3, "priority");
        NS_TEST_EXPECT_MSG_EQ(sender.dequeued[0].device, PeekPointer(pair.a), "device");
        NS_TEST_EXPECT_MSG_EQ(sender.dequeued[1].port, 43U, "the cookie");
        NS_TEST_EXPECT_MSG_EQ(int(sender.dequeued[1].priority), 1, "priority");
        NS_TEST_EXPECT_MSG_EQ(sender.pulledPorts.empty(), true, "a PUSH owner is never pulled");
        NS_TEST_ASSERT_MSG_EQ(receiver.received.size(), 2U, "receives");
        NS_TEST_EXPECT_MSG_EQ(receiver.received[0].port, 5U, "port index");
        NS_TEST_EXPECT_MSG_EQ(receiver.received[0].device, PeekPointer(pair.b), "device");
        NS_TEST_EXPECT_MSG_EQ(receiver.received[0].size, size, "size");
        NS_TEST_EXPECT_MSG_EQ(pair.b->GetCounters().pauseReceived, 1U, "the pause");
        NS_TEST_EXPECT_MSG_EQ(receiver.dequeued.empty(), true, "the receiver sent nothing");
        Simulator::Destroy();
    }
};

/**
 * \ingroup metaroce-tests
 * A PULL owner feeds its idle transmitter: one pull per frame, then one that finds nothing.
 */
class MetaRocePullOwnerTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRocePullOwnerTestCase()
        : metaroce_test::SeededTestCase("a pull owner feeds the idle transmitter")
    {
    }

  private:
    void DoRun() override
    {
        Pair pair;
        RecordingOwner host(MetaRocePortOwner::PULL);
        RecordingOwner peer(MetaRocePortOwner::PULL);
        pair.a->SetPortOwner(&host, 1);
        pair.b->SetPortOwner(&peer, 0);
        host.toSend = {Frame(), Frame(), Frame()};
        Simulator::ScheduleNow([&]() { pair.a->NotifyPullReady(); });
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(pair.a->GetCounters().txFrames, 3U, "frames sent");
        NS_TEST_EXPECT_MSG_EQ(peer.received.size(), 3U, "frames received");
        // One pull per frame, then one that found nothing; all for port 1.
        NS_TEST_EXPECT_MSG_EQ((host.pulledPorts == std::vector<uint32_t>(4, 1U)),
                              true,
                              "four pulls of port 1, got " << host.pulledPorts.size());
        NS_TEST_EXPECT_MSG_EQ(host.dequeued.empty(), true, "pulled frames are not enqueued");
        Simulator::Destroy();
    }
};

/**
 * \ingroup metaroce-tests
 * Callbacks set after SetPortOwner turn the owner shortcut off where they apply: a dequeue
 * callback for a PUSH owner, a pull callback for a PULL owner, the frame receive callback for
 * both; a pull callback leaves a PUSH owner (never pulled) its shortcut.
 */
class MetaRocePortOwnerCallbacksTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRocePortOwnerCallbacksTestCase()
        : metaroce_test::SeededTestCase("callbacks set afterwards turn the owner shortcut off")
    {
    }

  private:
    void DoRun() override
    {
        Pair pair;
        RecordingOwner sender(MetaRocePortOwner::PUSH);
        RecordingOwner receiver(MetaRocePortOwner::PULL);
        pair.a->SetPortOwner(&sender, 0);
        pair.b->SetPortOwner(&receiver, 0);
        // A PUSH owner keeps the shortcut when a pull callback is set (it is never pulled) ...
        pair.a->SetPullCallback(MakeNullCallback<Ptr<Packet>>());
        Simulator::ScheduleNow([&]() { pair.a->Enqueue(Frame(), 3, 7); });
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(sender.dequeued.size(), 1U, "kept with a pull callback");

        // ... and loses it to a dequeue callback; a PULL owner's port, to a pull callback.
        uint32_t callbackDequeues = 0;
        pair.a->SetDequeueCallback(MakeBoundCallback(
            +[](uint32_t* n, Ptr<MetaRoceNetDevice>, Ptr<const Packet>, uint8_t, uint32_t) {
                ++*n;
            },
            &callbackDequeues));
        uint32_t callbackPulls = 0;
        pair.b->SetPullCallback(MakeBoundCallback(
            +[](uint32_t* n) {
                ++*n;
                return Ptr<Packet>();
            },
            &callbackPulls));
        Simulator::ScheduleNow([&]() {
            pair.a->Enqueue(Frame(), 3, 8);
            pair.b->NotifyPullReady();
        });
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(sender.dequeued.size(), 1U, "lost to a dequeue callback");
        NS_TEST_EXPECT_MSG_EQ(callbackDequeues, 1U, "the dequeue callback");
        NS_TEST_EXPECT_MSG_EQ(callbackPulls, 1U, "the pull callback");
        NS_TEST_EXPECT_MSG_EQ(receiver.pulledPorts.empty(), true, "lost to a pull callback");
        // Without its owner, b gives received frames to its frame receive callback (not set
        // here) or ns-3's receive callback, no longer to the owner.
        NS_TEST_EXPECT_MSG_EQ(receiver.received.size(), 1U, "no longer received by the owner");

        // The frame receive callback turns off both kinds.
        uint32_t callbackFrames = 0;
        pair.a->SetPortOwner(&sender, 0);
        pair.b->SetPortOwner(&receiver, 0);
        pair.b->SetFrameReceiveCallback(MakeBoundCallback(
            +[](uint32_t* n, Ptr<MetaRoceNetDevice>, Ptr<Packet>) { ++*n; },
            &callbackFrames));
        Simulator::ScheduleNow([&]() { pair.a->Enqueue(Frame(), 3, 9); });
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(callbackFrames, 1U, "the frame receive callback");
        NS_TEST_EXPECT_MSG_EQ(receiver.received.size(), 1U, "not the owner");
        NS_TEST_EXPECT_MSG_EQ(sender.dequeued.size(), 2U, "the sender's owner again");
        Simulator::Destroy();
    }
};

/**
 * \ingroup metaroce-tests
 * A frame takes its serialisation time (with preamble, FCS and gap; runts padded to 60 bytes)
 * plus the channel's delay.
 */
class MetaRoceSerializationTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRoceSerializationTestCase()
        : metaroce_test::SeededTestCase("serialisation and propagation delay")
    {
    }

  private:
    void DoRun() override
    {
        Pair pair(DataRate("10Gbps"), MicroSeconds(2));
        std::vector<Arrival> log;
        Record(pair.b, log);
        Ptr<Packet> frame = metaroce_test::MakeFrame(0x0a000001, 0x0a000002, 1, 1000);
        const uint32_t size = frame->GetSize();
        Simulator::Schedule(MicroSeconds(1), [&]() { pair.a->Enqueue(frame, 3); });
        Simulator::Run();
        NS_TEST_ASSERT_MSG_EQ(log.size(), 1U, "one frame");
        // (frame + FCS/preamble/IFG 24 bytes) at 10 Gb/s, then 2 us of propagation.
        const double txSeconds = (size + 24) * 8 / 10e9;
        NS_TEST_EXPECT_MSG_EQ_TOL(pair.a->GetTransmissionTime(size).GetSeconds(),
                                  txSeconds,
                                  1e-9,
                                  "serialisation time");
        NS_TEST_EXPECT_MSG_EQ_TOL(log[0].at.GetSeconds(), 3e-6 + txSeconds, 1e-9, "arrival");
        NS_TEST_EXPECT_MSG_EQ(pair.a->GetCounters().txFrames, 1U, "sent");
        NS_TEST_EXPECT_MSG_EQ(pair.b->GetCounters().rxFrames, 1U, "received");
        NS_TEST_EXPECT_MSG_EQ(pair.a->GetTransmissionTime(20),
                              pair.a->GetTransmissionTime(60),
                              "runts are padded to 60 bytes on the wire");
    }
};

/**
 * \ingroup metaroce-tests
 * Strict priority: the highest non-empty priority goes first; queue bytes per priority.
 */
class MetaRoceStrictPriorityTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRoceStrictPriorityTestCase()
        : metaroce_test::SeededTestCase("strict priority, highest first")
    {
    }

  private:
    void DoRun() override
    {
        Pair pair(DataRate("10Gbps"), MicroSeconds(1));
        std::vector<Arrival> log;
        Record(pair.b, log);
        uint64_t queuedAt1 = 0;
        uint64_t queued = 0;
        Simulator::Schedule(MicroSeconds(1), [&]() {
            // The first frame goes on the wire at once; the rest queue up.
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 100, 500), 1);
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 101, 500), 1);
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 102, 500), 1);
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 500, 500), 5);
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 700, 500), 7);
            queuedAt1 = pair.a->GetQueueBytes(1);
            queued = pair.a->GetQueueBytes();
        });
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(queuedAt1, 2U * 542, "priority 1's queue");
        NS_TEST_EXPECT_MSG_EQ(queued, 4U * 542, "all queues");
        NS_TEST_ASSERT_MSG_EQ(log.size(), 5U, "frames");
        const std::vector<uint16_t> expected = {100, 700, 500, 101, 102};
        for (size_t i = 0; i < expected.size(); ++i)
        {
            NS_TEST_EXPECT_MSG_EQ(log[i].srcPort, expected[i], "frame " << i);
        }
        NS_TEST_EXPECT_MSG_EQ(pair.a->GetQueueBytes(), 0U, "drained");
    }
};

/**
 * \ingroup metaroce-tests
 * A PFC pause stops one priority for its quanta, the others go on; an XON ends it early.
 */
class MetaRocePfcTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRocePfcTestCase()
        : metaroce_test::SeededTestCase("PFC pauses one priority and XON resumes it")
    {
    }

  private:
    void DoRun() override
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
        bool paused3 = false;
        bool paused7 = true;
        uint32_t mask = 0;
        Simulator::Schedule(MicroSeconds(10), [&]() {
            for (uint16_t port = 30; port < 33; ++port)
            {
                pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, port, 1000), 3);
            }
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 70, 1000), 7);
            paused3 = pair.a->IsPaused(3);
            paused7 = pair.a->IsPaused(7);
            mask = pair.a->GetPausedMask();
        });
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(paused3, true, "priority 3 paused");
        NS_TEST_EXPECT_MSG_EQ(paused7, false, "priority 7 not paused");
        NS_TEST_EXPECT_MSG_EQ(mask, 0x08U, "paused mask");
        NS_TEST_ASSERT_MSG_EQ(pausesSeen.size(), 1U, "pauses traced");
        NS_TEST_EXPECT_MSG_EQ(int(pausesSeen[0].first), 3, "paused priority");
        NS_TEST_EXPECT_MSG_EQ(pausesSeen[0].second, 1000, "quanta");
        NS_TEST_ASSERT_MSG_EQ(log.size(), 4U, "frames");
        NS_TEST_EXPECT_MSG_EQ(log[0].srcPort, 70, "priority 7 is not paused");
        NS_TEST_EXPECT_MSG_LT(log[0].at, MicroSeconds(13), "priority 7 went at once");
        // The pause frame arrives at 1 us + 60+24 bytes at 10G (67 ns) + 1 us.
        const Time pauseStart = MicroSeconds(2) + pair.b->GetTransmissionTime(60);
        const Time pauseEnd = pauseStart + NanoSeconds(51200);
        for (size_t i = 1; i < 4; ++i)
        {
            NS_TEST_EXPECT_MSG_GT(log[i].at,
                                  pauseEnd,
                                  "priority 3 frame " << i << " left during the pause");
        }
        NS_TEST_EXPECT_MSG_EQ(pair.b->GetCounters().pauseSent, 1U, "pause sent");
        NS_TEST_EXPECT_MSG_EQ(pair.a->GetCounters().pauseReceived, 1U, "pause received");

        // XON ends a pause early.
        log.clear();
        const Time t0 = Simulator::Now();
        Simulator::Schedule(MicroSeconds(1), [&]() { pair.b->SendPause(3, 0xffff); });
        Simulator::Schedule(MicroSeconds(5), [&]() {
            pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 33, 1000), 3);
        });
        Simulator::Schedule(MicroSeconds(20), [&]() { pair.b->SendPause(3, 0); });
        Simulator::Run();
        NS_TEST_ASSERT_MSG_EQ(log.size(), 1U, "the frame after XON");
        NS_TEST_EXPECT_MSG_GT(log[0].at, t0 + MicroSeconds(21), "after the XON");
        NS_TEST_EXPECT_MSG_LT(log[0].at,
                              t0 + MicroSeconds(25),
                              "long before the 3.3 ms pause would expire");
    }
};

/**
 * \ingroup metaroce-tests
 * A pause frame goes ahead of the data queued before it (after the frame on the wire), and the
 * receiving MAC consumes it.
 */
class MetaRocePauseFirstTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRocePauseFirstTestCase()
        : metaroce_test::SeededTestCase("a pause frame goes ahead of queued data")
    {
    }

  private:
    void DoRun() override
    {
        Pair pair(DataRate("10Gbps"), MicroSeconds(1));
        std::vector<Arrival> log;
        Record(pair.b, log);
        pair.b->SetAttribute("PfcEnabled", BooleanValue(false)); // only observe the frame order
        std::vector<uint32_t> sizes;
        pair.b->TraceConnectWithoutContext(
            "Sniffer",
            MakeBoundCallback(
                +[](std::vector<uint32_t>* out, Ptr<const Packet> p) {
                    out->push_back(p->GetSize());
                },
                &sizes));
        Simulator::Schedule(MicroSeconds(1), [&]() {
            for (uint16_t i = 0; i < 5; ++i)
            {
                pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, i, 1000), 3);
            }
            pair.a->SendPause(3, 100);
        });
        Simulator::Run();
        NS_TEST_ASSERT_MSG_EQ(sizes.size(), 6U, "frames on the wire");
        NS_TEST_EXPECT_MSG_EQ(sizes[0], 1042U, "already on the wire");
        NS_TEST_EXPECT_MSG_EQ(sizes[1], MetaRoceNetDevice::PFC_FRAME_SIZE, "then the pause");
        NS_TEST_EXPECT_MSG_EQ(log.size(), 5U, "the pause is consumed by the MAC, not passed up");
    }
};

/**
 * \ingroup metaroce-tests
 * A link that goes down drops what is queued and in flight, refuses new frames, and sends
 * again once it is up; each frame is counted once.
 */
class MetaRoceLinkDownTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRoceLinkDownTestCase()
        : metaroce_test::SeededTestCase("a link down drops everything and sends nothing")
    {
    }

  private:
    void DoRun() override
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
        bool acceptedWhileDown = true;
        Simulator::Schedule(MicroSeconds(20), [&]() {
            acceptedWhileDown = pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 99, 100), 3);
            pair.a->SendPause(3, 10);
        });
        Simulator::Schedule(MicroSeconds(30), [&]() { pair.channel->SetLinkUp(true); });
        bool acceptedWhenUp = false;
        Simulator::Schedule(MicroSeconds(31), [&]() {
            acceptedWhenUp = pair.a->Enqueue(metaroce_test::MakeFrame(1, 2, 98, 100), 3);
        });
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(acceptedWhileDown, false, "refused while down");
        NS_TEST_EXPECT_MSG_EQ(acceptedWhenUp, true, "accepted when up");
        NS_TEST_ASSERT_MSG_EQ(log.size(), 1U, "nothing sent before the cut arrived");
        NS_TEST_EXPECT_MSG_EQ(log[0].srcPort, 98, "the frame after the repair");
        const auto& txDrops = pair.a->GetCounters().drops;
        const auto& rxDrops = pair.b->GetCounters().drops;
        const uint32_t down = static_cast<uint32_t>(MetaRoceDropReason::LINK_DOWN);
        // 10 queued + 1 refused + 1 pause: each is dropped exactly once, on one side or the other.
        NS_TEST_EXPECT_MSG_EQ(txDrops[down] + rxDrops[down], 12U, "drops");
        NS_TEST_EXPECT_MSG_GT(rxDrops[down], 0U, "frames in flight were lost on the wire");
        NS_TEST_EXPECT_MSG_EQ(pair.a->GetQueueBytes(), 0U, "queues emptied");
    }
};

/**
 * \ingroup metaroce-tests
 * A pull-mode port feeds back to back at line rate, carrying sub-nanosecond remainders.
 */
class MetaRocePullModeTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRocePullModeTestCase()
        : metaroce_test::SeededTestCase("pull mode feeds at line rate")
    {
    }

  private:
    void DoRun() override
    {
        Pair pair(DataRate("25Gbps"), MicroSeconds(1));
        metaroce_test::Sink sink;
        sink.Attach(pair.b);
        metaroce_test::Blaster blaster(pair.a, 0x0a000001, 0x0a000002);
        blaster.SetFrames(1000);
        blaster.SetPayload(4096);
        blaster.Start(MicroSeconds(1));
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(sink.frames, 1000U, "frames");
        // Back to back: 1000 frames of 4138 + 24 wire bytes at 25 Gb/s, exactly 1000 x
        // 1331.84 ns: the transmitter carries the sub-nanosecond remainders.
        NS_TEST_EXPECT_MSG_EQ(Simulator::Now(),
                              MicroSeconds(2) + NanoSeconds(1331840),
                              "the last arrival");
        NS_TEST_ASSERT_MSG_EQ(sink.sequence.size(), 1000U, "sequence");
        for (uint32_t i = 0; i < 1000; ++i)
        {
            NS_TEST_ASSERT_MSG_EQ(sink.sequence[i], i, "in order");
        }
    }
};

/**
 * \ingroup metaroce-tests
 * Bad frames (runt, EtherType 0, bad IPv4 checksum, truncated IPv4, TTL expiring, no route,
 * longer than the MTU) are counted by reason and dropped; the good one arrives.
 */
class MetaRoceBadFramesTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRoceBadFramesTestCase()
        : metaroce_test::SeededTestCase("bad frames are counted and dropped")
    {
    }

  private:
    void DoRun() override
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
        uint8_t* ip = bytes + metaroce::ETHERNET_HEADER_SIZE;
        ip[metaroce::IPV4_CHECKSUM_OFFSET] ^= 0x55;
        bad.push_back(Create<Packet>(bytes, size)); // bad IPv4 checksum
        bad.push_back(Create<Packet>(bytes, 40));   // truncated IPv4
        ip[metaroce::IPV4_CHECKSUM_OFFSET] ^= 0x55;
        ip[metaroce::IPV4_TTL_OFFSET] = 1;
        // Fix the checksum of the TTL-1 header so that only the TTL is wrong.
        metaroce::WriteU16(ip + metaroce::IPV4_CHECKSUM_OFFSET, 0);
        metaroce::WriteU16(ip + metaroce::IPV4_CHECKSUM_OFFSET, metaroce::InternetChecksum(ip, 20));
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
        NS_TEST_EXPECT_MSG_EQ(c.Drops(MetaRoceDropReason::MALFORMED), 3U, "malformed");
        const uint32_t malformed = uint32_t(MetaRoceDropReason::MALFORMED);
        NS_TEST_EXPECT_MSG_EQ(sw->GetPort(0)->GetCounters().drops[malformed],
                              1U,
                              "the runt never reaches the switch logic: the port's MAC drops it");
        NS_TEST_EXPECT_MSG_EQ(c.Drops(MetaRoceDropReason::TTL_EXPIRED), 1U, "TTL expired");
        NS_TEST_EXPECT_MSG_EQ(c.Drops(MetaRoceDropReason::NO_ROUTE), 1U, "no route");
        NS_TEST_EXPECT_MSG_EQ(port->GetCounters().drops[uint32_t(MetaRoceDropReason::MTU_EXCEEDED)],
                              1U,
                              "MTU exceeded");
        NS_TEST_EXPECT_MSG_EQ(sink.frames, 1U, "the good frame");
        NS_TEST_EXPECT_MSG_EQ(sink.malformed, 0U, "nothing malformed delivered");
        NS_TEST_ASSERT_MSG_EQ(sink.ttls.size(), 1U, "TTLs");
        NS_TEST_EXPECT_MSG_EQ(int(sink.ttls[0]),
                              63,
                              "one switch hop; the checksum still verifies (parsed OK)");
    }
};

/**
 * \ingroup metaroce-tests
 * The pcap file holds real Ethernet frames (nanosecond magic, link type 1) that parse, and
 * tshark, where installed, decodes them.
 */
class MetaRocePcapTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRocePcapTestCase()
        : metaroce_test::SeededTestCase("the pcap file holds real Ethernet frames")
    {
    }

  private:
    void DoRun() override
    {
        const std::string file = CreateTempDirFilename("metaroce-pcap-test.pcap");
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
            NS_TEST_EXPECT_MSG_EQ(sink.frames, 5U, "frames");
        }

        std::ifstream in(file, std::ios::binary);
        NS_TEST_ASSERT_MSG_EQ(in.good(), true, "open " << file);
        uint8_t header[24];
        in.read(reinterpret_cast<char*>(header), sizeof(header));
        NS_TEST_ASSERT_MSG_EQ(in.gcount(), 24, "the file header");
        // Nanosecond pcap magic a1b23c4d, written little endian; link type 1 (Ethernet).
        NS_TEST_EXPECT_MSG_EQ(int(header[0]), 0x4d, "magic");
        NS_TEST_EXPECT_MSG_EQ(int(header[1]), 0x3c, "magic");
        NS_TEST_EXPECT_MSG_EQ(int(header[20]), 1, "link type");
        size_t records = 0;
        uint8_t recordHeader[16];
        while (in.read(reinterpret_cast<char*>(recordHeader), sizeof(recordHeader)))
        {
            const uint32_t caplen = recordHeader[8] | (recordHeader[9] << 8) |
                                    (recordHeader[10] << 16) | (uint32_t(recordHeader[11]) << 24);
            std::vector<uint8_t> frame(caplen);
            in.read(reinterpret_cast<char*>(frame.data()), caplen);
            metaroce::ParsedFrame parsed;
            NS_TEST_EXPECT_MSG_EQ((metaroce::ParseFrame(frame.data(), frame.size(), parsed) ==
                                   metaroce::FrameStatus::OK),
                                  true,
                                  "record " << records << " parses");
            ++records;
        }
        NS_TEST_EXPECT_MSG_EQ(records, 5U, "records");

        // Decode with tshark when it is installed (the wireshark label covers it elsewhere).
        if (std::system("command -v tshark >/dev/null 2>&1") == 0)
        {
            const std::string command =
                "tshark -r " + file + " 2>/dev/null | wc -l > " + file + ".count";
            NS_TEST_ASSERT_MSG_EQ(std::system(command.c_str()), 0, command);
            std::ifstream count(file + ".count");
            int lines = 0;
            count >> lines;
            NS_TEST_EXPECT_MSG_EQ(lines, 5, "tshark's packets");
        }
    }
};

/**
 * \ingroup metaroce-tests
 * A degraded link runs at its fraction of the rate and is restored when the degradation ends.
 */
class MetaRoceDegradedLinkTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRoceDegradedLinkTestCase()
        : metaroce_test::SeededTestCase("a degraded link runs at its fraction")
    {
    }

  private:
    void DoRun() override
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
        NS_TEST_ASSERT_MSG_EQ(log.size(), 100U, "frames");
        NS_TEST_EXPECT_MSG_EQ(pair.a->GetDataRate(), DataRate("10Gbps"), "restored at 1 ms");
        // At a quarter of the rate each frame takes four times as long: 100 frames of 1066 wire
        // bytes at 2.5 Gb/s, 341.12 us.
        NS_TEST_EXPECT_MSG_EQ_TOL(log.back().at.GetSeconds(),
                                  2e-6 + 100 * 1066 * 8 / 2.5e9,
                                  1e-9,
                                  "the last arrival");
    }
};

/**
 * \ingroup metaroce-tests
 * MetaRoceCreateFrame carries an all-zero payload as a virtual zero area (no copy) and gives
 * the same bytes as Packet(bytes, size); a payload with real bytes is copied as is; a
 * switch-style header rewrite keeps the rest of the frame intact.
 */
class MetaRoceZeroPayloadFrameTestCase : public metaroce_test::SeededTestCase
{
  public:
    MetaRoceZeroPayloadFrameTestCase()
        : metaroce_test::SeededTestCase("a zero-payload frame has the same bytes as a copy")
    {
    }

  private:
    void DoRun() override
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
            NS_TEST_ASSERT_MSG_EQ(built->GetSize(), 4200U, "size");
            std::vector<uint8_t> out(4200, 0xff);
            NS_TEST_ASSERT_MSG_EQ(built->CopyData(out.data(), 4200), 4200U, "copy");
            NS_TEST_EXPECT_MSG_EQ((out == frame), true, "bytes, real payload " << realPayload);
            built->RemoveAtStart(42);
            uint8_t rewritten[42] = {};
            built->AddHeader(MetaRoceRawHeader(rewritten, 42));
            NS_TEST_ASSERT_MSG_EQ(built->CopyData(out.data(), 4200), 4200U, "copy");
            NS_TEST_EXPECT_MSG_EQ(std::equal(out.begin() + 42, out.end(), frame.begin() + 42),
                                  true,
                                  "the rest intact, real payload " << realPayload);
        }
    }
};

/**
 * \ingroup metaroce-tests
 * Unit tests of MetaRoceNetDevice, its channel, its frames and its owner interface.
 */
class MetaRoceDeviceTestSuite : public TestSuite
{
  public:
    MetaRoceDeviceTestSuite()
        : TestSuite("metaroce-device", TestSuite::Type::UNIT)
    {
        AddTestCase(new MetaRoceSerializationTestCase);
        AddTestCase(new MetaRoceStrictPriorityTestCase);
        AddTestCase(new MetaRocePfcTestCase);
        AddTestCase(new MetaRocePauseFirstTestCase);
        AddTestCase(new MetaRoceLinkDownTestCase);
        AddTestCase(new MetaRocePullModeTestCase);
        AddTestCase(new MetaRoceBadFramesTestCase);
        AddTestCase(new MetaRocePcapTestCase);
        AddTestCase(new MetaRoceDegradedLinkTestCase);
        AddTestCase(new MetaRoceZeroPayloadFrameTestCase);
        AddTestCase(new MetaRocePushOwnerTestCase);
        AddTestCase(new MetaRocePullOwnerTestCase);
        AddTestCase(new MetaRocePortOwnerCallbacksTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceDeviceTestSuite g_metaRoceDeviceTestSuite;
