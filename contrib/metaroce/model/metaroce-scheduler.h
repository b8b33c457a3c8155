/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_SCHEDULER_H
#define METAROCE_SCHEDULER_H

#include "ns3/scheduler.h"

#include <cstdint>
#include <vector>

/**
 * \file
 * An ns-3 event scheduler for fabric simulations: a 4-ary implicit heap in one array (no
 * allocation per event, no pointer chasing), with a choice of how events of equal time are
 * ordered.
 */

namespace ns3
{

/**
 * \ingroup metaroce
 * \brief Event scheduler: a 4-ary heap of 32-byte entries in one contiguous array.
 *
 * ns-3's MapScheduler (the default) allocates a red-black tree node per event and walks the
 * tree on every insert; this scheduler keeps the pending events in one vector and moves
 * entries, so an insert allocates nothing once the array has grown and both insert and remove
 * touch a few contiguous cache lines per level of a shallow (4-ary) tree.
 *
 * Events of equal time (TieBreak attribute):
 *  - INSERTION (default): in the order they were scheduled (their ns-3 uid), exactly like
 *    ns-3's own schedulers, so a run gives byte-identical results with either scheduler.
 *  - LINK: events scheduled without a tag first (in insertion order), then frame arrivals in
 *    the order of the link end they arrive on (TagNextEvent). The order of two arrivals at one
 *    instant then depends on the topology, not on when each was scheduled, so a run split over
 *    MPI ranks (where a frame from another rank is scheduled only at the next synchronization)
 *    processes them in the same order as a single process does. Results differ from
 *    INSERTION's in such ties.
 */
class MetaRoceScheduler : public Scheduler
{
  public:
    /// How events of equal time are ordered.
    enum TieBreak
    {
        INSERTION, //!< by insertion (ns-3's order)
        LINK,      //!< untagged first by insertion, then arrivals by link end
    };

    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceScheduler();
    ~MetaRoceScheduler() override;

    void Insert(const Event& ev) override;
    bool IsEmpty() const override;
    Event PeekNext() const override;
    Event RemoveNext() override;
    void Remove(const Event& ev) override;

    /**
     * Tag the next event this thread schedules (MetaRoceChannel: the arrival of a frame). Used
     * by the LINK tie-break, ignored otherwise; the next Insert on this thread consumes it.
     * \param tag the link end, 1 or more (0 = untagged)
     */
    static void TagNextEvent(uint32_t tag);

    /**
     * \return true while a scheduler with the Link tie-break exists in this process (then a
     *         frame from another MPI rank must be re-scheduled as a tagged arrival)
     */
    static bool LinkTieBreakInUse();

    /**
     * \param tieBreak the TieBreak attribute
     */
    void SetTieBreak(TieBreak tieBreak);
    /// \return the TieBreak attribute
    TieBreak GetTieBreak() const;

    /**
     * \param channelId a channel's ns-3 id (Channel::GetId)
     * \param direction 0 (device 0 to device 1) or 1
     * \return the tag of arrivals on that link end
     */
    static uint32_t LinkTag(uint32_t channelId, uint32_t direction);

  private:
    /// One pending event, ordered by (ts, order).
    struct Entry
    {
        uint64_t ts;      //!< time stamp
        uint64_t order;   //!< tie-break: uid (INSERTION) or tag << 32 | uid (LINK)
        EventImpl* impl;  //!< the event
        uint32_t uid;     //!< ns-3 event uid
        uint32_t context; //!< ns-3 event context
    };

    /**
     * \param a an entry
     * \param b another
     * \return true if a runs before b
     */
    static bool Before(const Entry& a, const Entry& b)
    {
        return a.ts < b.ts || (a.ts == b.ts && a.order < b.order);
    }

    /**
     * \param entry an entry
     * \return it as an ns-3 event
     */
    static Event ToEvent(const Entry& entry);

    /**
     * Move the entry at \p hole up until its parent is before it.
     * \param hole its index
     * \param entry the entry (not yet stored)
     */
    void SiftUp(std::size_t hole, const Entry& entry);
    /**
     * Move the entry down from \p hole until its children are after it.
     * \param hole its index
     * \param entry the entry (not yet stored)
     */
    void SiftDown(std::size_t hole, const Entry& entry);

    std::vector<Entry> m_heap; //!< the 4-ary heap; root at 0, children of i at 4i+1..4i+4
    TieBreak m_tieBreak{INSERTION}; //!< TieBreak attribute
};

} // namespace ns3

#endif // METAROCE_SCHEDULER_H
