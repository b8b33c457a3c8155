/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-net-device.h"

#include "metaroce-byte-order.h"
#include "metaroce-channel.h"
#include "metaroce-port-owner.h"
#include "metaroce-scheduler.h"
#include "metaroce-simulator-impl.h"

#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceNetDevice");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceNetDevice);

namespace
{

/// Smallest Ethernet frame without FCS; shorter frames are padded on the wire.
constexpr uint32_t MIN_FRAME_SIZE = 60;
/// Destination address of MAC control frames (802.1Qbb / 802.3x).
constexpr uint8_t MAC_CONTROL_DST[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
/// Offsets inside a MAC control frame.
constexpr size_t MAC_CONTROL_OPCODE_OFFSET = metaroce::ETHERNET_HEADER_SIZE;
/// Offset of the class-enable vector (PFC) or the pause time (PAUSE).
constexpr size_t MAC_CONTROL_ARG_OFFSET = MAC_CONTROL_OPCODE_OFFSET + 2;
/// Offset of the first of the eight PFC pause times.
constexpr size_t PFC_TIMES_OFFSET = MAC_CONTROL_ARG_OFFSET + 2;
/// Bytes of a PFC frame that carry information (header, opcode, vector, eight times).
constexpr size_t PFC_USED_SIZE = PFC_TIMES_OFFSET + 2 * MetaRoceNetDevice::MAX_PRIORITIES;

} // namespace

uint64_t
MetaRoceNetDevice::Counters::TotalDrops() const
{
    uint64_t total = 0;
    for (uint64_t d : drops)
    {
        total += d;
    }
    return total;
}

TypeId
MetaRoceNetDevice::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::MetaRoceNetDevice")
            .SetParent<NetDevice>()
            .SetGroupName("MetaRoce")
            .AddConstructor<MetaRoceNetDevice>()
            .AddAttribute(
                "Mtu",
                "Largest frame payload after the Ethernet header, in bytes. 4200 "
                "carries a MetaRoCE datagram with a 4096-byte payload.",
                UintegerValue(4200),
                MakeUintegerAccessor(&MetaRoceNetDevice::SetMtu, &MetaRoceNetDevice::GetMtu),
                MakeUintegerChecker<uint16_t>(68))
            .AddAttribute("Address",
                          "The MAC address of this port.",
                          Mac48AddressValue(Mac48Address("00:00:00:00:00:00")),
                          MakeMac48AddressAccessor(&MetaRoceNetDevice::m_address),
                          MakeMac48AddressChecker())
            .AddAttribute("DataRate",
                          "Line rate at which frames are serialized.",
                          DataRateValue(DataRate("100Gbps")),
                          MakeDataRateAccessor(&MetaRoceNetDevice::m_rate),
                          MakeDataRateChecker())
            .AddAttribute("WireOverhead",
                          "Bytes each frame occupies on the wire beyond its length: FCS (4), "
                          "preamble and start delimiter (8), inter-frame gap (12). Frames "
                          "shorter than 60 bytes are also padded to 60.",
                          UintegerValue(24),
                          MakeUintegerAccessor(&MetaRoceNetDevice::m_wireOverhead),
                          MakeUintegerChecker<uint32_t>(0, 1000))
            .AddAttribute("NumPriorities",
                          "Number of priority classes (egress queues), 1 to 8. Priorities "
                          "beyond the last use the last queue.",
                          UintegerValue(8),
                          MakeUintegerAccessor(&MetaRoceNetDevice::m_numPriorities),
                          MakeUintegerChecker<uint32_t>(1, MAX_PRIORITIES))
            .AddAttribute("PfcEnabled",
                          "Whether received PFC / PAUSE frames pause transmission.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&MetaRoceNetDevice::m_pfcEnabled),
                          MakeBooleanChecker())
            .AddAttribute("DataPriority",
                          "Priority class of frames whose DSCP is not ControlDscp.",
                          UintegerValue(3),
                          MakeUintegerAccessor(&MetaRoceNetDevice::m_dataPriority),
                          MakeUintegerChecker<uint8_t>(0, MAX_PRIORITIES - 1))
            .AddAttribute("ControlDscp",
                          "DSCP that marks control traffic (CS6 by default).",
                          UintegerValue(48),
                          MakeUintegerAccessor(&MetaRoceNetDevice::m_controlDscp),
                          MakeUintegerChecker<uint8_t>(0, 63))
            .AddAttribute("ControlPriority",
                          "Priority class of ControlDscp frames and of non-IPv4 frames.",
                          UintegerValue(7),
                          MakeUintegerAccessor(&MetaRoceNetDevice::m_controlPriority),
                          MakeUintegerChecker<uint8_t>(0, MAX_PRIORITIES - 1))
            .AddTraceSource("MacTx",
                            "A frame has been accepted for transmission (queued or pulled).",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_macTxTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("MacRx",
                            "A frame has been received and passed to the receive callback.",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_macRxTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PhyTxBegin",
                            "A frame starts serialization.",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_phyTxBeginTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PhyTxDrop",
                            "A frame was dropped on the transmit side.",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_phyTxDropTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PhyRxDrop",
                            "A frame towards this device was dropped (link loss, link down, "
                            "no receiver).",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_phyRxDropTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("Drop",
                            "Any drop at this device, with its reason.",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_dropTrace),
                            "ns3::MetaRoceNetDevice::DropTracedCallback")
            .AddTraceSource("Sniffer",
                            "Every frame put on or taken off the wire (PFC frames included), "
                            "with real bytes: the pcap hook.",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_snifferTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PromiscSniffer",
                            "Same as Sniffer (a point-to-point link sees no third party).",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_snifferTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PfcPauseReceived",
                            "A received PFC frame addressed this priority: (priority, quanta; "
                            "0 = XON). An 802.3x PAUSE reports every priority.",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_pfcPauseReceivedTrace),
                            "ns3::MetaRoceNetDevice::PfcTracedCallback")
            .AddTraceSource("PfcPauseSent",
                            "This device sent a PFC frame: (priority, quanta; 0 = XON).",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_pfcPauseSentTrace),
                            "ns3::MetaRoceNetDevice::PfcTracedCallback")
            .AddTraceSource("QueueBytes",
                            "Bytes in the data egress queues of this port.",
                            MakeTraceSourceAccessor(&MetaRoceNetDevice::m_queueBytesTotal),
                            "ns3::TracedValueCallback::Uint64");
    return tid;
}

MetaRoceNetDevice::MetaRoceNetDevice()
{
    NS_LOG_FUNCTION(this);
    m_pauseEnd.fill(Time(0));
}

MetaRoceNetDevice::~MetaRoceNetDevice()
{
    NS_LOG_FUNCTION(this);
}

void
MetaRoceNetDevice::DoDispose()
{
    NS_LOG_FUNCTION(this);
    if (m_txCompleteEvent)
    {
        m_txCompleteEvent->Cancel();
        m_txCompleteEvent = nullptr;
    }
    for (EventId& event : m_resumeEvent)
    {
        event.Cancel();
    }
    for (MetaRocePacketFifo& queue : m_queues)
    {
        queue.Clear();
    }
    m_busyQueues = 0;
    m_controlQueue.Clear();
    m_transmitting = false;
    m_node = nullptr;
    m_channel = nullptr;
    m_pullCallback = MakeNullCallback<Ptr<Packet>>();
    m_frameRxCallback = FrameReceiveCallback();
    m_owner = nullptr;
    m_admissionCallback = AdmissionCallback();
    m_dequeueCallback = DequeueCallback();
    m_rxCallback = NetDevice::ReceiveCallback();
    m_promiscCallback = NetDevice::PromiscReceiveCallback();
    NetDevice::DoDispose();
}

bool
MetaRoceNetDevice::Attach(Ptr<MetaRoceChannel> channel)
{
    NS_LOG_FUNCTION(this << channel);
    if (!channel->Attach(this))
    {
        return false;
    }
    m_channel = channel;
    return true;
}

bool
MetaRoceNetDevice::Enqueue(const Ptr<Packet>& frame, uint8_t priority)
{
    return Enqueue(frame, priority, 0);
}

bool
MetaRoceNetDevice::Enqueue(const Ptr<Packet>& frame, uint8_t priority, uint32_t cookie)
{
    MetaRoceFrameInfo info;
    return Enqueue(frame, priority, cookie, info);
}

bool
MetaRoceNetDevice::Enqueue(const Ptr<Packet>& frame,
                           uint8_t priority,
                           uint32_t cookie,
                           MetaRoceFrameInfo& info)
{
    NS_LOG_FUNCTION(this << frame << +priority << cookie);
    priority = ClampPriority(priority);
    if (!m_linkUp)
    {
        Drop(frame, info, MetaRoceDropReason::LINK_DOWN, true);
        return false;
    }
    if (frame->GetSize() > uint32_t(m_mtu) + metaroce::ETHERNET_HEADER_SIZE)
    {
        Drop(frame, info, MetaRoceDropReason::MTU_EXCEEDED, true);
        return false;
    }
    if (!m_admissionCallback.IsNull())
    {
        MetaRoceWritePending(*frame, info);
        if (!m_admissionCallback(this, frame, priority))
        {
            Drop(frame, MetaRoceDropReason::ADMISSION, true);
            return false;
        }
    }
    if (!m_macTxTrace.IsEmpty())
    {
        MetaRoceWritePending(*frame, info);
        m_macTxTrace(frame);
    }
    m_queueBytes[priority] += frame->GetSize();
    m_queueBytesTotal += frame->GetSize();
    m_queues[priority].Push(frame, cookie, info);
    m_busyQueues |= uint8_t(1U << priority);
    TryTransmit();
    return true;
}

void
MetaRoceNetDevice::SetPullCallback(PullCallback callback)
{
    m_pullCallback = callback;
    if (m_ownerPulls)
    {
        m_owner = nullptr;
        m_ownerPulls = false;
    }
}

void
MetaRoceNetDevice::NotifyPullReady()
{
    NS_LOG_FUNCTION(this);
    TryTransmit();
}

void
MetaRoceNetDevice::SetFrameReceiveCallback(FrameReceiveCallback callback)
{
    m_frameRxCallback = callback;
    m_owner = nullptr;
    m_ownerPulls = false;
}

void
MetaRoceNetDevice::SetAdmissionCallback(AdmissionCallback callback)
{
    m_admissionCallback = callback;
}

void
MetaRoceNetDevice::SetDequeueCallback(DequeueCallback callback)
{
    m_dequeueCallback = callback;
    if (!m_ownerPulls)
    {
        m_owner = nullptr;
    }
}

void
MetaRoceNetDevice::SetPortOwner(MetaRocePortOwner* owner, uint32_t index)
{
    m_owner = owner;
    m_ownerPort = index;
    m_ownerPulls = owner != nullptr && owner->GetFeedMode() == MetaRocePortOwner::PULL;
}

void
MetaRoceNetDevice::NotifyDequeued(MetaRocePacketFifo::Entry& entry, uint8_t priority)
{
    if (m_owner != nullptr && !m_ownerPulls)
    {
        m_owner->DequeuedFromPort(this, entry.packet, priority, entry.cookie);
    }
    else if (!m_dequeueCallback.IsNull())
    {
        MetaRoceWritePending(*entry.packet, entry.info);
        m_dequeueCallback(this, entry.packet, priority, entry.cookie);
    }
}

void
MetaRoceNetDevice::SendPause(uint8_t priority, uint16_t quanta)
{
    NS_LOG_FUNCTION(this << +priority << quanta);
    NS_ABORT_MSG_IF(priority >= MAX_PRIORITIES, "PFC priority " << +priority << " out of range");
    uint8_t frame[PFC_FRAME_SIZE] = {};
    std::memcpy(frame + metaroce::ETHERNET_DST_OFFSET, MAC_CONTROL_DST, 6);
    m_address.CopyTo(frame + metaroce::ETHERNET_SRC_OFFSET);
    metaroce::WriteU16(frame + metaroce::ETHERNET_TYPE_OFFSET, ETHERTYPE_MAC_CONTROL);
    metaroce::WriteU16(frame + MAC_CONTROL_OPCODE_OFFSET, OPCODE_PFC);
    metaroce::WriteU16(frame + MAC_CONTROL_ARG_OFFSET, uint16_t(1U << priority));
    metaroce::WriteU16(frame + PFC_TIMES_OFFSET + 2 * priority, quanta);
    Ptr<Packet> pause = Create<Packet>(frame, PFC_FRAME_SIZE);
    if (!m_linkUp)
    {
        Drop(pause, MetaRoceDropReason::LINK_DOWN, true);
        return;
    }
    if (quanta > 0)
    {
        ++m_counters.pauseSent;
    }
    else
    {
        ++m_counters.resumeSent;
    }
    m_pfcPauseSentTrace(priority, quanta);
    m_controlQueue.Push(pause, 0);
    TryTransmit();
}

void
MetaRoceNetDevice::SetLinkUp(bool up)
{
    NS_LOG_FUNCTION(this << up);
    if (up == m_linkUp)
    {
        return;
    }
    m_linkUp = up;
    if (!up)
    {
        FlushQueues();
    }
    m_linkChangeCallbacks();
    if (up)
    {
        TryTransmit();
    }
}

void
MetaRoceNetDevice::SetDataRate(DataRate rate)
{
    NS_LOG_FUNCTION(this << rate);
    m_rate = rate;
    m_txCarry = 0;
}

DataRate
MetaRoceNetDevice::GetDataRate() const
{
    return m_rate;
}

Time
MetaRoceNetDevice::GetTransmissionTime(uint32_t bytes) const
{
    return m_rate.CalculateBytesTxTime(std::max(bytes, MIN_FRAME_SIZE) + m_wireOverhead);
}

Time
MetaRoceNetDevice::NextSerializationTime(uint32_t bytes)
{
    // Exact integer arithmetic with the remainder carried to the next frame, so that a long
    // train of frames runs at exactly DataRate despite the simulator's time resolution.
    const uint64_t bits = uint64_t(std::max(bytes, MIN_FRAME_SIZE) + m_wireOverhead) * 8;
    const uint64_t bitRate = m_rate.GetBitRate();
    if (bitRate == 0)
    {
        return Time::Max();
    }
    // Integer conversion: Seconds(1) would multiply in int64x64_t on every frame.
    const uint64_t stepsPerSecond =
        static_cast<uint64_t>(Time::FromInteger(1, Time::S).GetTimeStep());
    __extension__ using Wide = unsigned __int128;
    const Wide numerator = Wide(bits) * stepsPerSecond + m_txCarry;
    if ((numerator >> 64) == 0)
    {
        // The usual case (a frame's bits times 10^9 or 10^12 steps): one 64-bit division.
        const uint64_t narrow = static_cast<uint64_t>(numerator);
        m_txCarry = narrow % bitRate;
        return TimeStep(narrow / bitRate);
    }
    const Wide quotient = numerator / bitRate;
    m_txCarry = static_cast<uint64_t>(numerator - quotient * bitRate);
    return TimeStep(static_cast<uint64_t>(quotient));
}

bool
MetaRoceNetDevice::IsPaused(uint8_t priority) const
{
    // Only a priority with a pause set can be paused: no clock read for the others.
    const uint8_t p = ClampPriority(priority);
    return m_pfcEnabled && (m_pauseSet & (1U << p)) != 0 && Simulator::Now() < m_pauseEnd[p];
}

uint8_t
MetaRoceNetDevice::GetPausedMask() const
{
    uint8_t mask = 0;
    for (uint32_t p = 0; p < m_numPriorities; ++p)
    {
        if (IsPaused(static_cast<uint8_t>(p)))
        {
            mask |= uint8_t(1U << p);
        }
    }
    return mask;
}

uint64_t
MetaRoceNetDevice::GetQueueBytes() const
{
    return m_queueBytesTotal.Get();
}

uint64_t
MetaRoceNetDevice::GetQueueBytes(uint8_t priority) const
{
    return m_queueBytes[ClampPriority(priority)];
}

uint32_t
MetaRoceNetDevice::GetQueueFrames(uint8_t priority) const
{
    return m_queues[ClampPriority(priority)].GetSize();
}

uint32_t
MetaRoceNetDevice::GetNumPriorities() const
{
    return m_numPriorities;
}

uint8_t
MetaRoceNetDevice::GetPriorityForDscp(uint8_t dscp) const
{
    return ClampPriority(dscp == m_controlDscp ? m_controlPriority : m_dataPriority);
}

uint8_t
MetaRoceNetDevice::ClassifyFrame(Ptr<const Packet> frame) const
{
    // Only the TOS byte is needed; the frame was built by the owner, so it is not validated.
    constexpr uint32_t needed = metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_TOS_OFFSET + 1;
    uint8_t bytes[needed];
    if (frame->CopyData(bytes, needed) < needed ||
        metaroce::ReadU16(bytes + metaroce::ETHERNET_TYPE_OFFSET) != metaroce::ETHERTYPE_IPV4)
    {
        return ClampPriority(m_controlPriority);
    }
    return GetPriorityForDscp(bytes[metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_TOS_OFFSET] >>
                              2);
}

bool
MetaRoceNetDevice::IsTransmitting() const
{
    return m_transmitting &&
           (m_txEventPending || !MetaRoceScheduler::HasPassed(m_txEndAt, m_txEndOrder));
}

Ptr<MetaRoceNetDevice>
MetaRoceNetDevice::GetPeer() const
{
    return m_channel ? m_channel->GetPeer(this) : nullptr;
}

Mac48Address
MetaRoceNetDevice::GetPeerMac() const
{
    Ptr<MetaRoceNetDevice> peer = GetPeer();
    return peer ? Mac48Address::ConvertFrom(peer->GetAddress()) : Mac48Address::GetBroadcast();
}

Ptr<MetaRoceChannel>
MetaRoceNetDevice::GetMetaRoceChannel() const
{
    return m_channel;
}

const MetaRoceNetDevice::Counters&
MetaRoceNetDevice::GetCounters() const
{
    return m_counters;
}

void
MetaRoceNetDevice::TryTransmit()
{
    if (TransmitterBusy() || !m_linkUp)
    {
        return;
    }
    if (!m_controlQueue.IsEmpty())
    {
        MetaRocePacketFifo::Entry entry = m_controlQueue.Pop();
        StartTransmission(entry.packet, entry.info);
        return;
    }
    // The busy queues of the configured classes, highest priority first.
    for (uint32_t busy = m_busyQueues & ((1U << m_numPriorities) - 1); busy != 0;
         busy &= ~(1U << (31 - __builtin_clz(busy))))
    {
        const int p = 31 - __builtin_clz(busy);
        const uint8_t priority = static_cast<uint8_t>(p);
        if (IsPaused(priority))
        {
            continue;
        }
        MetaRocePacketFifo::Entry entry = m_queues[p].Pop();
        if (m_queues[p].IsEmpty())
        {
            m_busyQueues &= uint8_t(~(1U << p));
        }
        const uint32_t size = entry.packet->GetSize();
        m_queueBytes[p] -= size;
        m_queueBytesTotal -= size;
        NotifyDequeued(entry, priority);
        StartTransmission(entry.packet, entry.info);
        return;
    }
    if (!m_ownerPulls && m_pullCallback.IsNull())
    {
        return;
    }
    MetaRoceFrameInfo info;
    // Initialized, not assigned: an assignment of a Ptr costs a reference count round trip.
    const Ptr<Packet> frame =
        m_ownerPulls ? m_owner->PullForPort(m_ownerPort, info) : m_pullCallback();
    if (!frame)
    {
        return;
    }
    if (frame->GetSize() > uint32_t(m_mtu) + metaroce::ETHERNET_HEADER_SIZE)
    {
        Drop(frame, info, MetaRoceDropReason::MTU_EXCEEDED, true);
        // Let the owner offer the next frame (scheduled, so a misbehaving owner cannot recurse).
        Simulator::ScheduleNow(&MetaRoceNetDevice::TryTransmit, this);
        return;
    }
    if (!m_macTxTrace.IsEmpty())
    {
        MetaRoceWritePending(*frame, info);
        m_macTxTrace(frame);
    }
    // A frame with a record (the NIC's) is IPv4: its DSCP is in the record.
    const uint8_t priority = info.valid ? GetPriorityForDscp(info.meta.dscp) : ClassifyFrame(frame);
    if (IsPaused(priority))
    {
        // The owner ignored the pause: hold the frame until the priority resumes.
        m_queueBytes[priority] += frame->GetSize();
        m_queueBytesTotal += frame->GetSize();
        m_queues[priority].Push(frame, 0, info);
        m_busyQueues |= uint8_t(1U << priority);
        return;
    }
    StartTransmission(frame, info);
}

/**
 * The end of a frame's serialization: runs TransmitComplete. Before it runs, MetaRoceScheduler
 * lets it prefetch the device's per-frame fields (they come first in MetaRoceNetDevice) and the
 * frame queued next, which a large fabric has evicted from the caches in the meantime.
 */
class MetaRoceNetDevice::TxCompleteEvent : public MetaRocePrefetchEvent
{
  public:
    /**
     * \param device the device
     * \param queue the queue of the frame expected to follow (a hint), or nullptr
     */
    TxCompleteEvent(MetaRoceNetDevice* device, const MetaRocePacketFifo* queue)
        : m_device(device),
          m_queue(queue),
          m_slot(queue ? &queue->Front() : nullptr),
          m_next(queue ? queue->Front().packet : nullptr)
    {
    }

    void Prefetch() const override
    {
        m_device->PrefetchFrameFields();
        // Hints taken when the frame started: the slot or the frame may have gone since (a
        // link flush); a prefetch of such an address is harmless.
        MetaRocePrefetchBytes(m_queue, sizeof(MetaRocePacketFifo));
        MetaRocePrefetchBytes(m_slot, sizeof(MetaRocePacketFifo::Slot));
        MetaRocePrefetchBytes(m_next, sizeof(Packet));
    }

  protected:
    void Notify() override
    {
        m_device->TransmitComplete();
    }

  private:
    MetaRoceNetDevice* m_device;            //!< the device
    const MetaRocePacketFifo* m_queue;      //!< queue of the next frame (hint)
    const MetaRocePacketFifo::Slot* m_slot; //!< its slot (hint)
    const Packet* m_next;                   //!< the next frame (hint)
};

void
MetaRoceNetDevice::PrefetchFrameFields() const
{
    // The per-frame fields run from the start of the object up to m_queues (see the header).
    MetaRocePrefetchBytes(this,
                          std::size_t(reinterpret_cast<const char*>(&m_queues) -
                                      reinterpret_cast<const char*>(this)));
}

void
MetaRoceNetDevice::StartTransmission(const Ptr<Packet>& frame, MetaRoceFrameInfo& info)
{
    NS_LOG_FUNCTION(this << frame);
    m_transmitting = true;
    const uint32_t size = frame->GetSize();
    const Time txTime = NextSerializationTime(size);
    if (!m_phyTxBeginTrace.IsEmpty())
    {
        MetaRoceWritePending(*frame, info);
        m_phyTxBeginTrace(frame);
    }
    if (!m_snifferTrace.IsEmpty())
    {
        MetaRoceWritePending(*frame, info);
        m_snifferTrace(frame);
    }
    ++m_counters.txFrames;
    m_counters.txBytes += size;
    // A switch port with nothing queued needs its end of serialization only if a frame comes
    // before it (TryTransmit): until then it holds the event's place in the order of events of
    // equal time instead of the event (MetaRoceScheduler::ReserveOrder).
    const MetaRocePacketFifo* next = NextQueue();
    m_txEndOrder = next == nullptr && m_owner != nullptr && !m_ownerPulls && m_pullCallback.IsNull()
                       ? MetaRoceScheduler::ReserveOrder()
                       : 0;
    m_txEndAt = MetaRoceNowSteps() + uint64_t(txTime.GetTimeStep());
    m_txEventPending = m_txEndOrder == 0;
    if (m_txEventPending)
    {
        ScheduleTxComplete(uint64_t(txTime.GetTimeStep()), next);
    }
    if (m_channel)
    {
        m_channel->Transmit(frame, this, txTime, info);
    }
}

const MetaRocePacketFifo*
MetaRoceNetDevice::NextQueue() const
{
    if (!m_controlQueue.IsEmpty())
    {
        return &m_controlQueue;
    }
    return m_busyQueues != 0 ? &m_queues[31 - __builtin_clz(m_busyQueues)] : nullptr;
}

void
MetaRoceNetDevice::ScheduleTxComplete(uint64_t delay, const MetaRocePacketFifo* next)
{
    // The frame that will follow, if one is queued already: the event prefetches it (and its
    // queue slot) before TransmitComplete runs.
    Ptr<TxCompleteEvent> done = Create<TxCompleteEvent>(this, next);
    MetaRoceScheduler::AnnounceNextEvent(PeekPointer(done));
    // The device keeps the event itself, not an EventId, to cancel it: the same effect (a
    // cancelled event that has run already is never looked at again), without building an
    // EventId in libns3-core per frame.
    MetaRoceScheduleSteps(delay, GetPointer(done));
    m_txCompleteEvent = done;
}

bool
MetaRoceNetDevice::TransmitterBusy()
{
    if (!m_transmitting || m_txEventPending)
    {
        return m_transmitting;
    }
    // The end of serialization has no event (StartTransmission): it has happened if its place
    // in the order of events is behind the running event; else it is scheduled now, there.
    if (MetaRoceScheduler::HasPassed(m_txEndAt, m_txEndOrder))
    {
        m_transmitting = false;
        return false;
    }
    MetaRoceScheduler::UseReservedOrder(m_txEndOrder);
    ScheduleTxComplete(m_txEndAt - MetaRoceNowSteps(), NextQueue());
    m_txEventPending = true;
    return true;
}

void
MetaRoceNetDevice::TransmitComplete()
{
    NS_LOG_FUNCTION(this);
    m_transmitting = false;
    TryTransmit();
}

void
MetaRoceNetDevice::Receive(Ptr<Packet> frame)
{
    MetaRoceFrameInfo info;
    Receive(frame, info);
}

void
MetaRoceNetDevice::Receive(const Ptr<Packet>& frame, MetaRoceFrameInfo& info)
{
    NS_LOG_FUNCTION(this << frame);
    if (!m_linkUp)
    {
        Drop(frame, info, MetaRoceDropReason::LINK_DOWN, false);
        return;
    }
    // A frame with a record is IPv4 (the record was made from its headers): no bytes to read.
    uint8_t header[metaroce::ETHERNET_HEADER_SIZE];
    if (!info.valid && frame->CopyData(header, sizeof(header)) < sizeof(header))
    {
        Drop(frame, MetaRoceDropReason::MALFORMED, false);
        return;
    }
    ++m_counters.rxFrames;
    m_counters.rxBytes += frame->GetSize();
    if (!m_snifferTrace.IsEmpty())
    {
        MetaRoceWritePending(*frame, info);
        m_snifferTrace(frame);
    }
    const uint16_t etherType = info.valid
                                   ? metaroce::ETHERTYPE_IPV4
                                   : metaroce::ReadU16(header + metaroce::ETHERNET_TYPE_OFFSET);
    if (etherType == ETHERTYPE_MAC_CONTROL)
    {
        ReceiveMacControl(frame);
        return;
    }
    if (!m_macRxTrace.IsEmpty())
    {
        MetaRoceWritePending(*frame, info);
    }
    if (m_owner != nullptr)
    {
        if (!m_macRxTrace.IsEmpty())
        {
            m_macRxTrace(frame);
        }
        m_owner->ReceiveFromPort(m_ownerPort, this, frame, info);
        return;
    }
    // Beyond here the frame leaves the model's path: its bytes must be complete.
    MetaRoceWritePending(*frame, info);
    if (!m_frameRxCallback.IsNull())
    {
        if (!m_macRxTrace.IsEmpty())
        {
            m_macRxTrace(frame);
        }
        m_frameRxCallback(this, frame);
        return;
    }
    if (m_rxCallback.IsNull() && m_promiscCallback.IsNull())
    {
        Drop(frame, MetaRoceDropReason::UNCLAIMED, false);
        return;
    }
    // Fallback for ns-3 protocol handlers: hand them the payload without the Ethernet header.
    if (!m_macRxTrace.IsEmpty())
    {
        m_macRxTrace(frame);
    }
    if (info.valid)
    {
        frame->CopyData(header, sizeof(header));
    }
    Mac48Address dst;
    Mac48Address src;
    dst.CopyFrom(header + metaroce::ETHERNET_DST_OFFSET);
    src.CopyFrom(header + metaroce::ETHERNET_SRC_OFFSET);
    Ptr<Packet> payload = frame->Copy();
    payload->RemoveAtStart(metaroce::ETHERNET_HEADER_SIZE);
    PacketType type = dst == m_address    ? NetDevice::PACKET_HOST
                      : dst.IsBroadcast() ? NetDevice::PACKET_BROADCAST
                      : dst.IsGroup()     ? NetDevice::PACKET_MULTICAST
                                          : NetDevice::PACKET_OTHERHOST;
    if (!m_promiscCallback.IsNull())
    {
        m_promiscCallback(this, payload, etherType, src, dst, type);
    }
    if (type != NetDevice::PACKET_OTHERHOST && !m_rxCallback.IsNull())
    {
        m_rxCallback(this, payload, etherType, src);
    }
}

void
MetaRoceNetDevice::ReceiveMacControl(Ptr<Packet> frame)
{
    uint8_t bytes[PFC_USED_SIZE] = {};
    const uint32_t copied = frame->CopyData(bytes, PFC_USED_SIZE);
    if (copied < MAC_CONTROL_ARG_OFFSET + 2)
    {
        Drop(frame, MetaRoceDropReason::MALFORMED, false);
        return;
    }
    const uint16_t opcode = metaroce::ReadU16(bytes + MAC_CONTROL_OPCODE_OFFSET);
    if (opcode == OPCODE_PAUSE)
    {
        ++m_counters.pauseReceived;
        const uint16_t quanta = metaroce::ReadU16(bytes + MAC_CONTROL_ARG_OFFSET);
        for (uint32_t p = 0; p < MAX_PRIORITIES; ++p)
        {
            m_pfcPauseReceivedTrace(static_cast<uint8_t>(p), quanta);
            PausePriority(static_cast<uint8_t>(p), quanta);
        }
        return;
    }
    if (opcode != OPCODE_PFC || copied < PFC_USED_SIZE)
    {
        Drop(frame, MetaRoceDropReason::MALFORMED, false);
        return;
    }
    ++m_counters.pauseReceived;
    const uint16_t classEnable = metaroce::ReadU16(bytes + MAC_CONTROL_ARG_OFFSET);
    for (uint32_t p = 0; p < MAX_PRIORITIES; ++p)
    {
        if ((classEnable & (1U << p)) == 0)
        {
            continue;
        }
        const uint16_t quanta = metaroce::ReadU16(bytes + PFC_TIMES_OFFSET + 2 * p);
        m_pfcPauseReceivedTrace(static_cast<uint8_t>(p), quanta);
        PausePriority(static_cast<uint8_t>(p), quanta);
    }
}

void
MetaRoceNetDevice::PausePriority(uint8_t priority, uint16_t quanta)
{
    if (!m_pfcEnabled || priority >= m_numPriorities)
    {
        return;
    }
    m_resumeEvent[priority].Cancel();
    if (quanta == 0)
    {
        m_pauseEnd[priority] = Simulator::Now();
        m_pauseSet &= uint8_t(~(1U << priority));
        TryTransmit();
        return;
    }
    const Time duration = m_rate.CalculateBytesTxTime(uint32_t(quanta) * (PAUSE_QUANTUM_BITS / 8));
    m_pauseEnd[priority] = Simulator::Now() + duration;
    m_pauseSet |= uint8_t(1U << priority);
    m_resumeEvent[priority] = Simulator::Schedule(duration, &MetaRoceNetDevice::TryTransmit, this);
}

void
MetaRoceNetDevice::NotifyChannelDrop(Ptr<Packet> frame, MetaRoceDropReason reason)
{
    Drop(frame, reason, false);
}

void
MetaRoceNetDevice::Drop(Ptr<Packet> frame,
                        MetaRoceFrameInfo& info,
                        MetaRoceDropReason reason,
                        bool transmitSide)
{
    MetaRoceWritePending(*frame, info);
    Drop(frame, reason, transmitSide);
}

void
MetaRoceNetDevice::Drop(Ptr<const Packet> frame, MetaRoceDropReason reason, bool transmitSide)
{
    NS_LOG_FUNCTION(this << frame << MetaRoceDropReasonName(reason));
    ++m_counters.drops[static_cast<uint32_t>(reason)];
    if (transmitSide)
    {
        m_phyTxDropTrace(frame);
    }
    else
    {
        m_phyRxDropTrace(frame);
    }
    m_dropTrace(frame, reason);
}

uint8_t
MetaRoceNetDevice::ClampPriority(uint8_t priority) const
{
    return static_cast<uint8_t>(std::min<uint32_t>(priority, m_numPriorities - 1));
}

void
MetaRoceNetDevice::FlushQueues()
{
    NS_LOG_FUNCTION(this);
    if (m_transmitting)
    {
        // The frame on the wire is already in the channel, which reports its loss (once).
        if (m_txCompleteEvent)
        {
            m_txCompleteEvent->Cancel();
        }
        m_transmitting = false;
    }
    while (!m_controlQueue.IsEmpty())
    {
        MetaRocePacketFifo::Entry entry = m_controlQueue.Pop();
        Drop(entry.packet, entry.info, MetaRoceDropReason::LINK_DOWN, true);
    }
    for (uint32_t p = 0; p < MAX_PRIORITIES; ++p)
    {
        while (!m_queues[p].IsEmpty())
        {
            MetaRocePacketFifo::Entry entry = m_queues[p].Pop();
            const uint32_t size = entry.packet->GetSize();
            m_queueBytes[p] -= size;
            m_queueBytesTotal -= size;
            NotifyDequeued(entry, static_cast<uint8_t>(p));
            Drop(entry.packet, entry.info, MetaRoceDropReason::LINK_DOWN, true);
        }
    }
    m_busyQueues = 0;
    // A paused priority stays paused only while the link lives.
    for (uint32_t p = 0; p < MAX_PRIORITIES; ++p)
    {
        m_resumeEvent[p].Cancel();
        m_pauseEnd[p] = Time(0);
    }
    m_pauseSet = 0;
}

bool
MetaRoceNetDevice::SendWithEthernetHeader(Ptr<Packet> packet,
                                          Mac48Address source,
                                          Mac48Address dest,
                                          uint16_t protocolNumber)
{
    uint8_t header[metaroce::ETHERNET_HEADER_SIZE];
    dest.CopyTo(header + metaroce::ETHERNET_DST_OFFSET);
    source.CopyTo(header + metaroce::ETHERNET_SRC_OFFSET);
    metaroce::WriteU16(header + metaroce::ETHERNET_TYPE_OFFSET, protocolNumber);
    packet->AddHeader(MetaRoceRawHeader(header, sizeof(header)));
    return Enqueue(packet, ClassifyFrame(packet));
}

// NetDevice interface

void
MetaRoceNetDevice::SetIfIndex(const uint32_t index)
{
    m_ifIndex = index;
}

uint32_t
MetaRoceNetDevice::GetIfIndex() const
{
    return m_ifIndex;
}

Ptr<Channel>
MetaRoceNetDevice::GetChannel() const
{
    return m_channel;
}

void
MetaRoceNetDevice::SetAddress(Address address)
{
    m_address = Mac48Address::ConvertFrom(address);
}

Address
MetaRoceNetDevice::GetAddress() const
{
    return m_address;
}

bool
MetaRoceNetDevice::SetMtu(const uint16_t mtu)
{
    m_mtu = mtu;
    return true;
}

uint16_t
MetaRoceNetDevice::GetMtu() const
{
    return m_mtu;
}

bool
MetaRoceNetDevice::IsLinkUp() const
{
    return m_linkUp;
}

void
MetaRoceNetDevice::AddLinkChangeCallback(Callback<void> callback)
{
    m_linkChangeCallbacks.ConnectWithoutContext(callback);
}

bool
MetaRoceNetDevice::IsBroadcast() const
{
    return true;
}

Address
MetaRoceNetDevice::GetBroadcast() const
{
    return Mac48Address::GetBroadcast();
}

bool
MetaRoceNetDevice::IsMulticast() const
{
    return true;
}

Address
MetaRoceNetDevice::GetMulticast(Ipv4Address multicastGroup) const
{
    return Mac48Address::GetMulticast(multicastGroup);
}

Address
MetaRoceNetDevice::GetMulticast(Ipv6Address addr) const
{
    return Mac48Address::GetMulticast(addr);
}

bool
MetaRoceNetDevice::IsBridge() const
{
    return false;
}

bool
MetaRoceNetDevice::IsPointToPoint() const
{
    return true;
}

bool
MetaRoceNetDevice::Send(Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber)
{
    Mac48Address to =
        Mac48Address::IsMatchingType(dest) ? Mac48Address::ConvertFrom(dest) : GetPeerMac();
    return SendWithEthernetHeader(packet, m_address, to, protocolNumber);
}

bool
MetaRoceNetDevice::SendFrom(Ptr<Packet> packet,
                            const Address& source,
                            const Address& dest,
                            uint16_t protocolNumber)
{
    Mac48Address from =
        Mac48Address::IsMatchingType(source) ? Mac48Address::ConvertFrom(source) : m_address;
    Mac48Address to =
        Mac48Address::IsMatchingType(dest) ? Mac48Address::ConvertFrom(dest) : GetPeerMac();
    return SendWithEthernetHeader(packet, from, to, protocolNumber);
}

Ptr<Node>
MetaRoceNetDevice::GetNode() const
{
    return m_node;
}

void
MetaRoceNetDevice::SetNode(Ptr<Node> node)
{
    m_node = node;
}

bool
MetaRoceNetDevice::NeedsArp() const
{
    return false;
}

void
MetaRoceNetDevice::SetReceiveCallback(NetDevice::ReceiveCallback cb)
{
    m_rxCallback = cb;
}

void
MetaRoceNetDevice::SetPromiscReceiveCallback(PromiscReceiveCallback cb)
{
    m_promiscCallback = cb;
}

bool
MetaRoceNetDevice::SupportsSendFrom() const
{
    return true;
}

} // namespace ns3
