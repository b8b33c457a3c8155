/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_SCHEDULER_H
#define METAROCE_SCHEDULER_H

#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/scheduler.h"

#include <cstddef>
#include <cstdint>
#include <vector>

/**
 * \file
 * An ns-3 event scheduler for fabric simulations: near-future events in a ring of small time
 * buckets, later ones in a 4-ary heap, with a choice of how events of equal time are ordered.
 */

namespace ns3
{

/**
 * \ingroup metaroce
 * \brief An event that can start loading, ahead of time, the memory it will touch.
 *
 * On a large fabric an event runs tens of thousands of events after it was scheduled, when
 * its data (the frame, the device it arrives at) has left the caches. For an event announced
 * with MetaRoceScheduler::AnnounceNextEvent, MetaRoceScheduler calls Prefetch() when it hands
 * out the event before it, if both are in the same time bucket (not for the first event of a
 * bucket, nor for events taken from the far heap, nor with BucketWidth 0). Other schedulers
 * never call it.
 *
 * The fabric makes one or two of these per frame and hop (a link arrival, an end of
 * serialization), so they are allocated from per-thread free lists of blocks of a few sizes
 * instead of by malloc and free; see MetaRoceEventPool.
 */
class MetaRocePrefetchEvent : public EventImpl
{
  public:
    /// Issue prefetches of what Notify() will read; must have no other effect.
    virtual void Prefetch() const = 0;

    /**
     * \param size the object size
     *
eturn a block of at least \p size bytes (MetaRoceEventPool::Allocate)
     */
    static void* operator new(std::size_t size);
    /**
     * \param block a block from operator new
     * \param size the size of the object that was in it (EventImpl's destructor is virtual,
     *        so this is the size of the derived class)
     */
    static void operator delete(void* block, std::size_t size);
};

/**
 * \ingroup metaroce
 * Free lists of memory blocks for events, per thread: one list per size class of 32 bytes up
 * to MAX_SIZE, larger blocks from ::operator new. A released block goes back to the list of
 * the thread that releases it; the lists keep what they hold (as many blocks as were alive at
 * once) until the thread ends.
 */
class MetaRoceEventPool
{
  public:
    /// Bytes between size classes.
    static constexpr std::size_t GRANULE = 32;
    /// The largest pooled size.
    static constexpr std::size_t MAX_SIZE = 256;

    /**
     * \param size bytes
     *
eturn a block of at least \p size bytes, aligned for any object of that size
     */
    static void* Allocate(std::size_t size);
    /**
     * \param block a block from Allocate
     * \param size the size it was allocated with
     */
    static void Release(void* block, std::size_t size);
};

/**
 * Prefetch every cache line of \p bytes bytes at \p address (nothing if it is null); no other
 * effect, so a stale address is harmless.
 * \param address the first byte
 * \param bytes how many bytes
 */
inline void
MetaRocePrefetchBytes(const void* address, std::size_t bytes)
{
    if (address == nullptr)
    {
        return;
    }
    constexpr uintptr_t LINE = 64;
    const uintptr_t start = reinterpret_cast<uintptr_t>(address);
    for (uintptr_t line = start & ~(LINE - 1); line < start + bytes; line += LINE)
    {
        __builtin_prefetch(reinterpret_cast<const void*>(line));
    }
}

/**
 * \ingroup metaroce
 * \brief Event scheduler: a ring of time buckets for the near future, a 4-ary heap beyond.
 *
 * ns-3's MapScheduler (the default) allocates a red-black tree node per event and walks the
 * tree on every insert. A packet network schedules almost every event a serialization time or
 * a link delay ahead, so this scheduler keeps the events of the next Buckets x BucketWidth
 * (1,024 x 16 ns by default) in a ring of buckets: an insert appends to its bucket, and a
 * bucket is sorted once, when it becomes the earliest non-empty one (by counting on the
 * events' time offsets within the bucket, then by order among equal times), and then popped
 * from its end; an event inserted into that bucket afterwards goes to its end if it runs first,
 * else to a small heap of late arrivals popped alongside it. Later events (timers) wait in a 4-ary
 * heap in one array and move into the ring as it slides. Nothing is allocated per event once the
 * vectors have grown. BucketWidth 0 keeps all events in the heap. The order is the same total order
 * either way.
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
     * Announce the event this thread schedules next: when it is inserted (and only if the
     * inserted event is this one), the scheduler calls its Prefetch() while the event before
     * it runs. Harmless with other schedulers.
     * \param event the event about to be scheduled
     */
    static void AnnounceNextEvent(const MetaRocePrefetchEvent* event);

    /**
     * Reserve the place among events of equal time that an event scheduled now would take, for
     * an event that may be scheduled later (UseReservedOrder) or never: MetaRoceNetDevice does
     * not schedule the end of serialization of an idle switch port unless a frame arrives
     * before it, and then schedules it in that place, so the order of events (and results) is
     * the same as if it had been scheduled at once.
     * \return the reservation, or 0 if the scheduler in use cannot honour one (not a
     *         MetaRoceScheduler, or the Link tie-break)
     */
    static uint64_t ReserveOrder();

    /**
     * The next event this thread schedules takes the place \p reservation (ReserveOrder).
     * \param reservation the reservation
     */
    static void UseReservedOrder(uint64_t reservation);

    /**
     * \param ts a time, in time steps
     * \param reservation a reservation (ReserveOrder)
     * \return true if an event of that time and place would have run already (it sorts before
     *         the event running now)
     */
    static bool HasPassed(uint64_t ts, uint64_t reservation);

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
        uint64_t order;   //!< tie-break: uid << 16 | reservation (INSERTION), tag << 32 | uid
                          //!< (LINK)
        uintptr_t impl;   //!< the event's EventImpl*, bit 0 set for an announced event
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
     * The order of m_late (std heap functions keep the "largest" first).
     * \param a an entry
     * \param b another
     * \return true if a runs after b
     */
    static bool LateBefore(const Entry& a, const Entry& b);

    /**
     * \param current the current bucket (sorted)
     * \return true if the earliest near event is the first of m_late
     */
    bool NextIsLate(const std::vector<Entry>& current) const
    {
        return !m_late.empty() && (current.empty() || Before(m_late.front(), current.back()));
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
    void SiftUp(std::size_t hole, const Entry& entry) const;
    /**
     * Move the entry down from \p hole until its children are after it.
     * \param hole its index
     * \param entry the entry (not yet stored)
     */
    void SiftDown(std::size_t hole, const Entry& entry) const;

    /**
     * Make the current bucket hold the earliest near event, sorted (min at the back), moving
     * events of the far heap into the buckets as the window slides.
     * \return false if no event is pending
     */
    bool Settle() const;
    /**
     * Move far-heap events that the window now covers into their buckets.
     */
    void PullFar() const;
    /// Size the ring from BucketWidth and Buckets (at the first insert).
    void SetUpBuckets();
    /**
     * \param entry an event of the window
     */
    void PutNear(const Entry& entry) const;
    /**
     * Sort the bucket that has become the current one, latest event first (by Before).
     * \param bucket the bucket at m_current
     */
    void SortBucket(std::vector<Entry>& bucket) const;

    /// Buckets with fewer entries are sorted by comparisons only (SortBucket).
    static constexpr std::size_t RADIX_MIN_ENTRIES = 32;
    /// Bits of time per counting pass of SortBucket (two passes at most).
    static constexpr uint32_t RADIX_BITS = 8;
    /**
     * Take an entry out of its bucket, keeping the counts and the occupancy bits.
     * \param slot the bucket's slot
     * \param it the entry
     */
    void TakeFromBucket(uint64_t slot, std::vector<Entry>::iterator it);
    /// \return the earliest far-heap entry, removed
    Entry PopFar() const;

    /// A bucket that empties with more room than this (entries) releases its memory.
    static constexpr std::size_t KEPT_BUCKET_CAPACITY = 256;

    // Buckets (BucketWidth > 0): events earlier than m_windowEnd are in a ring of buckets of
    // 2^m_shift time steps each, m_heap holds the later ones. The current bucket is sorted
    // (earliest at the back) once it is the earliest non-empty one; the others are unsorted.
    // Mutable: PeekNext (const) settles the buckets.
    Time m_bucketWidth;                                //!< BucketWidth attribute
    uint32_t m_bucketCount{1024};                      //!< Buckets attribute (a power of two)
    mutable bool m_bucketsReady{false};                //!< m_shift and m_buckets are set up
    mutable uint32_t m_shift{0};                       //!< log2 of the bucket width in time steps
    mutable std::vector<std::vector<Entry>> m_buckets; //!< the ring
    mutable std::vector<uint64_t> m_occupied;          //!< bit per bucket: not empty
    mutable uint64_t m_current{0};                     //!< absolute number of the current bucket
    mutable bool m_currentSorted{false};               //!< the current bucket is sorted
    /// Events of the current bucket inserted after it was sorted and not before its earliest:
    /// a min-heap (LateBefore), so that such an insert moves no entries of the bucket.
    mutable std::vector<Entry> m_late;
    mutable std::vector<Entry> m_sortScratch; //!< SortBucket's second array (swapped in)
    mutable uint64_t m_nearCount{0};          //!< events in the buckets
    mutable std::vector<Entry> m_heap; //!< 4-ary heap; root at 0, children of i at 4i+1..4i+4
    TieBreak m_tieBreak{INSERTION};    //!< TieBreak attribute
};

} // namespace ns3

#endif // METAROCE_SCHEDULER_H
