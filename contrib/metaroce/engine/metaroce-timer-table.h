/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TIMER_TABLE_H
#define METAROCE_TIMER_TABLE_H

#include "metaroce-time.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

/**
 * \file
 * The deadlines of one connection role, as named slots in one table with the earliest kept.
 */

namespace metaroce
{

/// The requester's per-path timers.
enum class RequesterPathTimer : uint8_t
{
    RTO,   //!< retransmission timeout
    LOSS,  //!< time-based loss detection looks at the path again
    PROBE, //!< the next probe of a FAILED path (armed only while the path is FAILED)
    COUNT, //!< (number of slots)
};

/// The requester's per-connection timers.
enum class RequesterTimer : uint8_t
{
    TAIL_PROBE, //!< tail-loss probe
    RNR,        //!< the earliest stream in an RNR wait may ask again
    CONNECTION, //!< no progress for connectionTimeout with work outstanding
    COUNT,      //!< (number of slots)
};

/// The responder's per-path timers.
enum class ResponderPathTimer : uint8_t
{
    ACK,   //!< delayed ACK of the path (ackPolicy "per-path")
    COUNT, //!< (number of slots)
};

/// The responder's per-connection timers.
enum class ResponderTimer : uint8_t
{
    ACK,   //!< delayed coalesced ACK (ackPolicy "coalesced")
    COUNT, //!< (number of slots)
};

/**
 * \brief Named deadlines per path and per connection, with the earliest one kept.
 *
 * The endpoint asks a connection for its next deadline after every packet it handles, so
 * that question must not cost a pass over every path. The table keeps, next to its slots, the
 * earliest deadline and the slot holding it:
 * - a Set() at or before the earliest makes that slot the holder, in O(1);
 * - a Set() of another slot to a later time changes nothing else;
 * - only when the holder itself moves later (re-armed or cleared) is the minimum stale; the
 *   next Earliest() then finds it again in one pass over the slots.
 * While stale, the kept value is a lower bound of the true minimum, so a Set() below it is
 * the new minimum at once. Path timers that are re-armed on every ACK (RTO, LOSS) rarely hold
 * the minimum when they move: the earliest is usually the path acknowledged longest ago.
 *
 * An unarmed slot holds TIME_INFINITE. \p PathSlot and \p ConnectionSlot are enums whose last
 * enumerator COUNT is the number of slots. The table is a plain container: which slots count
 * and when (for example PROBE only on a FAILED path) is the owner's invariant to keep.
 */
template <typename PathSlot, typename ConnectionSlot>
class TimerTable
{
  public:
    /// A table for \p numPaths paths, every slot unarmed.
    explicit TimerTable(uint32_t numPaths)
        : m_slots(CONNECTION_SLOTS + size_t(numPaths) * PATH_SLOTS, TIME_INFINITE)
    {
    }

    /**
     * Give the table slots for \p numPaths paths (not fewer than it has), new ones unarmed; the
     * connection slots and the paths' slots already there keep their deadlines. An owner that
     * creates its per-path state on first use (a connection that never sends holds no per-path
     * timers) starts with a table for 0 paths and calls this then.
     */
    void SetPathCount(uint32_t numPaths)
    {
        m_slots.resize(CONNECTION_SLOTS + size_t(numPaths) * PATH_SLOTS, TIME_INFINITE);
    }

    /// \return the deadline of \p slot of path \p path (TIME_INFINITE: unarmed).
    Time Get(uint32_t path, PathSlot slot) const
    {
        return m_slots[Index(path, slot)];
    }

    /// \return the deadline of connection slot \p slot (TIME_INFINITE: unarmed).
    Time Get(ConnectionSlot slot) const
    {
        return m_slots[Index(slot)];
    }

    /// \return true if \p slot of path \p path is armed.
    bool Armed(uint32_t path, PathSlot slot) const
    {
        return Get(path, slot) != TIME_INFINITE;
    }

    /// \return true if connection slot \p slot is armed.
    bool Armed(ConnectionSlot slot) const
    {
        return Get(slot) != TIME_INFINITE;
    }

    /// Arm \p slot of path \p path for \p at (TIME_INFINITE disarms it).
    void Set(uint32_t path, PathSlot slot, Time at)
    {
        Store(Index(path, slot), at);
    }

    /// Arm connection slot \p slot for \p at (TIME_INFINITE disarms it).
    void Set(ConnectionSlot slot, Time at)
    {
        Store(Index(slot), at);
    }

    /// Disarm \p slot of path \p path.
    void Clear(uint32_t path, PathSlot slot)
    {
        Store(Index(path, slot), TIME_INFINITE);
    }

    /// Disarm connection slot \p slot.
    void Clear(ConnectionSlot slot)
    {
        Store(Index(slot), TIME_INFINITE);
    }

    /// Disarm every slot.
    void ClearAll()
    {
        std::fill(m_slots.begin(), m_slots.end(), TIME_INFINITE);
        m_earliest = TIME_INFINITE;
        m_holder = 0;
        m_stale = false;
    }

    /// \return the earliest deadline of any slot (TIME_INFINITE: none is armed).
    Time Earliest() const
    {
        if (m_stale)
        {
            Recompute();
        }
        return m_earliest;
    }

    /// \return the heap memory the table holds, in bytes.
    size_t HeapBytes() const
    {
        return m_slots.capacity() * sizeof(Time);
    }

  private:
    static constexpr size_t PATH_SLOTS = size_t(PathSlot::COUNT);             //!< per path
    static constexpr size_t CONNECTION_SLOTS = size_t(ConnectionSlot::COUNT); //!< per table

    /// \return the index of \p slot of path \p path.
    static size_t Index(uint32_t path, PathSlot slot)
    {
        return CONNECTION_SLOTS + size_t(path) * PATH_SLOTS + size_t(slot);
    }

    /// \return the index of connection slot \p slot.
    static size_t Index(ConnectionSlot slot)
    {
        return size_t(slot);
    }

    /// Write \p at to slot \p i and keep the earliest deadline.
    void Store(size_t i, Time at)
    {
        m_slots[i] = at;
        if (at <= m_earliest)
        {
            // At or before the minimum (or, when stale, before a lower bound of it).
            m_earliest = at;
            m_holder = uint32_t(i);
            m_stale = false;
        }
        else if (i == m_holder)
        {
            m_stale = true; // the minimum moved later; found again when asked
        }
    }

    /// Find the earliest deadline again (one pass).
    void Recompute() const
    {
        m_earliest = TIME_INFINITE;
        m_holder = 0;
        for (size_t i = 0; i < m_slots.size(); ++i)
        {
            if (m_slots[i] < m_earliest)
            {
                m_earliest = m_slots[i];
                m_holder = uint32_t(i);
            }
        }
        m_stale = false;
    }

    std::vector<Time> m_slots;              //!< connection slots, then each path's slots
    mutable Time m_earliest{TIME_INFINITE}; //!< earliest deadline (a lower bound when stale)
    mutable uint32_t m_holder{0};           //!< slot holding m_earliest
    mutable bool m_stale{false};            //!< m_holder moved later since m_earliest was found
};

/// The requester's timers.
using RequesterTimers = TimerTable<RequesterPathTimer, RequesterTimer>;
/// The responder's timers.
using ResponderTimers = TimerTable<ResponderPathTimer, ResponderTimer>;

} // namespace metaroce

#endif // METAROCE_TIMER_TABLE_H
