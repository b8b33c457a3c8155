/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_CHANNEL_H
#define METAROCE_CHANNEL_H

#include "metaroce-frame.h"

#include "ns3/channel.h"
#include "ns3/data-rate.h"
#include "ns3/error-model.h"
#include "ns3/nstime.h"
#include "ns3/ptr.h"
#include "ns3/traced-callback.h"

#include <array>
#include <cstdint>

/**
 * \file
 * A full-duplex point-to-point link between two MetaRoceNetDevices, with fault injection.
 */

namespace ns3
{

class MetaRoceNetDevice;
class Packet;

/**
 * \ingroup metaroce
 * A full-duplex point-to-point link with a propagation delay.
 *
 * Fault injection lives here, never in the engines:
 *  - one ns3::ErrorModel per direction, applied when a frame arrives (e.g. RateErrorModel with
 *    ERROR_UNIT_PACKET for Bernoulli loss, MetaRoceGilbertElliottErrorModel for bursts);
 *  - SetLinkUp(false) takes both ends down and drops every frame in flight; ScheduleFailure()
 *    does so between two times;
 *  - SetDataRate() / ScheduleDegrade() change the rate of both ends (a degraded link).
 *
 * Direction 0 carries frames sent by device 0 (the first attached) to device 1; direction 1
 * the reverse.
 */
class MetaRoceChannel : public Channel
{
  public:
    /// TracedCallback signature of channel drops: (frame, direction, reason).
    typedef void (*DropTracedCallback)(Ptr<const Packet> frame,
                                       uint32_t direction,
                                       MetaRoceDropReason reason);
    /// TracedCallback signature of link state changes: (up).
    typedef void (*LinkStateTracedCallback)(bool up);

    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceChannel();
    ~MetaRoceChannel() override;

    /**
     * Attach a device (done by MetaRoceNetDevice::Attach).
     * \param device the device
     * \return false if two devices are attached already
     */
    bool Attach(Ptr<MetaRoceNetDevice> device);

    /**
     * Carry a frame from \p source to its peer; it arrives after \p txTime plus the delay.
     * \param frame the frame
     * \param source the sending device
     * \param txTime its serialization time
     */
    virtual void Transmit(Ptr<Packet> frame, Ptr<const MetaRoceNetDevice> source, Time txTime);

    /**
     * Carry a frame with its record (MetaRoceFrameInfo) from \p source to its peer; the record
     * travels with it, so the rewrites it holds need not be in the bytes.
     * \param frame the frame
     * \param source the sending device
     * \param txTime its serialization time
     * \param info its record
     */
    virtual void Transmit(const Ptr<Packet>& frame,
                          const MetaRoceNetDevice* source,
                          Time txTime,
                          MetaRoceFrameInfo& info);

    /**
     * \param device one end
     * \return the other end, or nullptr
     */
    Ptr<MetaRoceNetDevice> GetPeer(Ptr<const MetaRoceNetDevice> device) const;

    /**
     * \param i 0 or 1
     * \return the attached device \p i, or nullptr
     */
    Ptr<MetaRoceNetDevice> GetMetaRoceDevice(std::size_t i) const;

    /**
     * Set the error model of one direction. Aborts when a model (not nullptr) is set after
     * AssignStreams: its draws would come from an unpinned stream.
     * \param direction 0 (device 0 to device 1) or 1
     * \param model the model, or nullptr for none
     */
    void SetErrorModel(uint32_t direction, Ptr<ErrorModel> model);

    /**
     * Set the error model applied to frames sent by \p source.
     * \param source an attached device
     * \param model the model, or nullptr
     */
    void SetErrorModel(Ptr<const MetaRoceNetDevice> source, Ptr<ErrorModel> model);

    /**
     * \param direction 0 or 1
     * \return the error model of that direction, or nullptr
     */
    Ptr<ErrorModel> GetErrorModel(uint32_t direction) const;

    /**
     * Bring the link (both ends) up or down. Going down drops every frame in flight.
     * \param up the new state
     */
    void SetLinkUp(bool up);

    /// \return true if the link is up.
    bool IsLinkUp() const;

    /**
     * Take the link down at \p start and bring it back at \p stop (absolute simulation times).
     * \param start when the link fails
     * \param stop when it recovers; Time::Max() (or a time not after \p start) for never
     */
    void ScheduleFailure(Time start, Time stop);

    /**
     * Set the rate of both ends.
     * \param rate the rate
     */
    void SetDataRate(DataRate rate);

    /**
     * Run the link at \p fraction of its current rate between \p start and \p stop (absolute
     * simulation times); at \p stop the rate it had when this was called comes back.
     * \param fraction the rate factor, in (0, 1]
     * \param start when the degradation starts
     * \param stop when it ends; Time::Max() (or a time not after \p start) for never
     */
    void ScheduleDegrade(double fraction, Time start, Time stop);

    /// \return the propagation delay.
    Time GetDelay() const;

    /**
     * Assign fixed random variable streams to the error models (RateErrorModel, BurstErrorModel
     * and MetaRoceGilbertElliottErrorModel are supported). Set the error models first: setting
     * one afterwards aborts.
     * \param stream first stream index
     * \return the number of streams used
     */
    int64_t AssignStreams(int64_t stream);

    /**
     * \param direction 0 or 1
     * \return frames delivered in that direction
     */
    uint64_t GetDelivered(uint32_t direction) const;

    /**
     * \param direction 0 or 1
     * \return frames dropped in that direction (error model or link down)
     */
    uint64_t GetDropped(uint32_t direction) const;

    // Channel
    std::size_t GetNDevices() const override;
    Ptr<NetDevice> GetDevice(std::size_t i) const override;

  protected:
    void DoDispose() override;

    /**
     * A frame reaches the end of the link (MetaRoceRemoteChannel calls this on the receiving
     * rank).
     * \param frame the frame
     * \param direction its direction
     * \param epoch the link epoch when it was sent
     */
    void Deliver(Ptr<Packet> frame, uint32_t direction, uint64_t epoch);

    /// \return the link epoch (bumped at every link state change).
    uint64_t GetEpoch() const
    {
        return m_epoch;
    }

  private:
    class ArrivalEvent; // the Deliver event of a frame, with prefetches (metaroce-channel.cc)

    /**
     * Schedule the arrival of a frame at the peer of \p source.
     * \param frame the frame
     * \param source the sending device
     * \param txTime its serialization time
     * \param info its record
     */
    void ScheduleArrival(const Ptr<Packet>& frame,
                         const MetaRoceNetDevice* source,
                         Time txTime,
                         const MetaRoceFrameInfo& info);
    /**
     * A frame reaches the end of the link with its record (Deliver without one).
     * \param frame the frame
     * \param direction its direction
     * \param epoch the link epoch when it was sent
     * \param info its record
     */
    void DeliverFrame(const Ptr<Packet>& frame,
                      uint32_t direction,
                      uint64_t epoch,
                      MetaRoceFrameInfo& info);

    /**
     * Abort if \p model is not nullptr and AssignStreams has run.
     * \param model the model about to be set
     */
    void CheckStreamsNotAssigned(Ptr<ErrorModel> model) const;
    /// Attribute setter of ErrorModel0. \param model the model
    void SetErrorModel0(Ptr<ErrorModel> model);
    /// Attribute setter of ErrorModel1. \param model the model
    void SetErrorModel1(Ptr<ErrorModel> model);
    /// Attribute getter of ErrorModel0. \return the model
    Ptr<ErrorModel> GetErrorModel0() const;
    /// Attribute getter of ErrorModel1. \return the model
    Ptr<ErrorModel> GetErrorModel1() const;

    std::array<Ptr<MetaRoceNetDevice>, 2> m_devices; //!< the two ends
    std::size_t m_nDevices{0};                       //!< attached devices
    /// Event context (node id) of each end once known (NO_CONTEXT until its node is set).
    std::array<uint32_t, 2> m_context{NO_CONTEXT, NO_CONTEXT};
    /// MetaRoceScheduler::LinkTag of the arrivals of each direction (0 until first used).
    std::array<uint32_t, 2> m_arrivalTag{0, 0};
    static constexpr uint32_t NO_CONTEXT = 0xffffffff; //!< context not yet known
    Time m_delay;                                      //!< propagation delay
    std::array<Ptr<ErrorModel>, 2> m_errorModels;      //!< per direction
    bool m_up{true};                                   //!< link state
    uint64_t m_epoch{0}; //!< bumped at every state change; frames of older epochs are dropped
    std::array<uint64_t, 2> m_delivered{}; //!< per direction
    std::array<uint64_t, 2> m_dropped{};   //!< per direction
    bool m_streamsAssigned{false};         //!< AssignStreams has run

    TracedCallback<Ptr<const Packet>, uint32_t, MetaRoceDropReason> m_dropTrace; //!< drops
    TracedCallback<bool> m_linkStateTrace; //!< link state changes
};

} // namespace ns3

#endif // METAROCE_CHANNEL_H
