/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_PORT_OWNER_H
#define METAROCE_PORT_OWNER_H

#include "metaroce-frame.h"

#include "ns3/ptr.h"

#include <cstdint>

/**
 * \file
 * The calls a MetaRoceNetDevice makes on the NIC or switch whose port it is.
 */

namespace ns3
{

class MetaRoceNetDevice;
class Packet;

/**
 * \ingroup metaroce
 * The owner of MetaRoceNetDevice ports (MetaRoceNic, MetaRoceSwitch): what a port calls on it
 * per frame once MetaRoceNetDevice::SetPortOwner made it port \c index of the owner.
 *
 * A port reaches its owner through one pointer to this interface instead of the frame
 * receive, pull and dequeue callbacks (a Callback costs several dependent loads per frame; a
 * virtual call, one load more than a direct call). The owner's feed mode, fixed when it is
 * constructed, says which calls it takes besides ReceiveFromPort:
 *  - PULL (hosts): the idle transmitter asks PullForPort for the next frame;
 *  - PUSH (switches): the owner queues frames with MetaRoceNetDevice::Enqueue and learns from
 *    DequeuedFromPort when one leaves its queue.
 * A port never makes the call of the other mode.
 */
class MetaRocePortOwner
{
  public:
    /// How the owner feeds its ports' transmitters.
    enum FeedMode
    {
        PULL, //!< the port pulls frames (PullForPort)
        PUSH, //!< the owner enqueues frames (DequeuedFromPort)
    };

    /**
     * \param mode how the owner feeds its ports
     */
    explicit MetaRocePortOwner(FeedMode mode)
        : m_feedMode(mode)
    {
    }

    virtual ~MetaRocePortOwner() = default;

    /// \return how the owner feeds its ports.
    FeedMode GetFeedMode() const
    {
        return m_feedMode;
    }

    /**
     * A port received a frame that is not a MAC control frame (those stay in the port).
     * \param port the port index on this owner
     * \param device the port
     * \param frame the frame, Ethernet header included
     * \param info its record (not valid when the frame came without one); the owner may add
     *        rewrites to it
     */
    virtual void ReceiveFromPort(uint32_t port,
                                 MetaRoceNetDevice* device,
                                 Ptr<Packet> frame,
                                 MetaRoceFrameInfo& info) = 0;

    /**
     * PULL owners: the port's transmitter is idle with nothing queued. The default has
     * nothing to send.
     * \param port the port index on this owner
     * \param[out] info the record of the frame returned (may be left not valid)
     * \return the next frame for the port, or nullptr when there is none
     */
    virtual Ptr<Packet> PullForPort([[maybe_unused]] uint32_t port,
                                    [[maybe_unused]] MetaRoceFrameInfo& info)
    {
        return nullptr;
    }

    /**
     * PUSH owners: a frame given to MetaRoceNetDevice::Enqueue left its queue, to start
     * transmission or because the link went down. The default ignores it.
     * \param device the port
     * \param frame the frame (the rewrites of its record not written)
     * \param priority its queue
     * \param cookie the cookie it was enqueued with
     */
    virtual void DequeuedFromPort([[maybe_unused]] MetaRoceNetDevice* device,
                                  [[maybe_unused]] Ptr<const Packet> frame,
                                  [[maybe_unused]] uint8_t priority,
                                  [[maybe_unused]] uint32_t cookie)
    {
    }

  private:
    FeedMode m_feedMode; //!< how the owner feeds its ports
};

} // namespace ns3

#endif // METAROCE_PORT_OWNER_H
