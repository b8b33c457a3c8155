/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-remote-channel.h"

#include "metaroce-net-device.h"
#include "metaroce-scheduler.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/mpi-interface.h"
#include "ns3/mpi-receiver.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceRemoteChannel");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceRemoteTag);
NS_OBJECT_ENSURE_REGISTERED(MetaRoceRemoteChannel);

namespace
{
/// ns-3.37's granted-time-window receive buffer (MAX_MPI_MSG_SIZE) minus its 16-byte prefix.
constexpr uint32_t MAX_SERIALIZED_FRAME = 2000 - 16;
} // namespace

TypeId
MetaRoceRemoteTag::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceRemoteTag")
                            .SetParent<Tag>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceRemoteTag>();
    return tid;
}

TypeId
MetaRoceRemoteTag::GetInstanceTypeId() const
{
    return GetTypeId();
}

uint32_t
MetaRoceRemoteTag::GetSerializedSize() const
{
    return 9;
}

void
MetaRoceRemoteTag::Serialize(TagBuffer buffer) const
{
    buffer.WriteU64(epoch);
    buffer.WriteU8(direction);
}

void
MetaRoceRemoteTag::Deserialize(TagBuffer buffer)
{
    epoch = buffer.ReadU64();
    direction = buffer.ReadU8();
}

void
MetaRoceRemoteTag::Print(std::ostream& os) const
{
    os << "epoch=" << epoch << " direction=" << uint32_t(direction);
}

TypeId
MetaRoceRemoteChannel::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceRemoteChannel")
                            .SetParent<MetaRoceChannel>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceRemoteChannel>();
    return tid;
}

MetaRoceRemoteChannel::MetaRoceRemoteChannel()
{
    NS_LOG_FUNCTION(this);
}

MetaRoceRemoteChannel::~MetaRoceRemoteChannel()
{
    NS_LOG_FUNCTION(this);
}

void
MetaRoceRemoteChannel::ConnectReceivers()
{
    NS_ABORT_MSG_IF(GetNDevices() != 2, "a remote link needs both devices attached");
    NS_ABORT_MSG_IF(GetDelay().IsZero(),
                    "a link across ranks needs a positive Delay (it is the MPI lookahead)");
    for (std::size_t i = 0; i < 2; ++i)
    {
        Ptr<MetaRoceNetDevice> device = GetMetaRoceDevice(i);
        Ptr<MpiReceiver> receiver = device->GetObject<MpiReceiver>();
        if (!receiver)
        {
            receiver = CreateObject<MpiReceiver>();
            device->AggregateObject(receiver);
        }
        receiver->SetReceiveCallback(MakeCallback(&MetaRoceRemoteChannel::ReceiveRemote, this));
    }
}

void
MetaRoceRemoteChannel::Transmit(Ptr<Packet> frame, Ptr<const MetaRoceNetDevice> source, Time txTime)
{
    if (GetNDevices() < 2)
    {
        return;
    }
    const uint32_t direction = source == GetMetaRoceDevice(0) ? 0 : 1;
    Ptr<MetaRoceNetDevice> destination = GetMetaRoceDevice(1 - direction);
    const uint32_t rank = MpiInterface::IsEnabled() ? MpiInterface::GetSystemId() : 0;
    Ptr<Node> sourceNode = source->GetNode();
    if (sourceNode && sourceNode->GetSystemId() != rank)
    {
        // A node this rank does not own must not put traffic on a link: its owner does.
        NS_LOG_WARN("frame from node " << sourceNode->GetId() << " of rank "
                                       << sourceNode->GetSystemId() << " ignored on rank " << rank);
        return;
    }
    Ptr<Node> node = destination->GetNode();
    if (!MpiInterface::IsEnabled() || node->GetSystemId() == rank)
    {
        MetaRoceChannel::Transmit(frame, source, txTime);
        return;
    }
    Ptr<Packet> copy = frame->Copy();
    MetaRoceRemoteTag tag;
    tag.epoch = GetEpoch();
    tag.direction = static_cast<uint8_t>(direction);
    copy->AddPacketTag(tag);
    NS_ABORT_MSG_IF(
        copy->GetSerializedSize() > MAX_SERIALIZED_FRAME,
        "a frame of " << frame->GetSize() << " bytes serializes to " << copy->GetSerializedSize()
                      << " bytes, more than ns-3's MPI message limit (" << MAX_SERIALIZED_FRAME
                      << "); use virtual memory regions (payload as a zero area)");
    ++m_remoteSent;
    MpiInterface::SendPacket(copy,
                             Simulator::Now() + txTime + GetDelay(),
                             node->GetId(),
                             destination->GetIfIndex());
}

void
MetaRoceRemoteChannel::Transmit(const Ptr<Packet>& frame,
                                const MetaRoceNetDevice* source,
                                Time txTime,
                                MetaRoceFrameInfo& info)
{
    MetaRoceWritePending(*frame, info);
    Transmit(frame, Ptr<const MetaRoceNetDevice>(source), txTime);
}

void
MetaRoceRemoteChannel::ReceiveRemote(Ptr<Packet> frame)
{
    MetaRoceRemoteTag tag;
    const bool tagged = frame->RemovePacketTag(tag);
    NS_ABORT_MSG_IF(!tagged, "a frame from another rank without its MetaRoceRemoteTag");
    if (!MetaRoceScheduler::LinkTieBreakInUse())
    {
        Deliver(frame, tag.direction, tag.epoch);
        return;
    }
    // The MPI receive event was scheduled at the synchronization, not when the frame was sent,
    // so among events of the same time it sits elsewhere than the arrival of a local link. Run
    // the arrival as a tagged event of this time: with MetaRoceScheduler's Link tie-break it
    // is then ordered exactly like a local link's arrival (docs/distributed.md).
    MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(GetId(), tag.direction));
    Simulator::ScheduleNow(&MetaRoceRemoteChannel::Deliver,
                           this,
                           frame,
                           uint32_t(tag.direction),
                           tag.epoch);
}

uint64_t
MetaRoceRemoteChannel::GetRemoteSent() const
{
    return m_remoteSent;
}

} // namespace ns3
