/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-scheduler.h"

#include "metaroce-ns3-compat.h"

#include "ns3/abort.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <atomic>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceScheduler");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceScheduler);

namespace
{
/// Bit 0 of Entry::impl: the event is a MetaRocePrefetchEvent.
constexpr uintptr_t PREFETCH_BIT = 1;
static_assert(alignof(EventImpl) > 1, "bit 0 of an EventImpl* must be free");

/**
 * What the static members share with Insert and RemoveNext, per thread, in one object: in a
 * shared library a thread_local variable of the default (global-dynamic) model costs a call
 * of __tls_get_addr per variable that a function touches, and the per-event functions touch
 * several.
 */
struct ThreadState
{
    /// A free block of MetaRoceEventPool: the link to the next one is kept in it.
    struct FreeBlock
    {
        FreeBlock* next; //!< the next free block of the same size class
    };

    /// Reset what the scheduler keeps (the pool stays).
    void ResetOrdering(const MetaRoceScheduler* scheduler)
    {
        nextTag = 0;
        announced = nullptr;
        active = scheduler;
        lastOrder = 0;
        reservations = 0;
        useOrder = 0;
        runningTs = 0;
        runningOrder = 0;
    }

    uint32_t nextTag{0};                      //!< tag of the next event inserted (0 = none)
    const EventImpl* announced{nullptr};      //!< announced (AnnounceNextEvent), not inserted
    const MetaRoceScheduler* active{nullptr}; //!< the scheduler inserted into (the last made)
    uint64_t lastOrder{0};                    //!< order of the last insert without reservation
    uint64_t reservations{0};                 //!< reservations made since that insert
    uint64_t useOrder{0};                     //!< the reservation the next insert takes (0 = none)
    uint64_t runningTs{0};                    //!< time of the event handed out last (running)
    uint64_t runningOrder{0};                 //!< its order
    /// MetaRoceEventPool's free lists, by size class
    FreeBlock* freeBlocks[MetaRoceEventPool::MAX_SIZE / MetaRoceEventPool::GRANULE]{};
    bool poolClosed{false}; //!< the thread is ending: the free lists are gone
};

/// This thread's ThreadState. The initial-exec model makes each access one load relative to
/// the thread pointer instead of a call; a library loaded with dlopen takes its 144 bytes
/// from the static TLS space that glibc keeps for such libraries.
#if defined(__GNUC__) && defined(__ELF__)
__attribute__((tls_model("initial-exec")))
#endif
thread_local ThreadState g_thread;

/**
 * Returns this thread's pooled blocks when the thread ends. Apart from g_thread, which must
 * stay trivially destructible: a thread_local object with a destructor is reached through a
 * wrapper and a guard variable of the default TLS model, a __tls_get_addr call per access.
 * Only the pool's slow path (a list was empty) touches this object, which registers its
 * destructor on first use.
 */
struct PoolReaper
{
    bool armed{false}; //!< the destructor is registered

    ~PoolReaper()
    {
        ThreadState& t = g_thread;
        for (ThreadState::FreeBlock*& head : t.freeBlocks)
        {
            while (head != nullptr)
            {
                ThreadState::FreeBlock* block = head;
                head = block->next;
                ::operator delete(block);
            }
        }
        t.poolClosed = true;
    }
};

/// This thread's PoolReaper.
thread_local PoolReaper g_poolReaper;
/// Bits of the INSERTION order below the uid: room for reservations between two inserts.
constexpr uint32_t RESERVATION_BITS = 16;
/// Schedulers with the Link tie-break that exist.
std::atomic<uint32_t> g_linkSchedulers{0};
/// Children per heap node.
constexpr std::size_t ARITY = 4;
} // namespace

void*
MetaRoceEventPool::Allocate(std::size_t size)
{
    ThreadState& t = g_thread;
    if (size == 0 || size > MAX_SIZE || t.poolClosed)
    {
        return ::operator new(size);
    }
    ThreadState::FreeBlock*& head = t.freeBlocks[(size - 1) / GRANULE];
    if (head == nullptr)
    {
        g_poolReaper.armed = true;
        return ::operator new((size + GRANULE - 1) / GRANULE * GRANULE);
    }
    ThreadState::FreeBlock* block = head;
    head = block->next;
    return block;
}

void
MetaRoceEventPool::Release(void* block, std::size_t size)
{
    ThreadState& t = g_thread;
    if (size == 0 || size > MAX_SIZE || t.poolClosed)
    {
        ::operator delete(block);
        return;
    }
    auto* free = static_cast<ThreadState::FreeBlock*>(block);
    ThreadState::FreeBlock*& head = t.freeBlocks[(size - 1) / GRANULE];
    free->next = head;
    head = free;
}

void*
MetaRocePrefetchEvent::operator new(std::size_t size)
{
    return MetaRoceEventPool::Allocate(size);
}

void
MetaRocePrefetchEvent::operator delete(void* block, std::size_t size)
{
    MetaRoceEventPool::Release(block, size);
}

bool
MetaRoceScheduler::LateBefore(const Entry& a, const Entry& b)
{
    return Before(b, a); // std::push_heap keeps the largest first: this puts the earliest first
}

TypeId
MetaRoceScheduler::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::MetaRoceScheduler")
            .SetParent<Scheduler>()
            .SetGroupName("MetaRoce")
            .AddConstructor<MetaRoceScheduler>()
            .AddAttribute("TieBreak",
                          "Order of events of equal time: Insertion (ns-3's order: by uid) or "
                          "Link (untagged events by uid, then frame arrivals by link end; the "
                          "same order on any number of MPI ranks).",
                          EnumValue(INSERTION),
                          MetaRoceMakeEnumAccessor<TieBreak>(&MetaRoceScheduler::SetTieBreak,
                                                             &MetaRoceScheduler::GetTieBreak),
                          MakeEnumChecker(INSERTION, "Insertion", LINK, "Link"))
            .AddAttribute("BucketWidth",
                          "Width of the buckets that hold the near-future events (rounded down "
                          "to a power of two of time steps); 0 keeps every event in the heap. "
                          "Read at the first insert.",
                          TimeValue(NanoSeconds(16)),
                          MakeTimeAccessor(&MetaRoceScheduler::m_bucketWidth),
                          MakeTimeChecker(Time(0)))
            .AddAttribute("Buckets",
                          "Number of buckets (a power of two, at least 64): the buckets cover "
                          "Buckets x BucketWidth ahead of the earliest event; later events wait "
                          "in the heap. Read at the first insert.",
                          UintegerValue(1024),
                          MakeUintegerAccessor(&MetaRoceScheduler::m_bucketCount),
                          MakeUintegerChecker<uint32_t>(64, 1U << 20));
    return tid;
}

MetaRoceScheduler::MetaRoceScheduler()
{
    NS_LOG_FUNCTION(this);
    // An announcement left over from a simulation run with another scheduler must not match a
    // new event that reuses its address.
    g_thread.ResetOrdering(this);
}

MetaRoceScheduler::~MetaRoceScheduler()
{
    NS_LOG_FUNCTION(this);
    SetTieBreak(INSERTION);
    ThreadState& t = g_thread;
    if (t.active == this)
    {
        t.active = nullptr;
    }
}

uint64_t
MetaRoceScheduler::ReserveOrder()
{
    ThreadState& t = g_thread;
    if (t.active == nullptr || t.active->m_tieBreak != INSERTION ||
        t.reservations + 1 >= (uint64_t(1) << RESERVATION_BITS))
    {
        return 0;
    }
    // After every event inserted so far (orders up to lastOrder), before every later one
    // (uid << 16 with a larger uid), after the earlier reservations.
    return t.lastOrder | ++t.reservations;
}

void
MetaRoceScheduler::UseReservedOrder(uint64_t reservation)
{
    g_thread.useOrder = reservation;
}

bool
MetaRoceScheduler::HasPassed(uint64_t ts, uint64_t reservation)
{
    const ThreadState& t = g_thread;
    return ts < t.runningTs || (ts == t.runningTs && reservation < t.runningOrder);
}

void
MetaRoceScheduler::SetTieBreak(TieBreak tieBreak)
{
    if (tieBreak == m_tieBreak)
    {
        return;
    }
    if (tieBreak == LINK)
    {
        ++g_linkSchedulers;
    }
    else
    {
        --g_linkSchedulers;
    }
    m_tieBreak = tieBreak;
}

MetaRoceScheduler::TieBreak
MetaRoceScheduler::GetTieBreak() const
{
    return m_tieBreak;
}

bool
MetaRoceScheduler::LinkTieBreakInUse()
{
    return g_linkSchedulers.load() > 0;
}

void
MetaRoceScheduler::TagNextEvent(uint32_t tag)
{
    g_thread.nextTag = tag;
}

void
MetaRoceScheduler::AnnounceNextEvent(const MetaRocePrefetchEvent* event)
{
    g_thread.announced = event;
}

uint32_t
MetaRoceScheduler::LinkTag(uint32_t channelId, uint32_t direction)
{
    return channelId * 2 + (direction & 1) + 1;
}

Scheduler::Event
MetaRoceScheduler::ToEvent(const Entry& entry)
{
    Event ev;
    ev.impl = reinterpret_cast<EventImpl*>(entry.impl & ~PREFETCH_BIT);
    ev.key.m_ts = entry.ts;
    ev.key.m_uid = entry.uid;
    ev.key.m_context = entry.context;
    return ev;
}

void
MetaRoceScheduler::Insert(const Event& ev)
{
    ThreadState& t = g_thread;
    const uint32_t tag = t.nextTag;
    t.nextTag = 0;
    Entry entry;
    entry.ts = ev.key.m_ts;
    if (m_tieBreak == LINK)
    {
        entry.order = (uint64_t(tag) << 32) | ev.key.m_uid;
    }
    else if (t.useOrder != 0)
    {
        entry.order = t.useOrder; // the place reserved earlier (ReserveOrder)
        t.useOrder = 0;
    }
    else
    {
        entry.order = uint64_t(ev.key.m_uid) << RESERVATION_BITS;
        t.lastOrder = entry.order;
        t.reservations = 0;
    }
    const EventImpl* announced = t.announced;
    t.announced = nullptr;
    entry.impl = reinterpret_cast<uintptr_t>(ev.impl) | (ev.impl == announced ? PREFETCH_BIT : 0);
    entry.uid = ev.key.m_uid;
    entry.context = ev.key.m_context;
    if (!m_bucketsReady && m_bucketWidth.IsStrictlyPositive())
    {
        SetUpBuckets();
    }
    if (m_bucketsReady && (entry.ts >> m_shift) < m_current + m_bucketCount)
    {
        PutNear(entry);
        return;
    }
    m_heap.emplace_back();
    SiftUp(m_heap.size() - 1, entry);
}

void
MetaRoceScheduler::SetUpBuckets()
{
    const uint64_t steps = std::max<int64_t>(1, m_bucketWidth.GetTimeStep());
    m_shift = 63 - uint32_t(__builtin_clzll(steps));
    uint32_t count = 64;
    while (count < m_bucketCount)
    {
        count *= 2;
    }
    m_bucketCount = count;
    m_buckets.assign(count, {});
    m_occupied.assign(count / 64, 0);
    m_current = 0;
    m_currentSorted = false;
    m_bucketsReady = true;
}

void
MetaRoceScheduler::TakeFromBucket(uint64_t slot, std::vector<Entry>::iterator it)
{
    std::vector<Entry>& bucket = m_buckets[slot];
    bucket.erase(it); // keeps the current bucket sorted; the last entry is the usual case
    --m_nearCount;
    if (bucket.empty() && bucket.capacity() > KEPT_BUCKET_CAPACITY)
    {
        // A burst left this bucket large: give the memory back (the ring would otherwise hold
        // every bucket's largest size ever, tens of MB on a large fabric).
        std::vector<Entry>().swap(bucket);
    }
    if (bucket.empty() && (slot != (m_current & (m_bucketCount - 1)) || m_late.empty()))
    {
        m_occupied[slot / 64] &= ~(uint64_t(1) << (slot % 64));
    }
}

void
MetaRoceScheduler::SortBucket(std::vector<Entry>& bucket) const
{
    const auto latestFirst = [](const Entry& a, const Entry& b) { return Before(b, a); };
    const std::size_t n = bucket.size();
    // Every entry of the bucket that becomes current has a time in [base, base + 2^m_shift):
    // a counting sort on that offset (one pass of up to 8 bits, two of up to 16) puts them in
    // time order in a few linear passes. Events of one time come out latest-inserted first,
    // which is nearly their order already (uids grow as events are scheduled); an insertion
    // pass then finishes the order by (time, order). The result is the one total order
    // std::sort gives; the comparison sort stays for small buckets, wide buckets and any entry
    // outside the range.
    if (n < RADIX_MIN_ENTRIES || m_shift > 2 * RADIX_BITS)
    {
        std::sort(bucket.begin(), bucket.end(), latestFirst);
        return;
    }
    const uint64_t base = m_current << m_shift;
    const uint64_t span = uint64_t(1) << m_shift;
    constexpr uint32_t DIGITS = 1U << RADIX_BITS;
    const bool twoPasses = m_shift > RADIX_BITS;
    uint32_t low[DIGITS] = {};
    uint32_t high[DIGITS] = {};
    for (const Entry& e : bucket)
    {
        const uint64_t offset = e.ts - base;
        if (e.ts < base || offset >= span)
        {
            std::sort(bucket.begin(), bucket.end(), latestFirst);
            return;
        }
        ++low[offset & (DIGITS - 1)];
        if (twoPasses)
        {
            ++high[offset >> RADIX_BITS];
        }
    }
    m_sortScratch.resize(n);
    // Digit d's entries go after those of every larger digit (latest time first).
    const auto starts = [](uint32_t* count) {
        uint32_t next = 0;
        for (uint32_t d = DIGITS; d-- > 0;)
        {
            const uint32_t c = count[d];
            count[d] = next;
            next += c;
        }
    };
    starts(low);
    // Pass 1, on the low digit, from the last entry inserted to the first.
    for (std::size_t i = n; i-- > 0;)
    {
        const Entry& e = bucket[i];
        m_sortScratch[low[(e.ts - base) & (DIGITS - 1)]++] = e;
    }
    if (twoPasses)
    {
        // Pass 2, on the high digit, keeping pass 1's order within a digit.
        starts(high);
        for (std::size_t i = 0; i < n; ++i)
        {
            const Entry& e = m_sortScratch[i];
            bucket[high[(e.ts - base) >> RADIX_BITS]++] = e;
        }
    }
    else
    {
        bucket.swap(m_sortScratch);
    }
    // Events of equal time in (time, order): the same order as std::sort's.
    for (std::size_t i = 1; i < n; ++i)
    {
        if (latestFirst(bucket[i], bucket[i - 1]))
        {
            const Entry moved = bucket[i];
            std::size_t j = i;
            do
            {
                bucket[j] = bucket[j - 1];
                --j;
            } while (j > 0 && latestFirst(moved, bucket[j - 1]));
            bucket[j] = moved;
        }
    }
}

void
MetaRoceScheduler::PutNear(const Entry& entry) const
{
    // At or before the current bucket (the simulator may insert an event earlier than the one
    // PeekNext reported), an event joins the current bucket.
    const uint64_t slot = std::max<uint64_t>(entry.ts >> m_shift, m_current) & (m_bucketCount - 1);
    std::vector<Entry>& bucket = m_buckets[slot];
    if (slot == (m_current & (m_bucketCount - 1)) && m_currentSorted && !bucket.empty() &&
        !Before(entry, bucket.back()))
    {
        // The current bucket is sorted latest first; an event that does not run before its
        // earliest joins the small heap of late arrivals instead of being inserted in the
        // middle (which moved the later half of the bucket on every such insert).
        m_late.push_back(entry);
        std::push_heap(m_late.begin(), m_late.end(), LateBefore);
    }
    else
    {
        bucket.push_back(entry);
    }
    m_occupied[slot / 64] |= uint64_t(1) << (slot % 64);
    ++m_nearCount;
}

MetaRoceScheduler::Entry
MetaRoceScheduler::PopFar() const
{
    const Entry first = m_heap.front();
    const Entry last = m_heap.back();
    m_heap.pop_back();
    if (!m_heap.empty())
    {
        SiftDown(0, last);
    }
    return first;
}

void
MetaRoceScheduler::PullFar() const
{
    const uint64_t end = m_current + m_bucketCount;
    while (!m_heap.empty() && (m_heap.front().ts >> m_shift) < end)
    {
        PutNear(PopFar());
    }
}

bool
MetaRoceScheduler::Settle() const
{
    const uint64_t mask = m_bucketCount - 1;
    for (;;)
    {
        if (m_nearCount > 0)
        {
            std::vector<Entry>& current = m_buckets[m_current & mask];
            if (!current.empty() || !m_late.empty())
            {
                if (!m_currentSorted)
                {
                    SortBucket(current);
                    m_currentSorted = true;
                }
                return true;
            }
            // The next occupied bucket: the buckets cover m_bucketCount from m_current, and
            // one of them holds an event.
            uint64_t step = 1;
            for (;;)
            {
                const uint64_t slot = (m_current + step) & mask;
                const uint64_t bits = m_occupied[slot / 64] >> (slot % 64);
                if (bits != 0)
                {
                    step += uint64_t(__builtin_ctzll(bits));
                    break;
                }
                step += 64 - slot % 64;
                NS_ABORT_MSG_IF(step > m_bucketCount, "MetaRoceScheduler: lost a bucket");
            }
            m_current += step;
            m_currentSorted = false;
            PullFar();
            continue;
        }
        if (m_heap.empty())
        {
            return false;
        }
        // The buckets are empty: move them to the earliest later event.
        m_current = m_heap.front().ts >> m_shift;
        m_currentSorted = false;
        PullFar();
    }
}

bool
MetaRoceScheduler::IsEmpty() const
{
    return m_nearCount == 0 && m_heap.empty();
}

Scheduler::Event
MetaRoceScheduler::PeekNext() const
{
    NS_ASSERT(!IsEmpty());
    if (m_bucketsReady && Settle())
    {
        const std::vector<Entry>& current = m_buckets[m_current & (m_bucketCount - 1)];
        return ToEvent(NextIsLate(current) ? m_late.front() : current.back());
    }
    return ToEvent(m_heap.front());
}

Scheduler::Event
MetaRoceScheduler::RemoveNext()
{
    NS_ASSERT(!IsEmpty());
    if (m_bucketsReady && Settle())
    {
        const uint64_t slot = m_current & (m_bucketCount - 1);
        std::vector<Entry>& current = m_buckets[slot];
        Entry taken;
        if (NextIsLate(current))
        {
            taken = m_late.front();
            std::pop_heap(m_late.begin(), m_late.end(), LateBefore);
            m_late.pop_back();
            --m_nearCount;
            if (m_late.empty() && current.empty())
            {
                m_occupied[slot / 64] &= ~(uint64_t(1) << (slot % 64));
            }
        }
        else
        {
            taken = current.back();
            TakeFromBucket(slot, current.end() - 1);
        }
        ThreadState& t = g_thread;
        t.runningTs = taken.ts;
        t.runningOrder = taken.order;
        // The events after this one were allocated a link delay or a serialization time of
        // simulated time ago (tens of thousands of events on a large fabric) and have left the
        // caches: start loading the next two while this one runs, and what the next one will
        // touch if it says (its EventImpl was prefetched by the previous call).
        const std::size_t left = current.size();
        if (left > 0 || !m_late.empty())
        {
            const uintptr_t following =
                NextIsLate(current) ? m_late.front().impl : current[left - 1].impl;
            if (following & PREFETCH_BIT)
            {
                static_cast<const MetaRocePrefetchEvent*>(
                    reinterpret_cast<const EventImpl*>(following & ~PREFETCH_BIT))
                    ->Prefetch();
            }
            else
            {
                __builtin_prefetch(reinterpret_cast<const void*>(following));
            }
            if (left > 1)
            {
                __builtin_prefetch(reinterpret_cast<const void*>(current[left - 2].impl));
            }
        }
        return ToEvent(taken);
    }
    const Entry taken = PopFar();
    ThreadState& t = g_thread;
    t.runningTs = taken.ts;
    t.runningOrder = taken.order;
    return ToEvent(taken);
}

void
MetaRoceScheduler::Remove(const Event& ev)
{
    // Only Simulator::Remove gets here (EventId::Cancel does not): a linear search is enough.
    const auto same = [&ev](const Entry& e) {
        return e.uid == ev.key.m_uid &&
               (e.impl & ~PREFETCH_BIT) == reinterpret_cast<uintptr_t>(ev.impl);
    };
    auto late = std::find_if(m_late.begin(), m_late.end(), same);
    if (late != m_late.end())
    {
        m_late.erase(late);
        std::make_heap(m_late.begin(), m_late.end(), LateBefore);
        --m_nearCount;
        const uint64_t slot = m_current & (m_bucketCount - 1);
        if (m_late.empty() && m_buckets[slot].empty())
        {
            m_occupied[slot / 64] &= ~(uint64_t(1) << (slot % 64));
        }
        return;
    }
    for (uint64_t slot = 0; slot < m_buckets.size(); ++slot)
    {
        std::vector<Entry>& bucket = m_buckets[slot];
        auto it = std::find_if(bucket.begin(), bucket.end(), same);
        if (it == bucket.end())
        {
            continue;
        }
        TakeFromBucket(slot, it);
        return;
    }
    for (std::size_t i = 0; i < m_heap.size(); ++i)
    {
        if (!same(m_heap[i]))
        {
            continue;
        }
        const Entry last = m_heap.back();
        m_heap.pop_back();
        if (i == m_heap.size())
        {
            return;
        }
        if (i > 0 && Before(last, m_heap[(i - 1) / ARITY]))
        {
            SiftUp(i, last);
        }
        else
        {
            SiftDown(i, last);
        }
        return;
    }
    NS_ABORT_MSG("MetaRoceScheduler::Remove: event " << ev.key.m_uid << " is not scheduled");
}

void
MetaRoceScheduler::SiftUp(std::size_t hole, const Entry& entry) const
{
    while (hole > 0)
    {
        const std::size_t parent = (hole - 1) / ARITY;
        if (!Before(entry, m_heap[parent]))
        {
            break;
        }
        m_heap[hole] = m_heap[parent];
        hole = parent;
    }
    m_heap[hole] = entry;
}

void
MetaRoceScheduler::SiftDown(std::size_t hole, const Entry& entry) const
{
    const std::size_t size = m_heap.size();
    for (;;)
    {
        const std::size_t first = hole * ARITY + 1;
        if (first >= size)
        {
            break;
        }
        const std::size_t end = std::min(first + ARITY, size);
        std::size_t best = first;
        for (std::size_t child = first + 1; child < end; ++child)
        {
            if (Before(m_heap[child], m_heap[best]))
            {
                best = child;
            }
        }
        if (!Before(m_heap[best], entry))
        {
            break;
        }
        m_heap[hole] = m_heap[best];
        hole = best;
    }
    m_heap[hole] = entry;
}

} // namespace ns3
