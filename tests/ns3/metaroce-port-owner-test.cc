/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * MetaRocePortOwner: what a MetaRoceNetDevice calls on the owner set with SetPortOwner (PULL
 * and PUSH owners), and which callbacks set afterwards turn the shortcut off.
 */

#include "metaroce-test-traffic.h"

#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-port-owner.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <deque>
#include <gtest/gtest.h>
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

/// Two devices joined by one MetaRoceChannel.
struct Pair
{
    Ptr<Node> nodeA = CreateObject<Node>();
    Ptr<Node> nodeB = CreateObject<Node>();
    Ptr<MetaRoceNetDevice> a = CreateObject<MetaRoceNetDevice>();
    Ptr<MetaRoceNetDevice> b = CreateObject<MetaRoceNetDevice>();
    Ptr<MetaRoceChannel> channel = CreateObject<MetaRoceChannel>();

    Pair()
    {
        a->SetAddress(Mac48Address("02:00:00:00:00:0a"));
        b->SetAddress(Mac48Address("02:00:00:00:00:0b"));
        nodeA->AddDevice(a);
        nodeB->AddDevice(b);
        a->Attach(channel);
        b->Attach(channel);
    }
};

class MetaRocePortOwnerTest : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        Simulator::Destroy();
    }

    /// \return a 1000-byte-payload UDP frame
    static Ptr<Packet> Frame()
    {
        return metaroce_test::MakeFrame(0x0a000001, 0x0a000002, 1, 1000);
    }
};

TEST_F(MetaRocePortOwnerTest, PushOwnerGetsReceivesAndDequeuesButNotMacControl)
{
    Pair pair;
    RecordingOwner sender(MetaRocePortOwner::PUSH);
    RecordingOwner receiver(MetaRocePortOwner::PUSH);
    pair.a->SetPortOwner(&sender, 2);
    pair.b->SetPortOwner(&receiver, 5);
    const uint32_t size = Frame()->GetSize();
    Simulator::ScheduleNow([&]() {
        ASSERT_TRUE(pair.a->Enqueue(Frame(), 3, 42));
        ASSERT_TRUE(pair.a->Enqueue(Frame(), 1, 43));
        pair.a->SendPause(4, 100); // consumed by b's MAC, never given to the owner
    });
    Simulator::Run();

    ASSERT_EQ(sender.dequeued.size(), 2U);
    EXPECT_EQ(sender.dequeued[0].port, 42U); // the cookie
    EXPECT_EQ(sender.dequeued[0].priority, 3);
    EXPECT_EQ(sender.dequeued[0].device, PeekPointer(pair.a));
    EXPECT_EQ(sender.dequeued[1].port, 43U);
    EXPECT_EQ(sender.dequeued[1].priority, 1);
    EXPECT_TRUE(sender.pulledPorts.empty()); // a PUSH owner is never pulled
    ASSERT_EQ(receiver.received.size(), 2U);
    EXPECT_EQ(receiver.received[0].port, 5U);
    EXPECT_EQ(receiver.received[0].device, PeekPointer(pair.b));
    EXPECT_EQ(receiver.received[0].size, size);
    EXPECT_EQ(pair.b->GetCounters().pauseReceived, 1U);
    EXPECT_TRUE(receiver.dequeued.empty());
}

TEST_F(MetaRocePortOwnerTest, PullOwnerFeedsTheIdleTransmitter)
{
    Pair pair;
    RecordingOwner host(MetaRocePortOwner::PULL);
    RecordingOwner peer(MetaRocePortOwner::PULL);
    pair.a->SetPortOwner(&host, 1);
    pair.b->SetPortOwner(&peer, 0);
    host.toSend = {Frame(), Frame(), Frame()};
    Simulator::ScheduleNow([&]() { pair.a->NotifyPullReady(); });
    Simulator::Run();

    EXPECT_EQ(pair.a->GetCounters().txFrames, 3U);
    EXPECT_EQ(peer.received.size(), 3U);
    // One pull per frame, then one that found nothing; all for port 1.
    EXPECT_EQ(host.pulledPorts, std::vector<uint32_t>(4, 1U));
    EXPECT_TRUE(host.dequeued.empty()); // pulled frames are not enqueued
}

TEST_F(MetaRocePortOwnerTest, CallbacksSetAfterwardsTurnTheShortcutOff)
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
    EXPECT_EQ(sender.dequeued.size(), 1U);

    // ... and loses it to a dequeue callback; a PULL owner's port, to a pull callback.
    uint32_t callbackDequeues = 0;
    pair.a->SetDequeueCallback(MakeBoundCallback(
        +[](uint32_t* n, Ptr<MetaRoceNetDevice>, Ptr<const Packet>, uint8_t, uint32_t) { ++*n; },
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
    EXPECT_EQ(sender.dequeued.size(), 1U);
    EXPECT_EQ(callbackDequeues, 1U);
    EXPECT_EQ(callbackPulls, 1U);
    EXPECT_TRUE(receiver.pulledPorts.empty());
    // Without its owner, b gives received frames to its frame receive callback (not set here)
    // or ns-3's receive callback, no longer to the owner.
    EXPECT_EQ(receiver.received.size(), 1U);

    // The frame receive callback turns off both kinds.
    uint32_t callbackFrames = 0;
    pair.a->SetPortOwner(&sender, 0);
    pair.b->SetPortOwner(&receiver, 0);
    pair.b->SetFrameReceiveCallback(MakeBoundCallback(
        +[](uint32_t* n, Ptr<MetaRoceNetDevice>, Ptr<Packet>) { ++*n; },
        &callbackFrames));
    Simulator::ScheduleNow([&]() { pair.a->Enqueue(Frame(), 3, 9); });
    Simulator::Run();
    EXPECT_EQ(callbackFrames, 1U);
    EXPECT_EQ(receiver.received.size(), 1U);
    EXPECT_EQ(sender.dequeued.size(), 2U);
}

} // namespace
