/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_REMOTE_CHANNEL_H
#define METAROCE_REMOTE_CHANNEL_H

#include "metaroce-channel.h"

#include "ns3/tag.h"

#include <cstdint>

/**
 * \file
 * A MetaRoceChannel whose two ends are simulated by different MPI ranks (built only when the
 * module is compiled against an ns-3 with the mpi module: METAROCE_HAVE_MPI).
 */

namespace ns3
{

/**
 * \ingroup metaroce
 * What a frame carries across ranks besides its bytes: the link epoch at send time (so a frame
 * in flight when the link went down is dropped exactly as on one rank) and its direction.
 * Added by the sending rank, removed by the receiving rank; never seen by devices.
 */
class MetaRoceRemoteTag : public Tag
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(TagBuffer buffer) const override;
    void Deserialize(TagBuffer buffer) override;
    void Print(std::ostream& os) const override;

    uint64_t epoch{0};    //!< the channel epoch when the frame was sent
    uint8_t direction{0}; //!< 0 (device 0 to device 1) or 1
};

/**
 * \ingroup metaroce
 * A MetaRoceChannel across two MPI ranks, after ns-3's PointToPointRemoteChannel.
 *
 * Every rank builds the whole topology; a node is simulated by the rank equal to its system id.
 * A frame sent towards a device on another rank goes through MpiInterface::SendPacket with its
 * arrival time (now + serialization + Delay); the link Delay is the lookahead that ns-3's
 * DistributedSimulatorImpl takes from the channel's "Delay" attribute, so it must be positive.
 * On the receiving rank ns-3 finds the device by node id and interface index and calls the
 * device's aggregated MpiReceiver, which hands the frame to this channel's copy there: the
 * error model of that direction, the link state and the epoch are applied as
 * MetaRoceChannel::Deliver does on one rank, so the random draws happen in the same order.
 *
 * The whole ns3::Packet crosses (ns-3's Packet::Serialize: buffer with its zero-filled area
 * as a length only, header/trailer metadata, packet and byte tags). ns-3.37 receives at most
 * 2000 bytes per message (MAX_MPI_MSG_SIZE), so a frame whose serialized form exceeds 1984
 * bytes aborts with a message; frames of virtual memory regions (payload as a zero area) are
 * about 100 bytes whatever their length.
 */
class MetaRoceRemoteChannel : public MetaRoceChannel
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceRemoteChannel();
    ~MetaRoceRemoteChannel() override;

    void Transmit(Ptr<Packet> frame, Ptr<const MetaRoceNetDevice> source, Time txTime) override;

    /**
     * Write the frame's pending rewrites (a frame may leave for another rank as bytes), then
     * carry it as the overload without a record does.
     * \param frame the frame
     * \param source the sending device
     * \param txTime its serialization time
     * \param info its record
     */
    void Transmit(const Ptr<Packet>& frame,
                  const MetaRoceNetDevice* source,
                  Time txTime,
                  MetaRoceFrameInfo& info) override;

    /**
     * Aggregate an MpiReceiver to each attached device and point it at this channel (done by
     * MetaRoceConnectRemote once both devices are attached to their nodes).
     */
    void ConnectReceivers();

    /// \return frames this rank sent across MPI on this link.
    uint64_t GetRemoteSent() const;

  private:
    /**
     * A frame from the other rank arrives (the MpiReceiver callback).
     * \param frame the frame with its MetaRoceRemoteTag
     */
    void ReceiveRemote(Ptr<Packet> frame);

    uint64_t m_remoteSent{0}; //!< frames sent across MPI
};

} // namespace ns3

#endif // METAROCE_REMOTE_CHANNEL_H
