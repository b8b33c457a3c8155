/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-channel.h"

#include "metaroce-gilbert-elliott-error-model.h"
#include "metaroce-net-device.h"
#include "metaroce-scheduler.h"
#include "metaroce-simulator-impl.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceChannel");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceChannel);

TypeId
MetaRoceChannel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::MetaRoceChannel")
            .SetParent<Channel>()
            .SetGroupName("MetaRoce")
            .AddConstructor<MetaRoceChannel>()
            .AddAttribute("Delay",
                          "Propagation delay of the link.",
                          TimeValue(MicroSeconds(1)),
                          MakeTimeAccessor(&MetaRoceChannel::m_delay),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("ErrorModel0",
                          "Error model of direction 0 (device 0 to device 1); none if null.",
                          PointerValue(),
                          MakePointerAccessor(&MetaRoceChannel::SetErrorModel0,
                                              &MetaRoceChannel::GetErrorModel0),
                          MakePointerChecker<ErrorModel>())
            .AddAttribute("ErrorModel1",
                          "Error model of direction 1 (device 1 to device 0); none if null.",
                          PointerValue(),
                          MakePointerAccessor(&MetaRoceChannel::SetErrorModel1,
                                              &MetaRoceChannel::GetErrorModel1),
                          MakePointerChecker<ErrorModel>())
            .AddTraceSource("Drop",
                            "A frame was lost on the link: (frame, direction, reason).",
                            MakeTraceSourceAccessor(&MetaRoceChannel::m_dropTrace),
                            "ns3::MetaRoceChannel::DropTracedCallback")
            .AddTraceSource("LinkState",
                            "The link went up (true) or down (false).",
                            MakeTraceSourceAccessor(&MetaRoceChannel::m_linkStateTrace),
                            "ns3::MetaRoceChannel::LinkStateTracedCallback");
    return tid;
}

MetaRoceChannel::MetaRoceChannel()
{
    NS_LOG_FUNCTION(this);
}

MetaRoceChannel::~MetaRoceChannel()
{
    NS_LOG_FUNCTION(this);
}

void
MetaRoceChannel::DoDispose()
{
    m_devices = {};
    m_errorModels = {};
    Channel::DoDispose();
}

bool
MetaRoceChannel::Attach(Ptr<MetaRoceNetDevice> device)
{
    NS_LOG_FUNCTION(this << device);
    if (m_nDevices >= 2)
    {
        return false;
    }
    m_devices[m_nDevices++] = device;
    return true;
}

/**
 * The arrival of a frame at the far end of the link: runs MetaRoceChannel::Deliver. Before it
 * runs, MetaRoceScheduler lets it prefetch the frame, the channel and the per-frame fields of
 * the receiving device (MetaRoceNetDevice keeps them in its first cache lines): on a large
 * fabric all of them have left the caches since the frame was sent.
 */
class MetaRoceChannel::ArrivalEvent : public MetaRocePrefetchEvent
{
  public:
    /**
     * \param channel the channel
     * \param frame the frame
     * \param direction its direction
     * \param epoch the link epoch when it was sent
     * \param info the frame's record
     */
    ArrivalEvent(MetaRoceChannel* channel,
                 const Ptr<Packet>& frame,
                 uint32_t direction,
                 uint64_t epoch,
                 const MetaRoceFrameInfo& info)
        : m_channel(channel),
          m_destination(PeekPointer(channel->m_devices[1 - direction])),
          m_frame(frame),
          m_direction(direction),
          m_epoch(epoch),
          m_info(info)
    {
    }

    void Prefetch() const override
    {
        MetaRocePrefetchBytes(PeekPointer(m_frame), sizeof(Packet));
        MetaRocePrefetchBytes(m_channel, sizeof(MetaRoceChannel));
        if (m_destination != nullptr)
        {
            m_destination->PrefetchFrameFields();
        }
    }

  protected:
    void Notify() override
    {
        m_channel->DeliverFrame(m_frame, m_direction, m_epoch, m_info);
    }

  private:
    MetaRoceChannel* m_channel;             //!< the channel
    const MetaRoceNetDevice* m_destination; //!< the receiving device (read only by Prefetch)
    Ptr<Packet> m_frame;                    //!< the frame
    uint32_t m_direction;                   //!< its direction
    uint64_t m_epoch;                       //!< the link epoch when it was sent
    MetaRoceFrameInfo m_info;               //!< the frame's record
};

void
MetaRoceChannel::Transmit(Ptr<Packet> frame, Ptr<const MetaRoceNetDevice> source, Time txTime)
{
    ScheduleArrival(frame, PeekPointer(source), txTime, MetaRoceFrameInfo());
}

void
MetaRoceChannel::Transmit(const Ptr<Packet>& frame,
                          const MetaRoceNetDevice* source,
                          Time txTime,
                          MetaRoceFrameInfo& info)
{
    ScheduleArrival(frame, source, txTime, info);
}

void
MetaRoceChannel::ScheduleArrival(const Ptr<Packet>& frame,
                                 const MetaRoceNetDevice* source,
                                 Time txTime,
                                 const MetaRoceFrameInfo& info)
{
    if (m_nDevices < 2)
    {
        return;
    }
    const uint32_t direction = source == PeekPointer(m_devices[0]) ? 0 : 1;
    uint32_t context = m_context[1 - direction];
    if (context == NO_CONTEXT)
    {
        // A device's node never changes once set: look it up once per end.
        Ptr<Node> node = m_devices[1 - direction]->GetNode();
        if (node)
        {
            context = m_context[1 - direction] = node->GetId();
        }
        else
        {
            context = Simulator::GetContext();
        }
    }
    // The arrival's tag orders it among arrivals of equal time (MetaRoceScheduler, TieBreak
    // Link); ignored by other schedulers.
    uint32_t& tag = m_arrivalTag[direction];
    if (tag == 0)
    {
        tag = MetaRoceScheduler::LinkTag(GetId(), direction);
    }
    MetaRoceScheduler::TagNextEvent(tag);
    auto* arrival = new ArrivalEvent(this, frame, direction, m_epoch, info);
    MetaRoceScheduler::AnnounceNextEvent(arrival);
    MetaRoceScheduleStepsWithContext(context,
                                     uint64_t(txTime.GetTimeStep() + m_delay.GetTimeStep()),
                                     arrival);
}

void
MetaRoceChannel::Deliver(Ptr<Packet> frame, uint32_t direction, uint64_t epoch)
{
    MetaRoceFrameInfo info;
    DeliverFrame(frame, direction, epoch, info);
}

void
MetaRoceChannel::DeliverFrame(const Ptr<Packet>& frame,
                              uint32_t direction,
                              uint64_t epoch,
                              MetaRoceFrameInfo& info)
{
    MetaRoceNetDevice* destination = PeekPointer(m_devices[1 - direction]);
    if (epoch != m_epoch || !m_up)
    {
        MetaRoceWritePending(*frame, info);
        ++m_dropped[direction];
        m_dropTrace(frame, direction, MetaRoceDropReason::LINK_DOWN);
        destination->NotifyChannelDrop(frame, MetaRoceDropReason::LINK_DOWN);
        return;
    }
    const Ptr<ErrorModel>& model = m_errorModels[direction];
    if (model)
    {
        MetaRoceWritePending(*frame, info); // an error model may read the bytes
    }
    if (model && model->IsCorrupt(frame))
    {
        ++m_dropped[direction];
        m_dropTrace(frame, direction, MetaRoceDropReason::CHANNEL_LOSS);
        destination->NotifyChannelDrop(frame, MetaRoceDropReason::CHANNEL_LOSS);
        return;
    }
    ++m_delivered[direction];
    destination->Receive(frame, info);
}

Ptr<MetaRoceNetDevice>
MetaRoceChannel::GetPeer(Ptr<const MetaRoceNetDevice> device) const
{
    if (m_nDevices < 2)
    {
        return nullptr;
    }
    return device == m_devices[0] ? m_devices[1] : m_devices[0];
}

Ptr<MetaRoceNetDevice>
MetaRoceChannel::GetMetaRoceDevice(std::size_t i) const
{
    return i < m_nDevices ? m_devices[i] : nullptr;
}

void
MetaRoceChannel::SetErrorModel(uint32_t direction, Ptr<ErrorModel> model)
{
    NS_ABORT_MSG_IF(direction > 1, "a MetaRoceChannel has directions 0 and 1");
    CheckStreamsNotAssigned(model);
    m_errorModels[direction] = model;
}

void
MetaRoceChannel::CheckStreamsNotAssigned(Ptr<ErrorModel> model) const
{
    NS_ABORT_MSG_IF(model && m_streamsAssigned,
                    "MetaRoceChannel: error model set after AssignStreams, so its random stream "
                    "would not be fixed; add every loss model first, then call AssignStreams");
}

void
MetaRoceChannel::SetErrorModel(Ptr<const MetaRoceNetDevice> source, Ptr<ErrorModel> model)
{
    NS_ABORT_MSG_IF(source != m_devices[0] && source != m_devices[1],
                    "the device is not attached to this channel");
    SetErrorModel(source == m_devices[0] ? 0 : 1, model);
}

void
MetaRoceChannel::SetErrorModel0(Ptr<ErrorModel> model)
{
    CheckStreamsNotAssigned(model);
    m_errorModels[0] = model;
}

void
MetaRoceChannel::SetErrorModel1(Ptr<ErrorModel> model)
{
    CheckStreamsNotAssigned(model);
    m_errorModels[1] = model;
}

Ptr<ErrorModel>
MetaRoceChannel::GetErrorModel0() const
{
    return m_errorModels[0];
}

Ptr<ErrorModel>
MetaRoceChannel::GetErrorModel1() const
{
    return m_errorModels[1];
}

Ptr<ErrorModel>
MetaRoceChannel::GetErrorModel(uint32_t direction) const
{
    return direction < 2 ? m_errorModels[direction] : nullptr;
}

void
MetaRoceChannel::SetLinkUp(bool up)
{
    NS_LOG_FUNCTION(this << up);
    if (up == m_up)
    {
        return;
    }
    m_up = up;
    ++m_epoch;
    for (std::size_t i = 0; i < m_nDevices; ++i)
    {
        m_devices[i]->SetLinkUp(up);
    }
    m_linkStateTrace(up);
}

bool
MetaRoceChannel::IsLinkUp() const
{
    return m_up;
}

void
MetaRoceChannel::ScheduleFailure(Time start, Time stop)
{
    NS_LOG_FUNCTION(this << start << stop);
    const Time now = Simulator::Now();
    NS_ABORT_MSG_IF(start < now, "a link failure cannot start in the past");
    Simulator::Schedule(start - now, &MetaRoceChannel::SetLinkUp, this, false);
    if (stop > start && stop != Time::Max())
    {
        Simulator::Schedule(stop - now, &MetaRoceChannel::SetLinkUp, this, true);
    }
}

void
MetaRoceChannel::SetDataRate(DataRate rate)
{
    NS_LOG_FUNCTION(this << rate);
    for (std::size_t i = 0; i < m_nDevices; ++i)
    {
        m_devices[i]->SetDataRate(rate);
    }
}

void
MetaRoceChannel::ScheduleDegrade(double fraction, Time start, Time stop)
{
    NS_LOG_FUNCTION(this << fraction << start << stop);
    NS_ABORT_MSG_IF(fraction <= 0 || fraction > 1, "the rate fraction must be in (0, 1]");
    NS_ABORT_MSG_IF(m_nDevices < 2, "degrading a link needs both ends attached");
    const Time now = Simulator::Now();
    NS_ABORT_MSG_IF(start < now, "a link degradation cannot start in the past");
    const DataRate nominal = m_devices[0]->GetDataRate();
    const DataRate degraded(static_cast<uint64_t>(nominal.GetBitRate() * fraction));
    Simulator::Schedule(start - now, &MetaRoceChannel::SetDataRate, this, degraded);
    if (stop > start && stop != Time::Max())
    {
        Simulator::Schedule(stop - now, &MetaRoceChannel::SetDataRate, this, nominal);
    }
}

Time
MetaRoceChannel::GetDelay() const
{
    return m_delay;
}

int64_t
MetaRoceChannel::AssignStreams(int64_t stream)
{
    m_streamsAssigned = true;
    int64_t used = 0;
    for (Ptr<ErrorModel>& model : m_errorModels)
    {
        if (!model)
        {
            continue;
        }
        if (Ptr<RateErrorModel> rate = DynamicCast<RateErrorModel>(model))
        {
            used += rate->AssignStreams(stream + used);
        }
        else if (Ptr<BurstErrorModel> burst = DynamicCast<BurstErrorModel>(model))
        {
            used += burst->AssignStreams(stream + used);
        }
        else if (Ptr<MetaRoceGilbertElliottErrorModel> ge =
                     DynamicCast<MetaRoceGilbertElliottErrorModel>(model))
        {
            used += ge->AssignStreams(stream + used);
        }
    }
    return used;
}

uint64_t
MetaRoceChannel::GetDelivered(uint32_t direction) const
{
    return direction < 2 ? m_delivered[direction] : 0;
}

uint64_t
MetaRoceChannel::GetDropped(uint32_t direction) const
{
    return direction < 2 ? m_dropped[direction] : 0;
}

std::size_t
MetaRoceChannel::GetNDevices() const
{
    return m_nDevices;
}

Ptr<NetDevice>
MetaRoceChannel::GetDevice(std::size_t i) const
{
    return GetMetaRoceDevice(i);
}

} // namespace ns3
