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
 *
 * A slot holds a plain pointer that owns one reference to its packet: Push takes one, Pop
 * hands it to the returned Entry. ns-3's Ptr (3.37) has no move operations, so a Ptr in the
 * slot would cost a reference count increment and a decrement per move in and out.
 */
class MetaRocePacketFifo
{
  public:
    /// One frame taken from the FIFO.
    struct Entry
    {
        Ptr<Packet> packet;     //!< the frame
        uint32_t cookie{0};     //!< owner metadata (a switch stores the ingress port here)
        MetaRoceFrameInfo info; //!< its record (not valid for frames from outside the model)
    };

    /// One queued frame.
    struct Slot
    {
        Packet* packet{nullptr}; //!< the frame; owns one reference
        uint32_t cookie{0};      //!< owner metadata
        MetaRoceFrameInfo info;  //!< its record
    };

    MetaRocePacketFifo() = default;
    MetaRocePacketFifo(const MetaRocePacketFifo&) = delete;
    MetaRocePacketFifo& operator=(const MetaRocePacketFifo&) = delete;

    ~MetaRocePacketFifo()
    {
        Clear();
    }

    /// Drop every frame and release the storage.
    void Clear()
    {
        while (!IsEmpty())
        {
            Pop();
        }
        std::vector<Slot>().swap(m_slots);
        m_head = 0;
    }

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
     * \param packet the frame (not null)
     * \param cookie owner metadata returned by Pop()
     * \param info the frame's record
     */
    void Push(const Ptr<Packet>& packet, uint32_t cookie, const MetaRoceFrameInfo& info = {})
    {
        if (m_size == m_slots.size())
        {
            Grow();
        }
        Slot& slot = m_slots[(m_head + m_size) & (m_slots.size() - 1)];
        slot.packet = PeekPointer(packet);
        slot.packet->Ref();
        slot.cookie = cookie;
        slot.info = info;
        ++m_size;
    }

    /// \return the oldest slot. The FIFO must not be empty.
    const Slot& Front() const
    {
        return m_slots[m_head];
    }

    /// Remove and return the oldest entry. The FIFO must not be empty.
    Entry Pop()
    {
        Slot& slot = m_slots[m_head];
        Packet* packet = slot.packet;
        slot.packet = nullptr;
        m_head = (m_head + 1) & (m_slots.size() - 1);
        --m_size;
        // The slot's reference passes to the entry (Ptr(p, false) takes it over).
        return Entry{Ptr<Packet>(packet, false), slot.cookie, slot.info};
    }

  private:
    /// Double the capacity (at least 4 slots), keeping the order.
    void Grow()
    {
        const size_t capacity = m_slots.empty() ? 4 : m_slots.size() * 2;
        std::vector<Slot> slots(capacity);
        for (uint32_t i = 0; i < m_size; ++i)
        {
            slots[i] = m_slots[(m_head + i) & (m_slots.size() - 1)];
        }
        m_slots.swap(slots);
        m_head = 0;
    }

    std::vector<Slot> m_slots; //!< ring storage; size is zero or a power of two
    uint32_t m_head{0};        //!< index of the oldest entry
    uint32_t m_size{0};        //!< number of entries
};

} // namespace ns3

#endif // METAROCE_PACKET_FIFO_H
