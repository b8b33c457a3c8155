/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_PACKET_FIFO_H
#define METAROCE_PACKET_FIFO_H

#include "metaroce-frame.h"

#include "ns3/packet.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <utility>
#include <vector>

/**
 * \file
 * A growable ring buffer of packets for device egress queues.
 */

namespace ns3
{

/**
 * \ingroup metaroce
 * A FIFO of packets with a per-entry owner cookie, stored in a ring that grows by doubling and
 * never shrinks. Unlike std::deque it allocates nothing while empty (a fabric has thousands of
 * ports with eight queues each) and nothing per packet once warmed up.
 */
class MetaRocePacketFifo
{
  public:
    /// One queued frame.
    struct Entry
    {
        Ptr<Packet> packet;     //!< the frame
        uint32_t cookie{0};     //!< owner metadata (a switch stores the ingress port here)
        MetaRoceFrameInfo info; //!< its record (not valid for frames from outside the model)
    };

    /// \return true if the FIFO holds no frame.
    bool IsEmpty() const
    {
        return m_size == 0;
    }

    /// \return the number of queued frames.
    uint32_t GetSize() const
    {
        return m_size;
    }

    /**
     * Append a frame.
     * \param packet the frame
     * \param cookie owner metadata returned by Pop()
     * \param info the frame's record
     */
    void Push(Ptr<Packet> packet, uint32_t cookie, const MetaRoceFrameInfo& info = {})
    {
        if (m_size == m_slots.size())
        {
            Grow();
        }
        Entry& slot = m_slots[(m_head + m_size) & (m_slots.size() - 1)];
        slot.packet = std::move(packet);
        slot.cookie = cookie;
        slot.info = info;
        ++m_size;
    }

    /// \return the oldest entry. The FIFO must not be empty.
    const Entry& Front() const
    {
        return m_slots[m_head];
    }

    /// Remove and return the oldest entry. The FIFO must not be empty.
    Entry Pop()
    {
        Entry out = std::move(m_slots[m_head]);
        m_slots[m_head].packet = nullptr;
        m_head = (m_head + 1) & (m_slots.size() - 1);
        --m_size;
        return out;
    }

  private:
    /// Double the capacity (at least 4 slots), keeping the order.
    void Grow()
    {
        const size_t capacity = m_slots.empty() ? 4 : m_slots.size() * 2;
        std::vector<Entry> slots(capacity);
        for (uint32_t i = 0; i < m_size; ++i)
        {
            slots[i] = std::move(m_slots[(m_head + i) & (m_slots.size() - 1)]);
        }
        m_slots.swap(slots);
        m_head = 0;
    }

    std::vector<Entry> m_slots; //!< ring storage; size is zero or a power of two
    uint32_t m_head{0};         //!< index of the oldest entry
    uint32_t m_size{0};         //!< number of entries
};

} // namespace ns3

#endif // METAROCE_PACKET_FIFO_H
