/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns-3 unit tests of ns3::MetaRoceScheduler: the same order as ns-3's MapScheduler under random
 * inserts and removals, the Link tie-break, a simulation run on it, the prefetch announcements
 * and reserved places. They run in an ns-3 tree (./test.py -s metaroce-scheduler) and in the
 * standalone build (ctest -R ns3-suite.metaroce-scheduler).
 */

#include "metaroce-seeded-test-case.h"

#include "ns3/enum.h"
#include "ns3/event-impl.h"
#include "ns3/make-event.h"
#include "ns3/map-scheduler.h"
#include "ns3/metaroce-scheduler.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace ns3;
using metaroce_test::Join;

namespace
{

void
Nothing()
{
}

/// Owns EventImpl objects for events handed to a scheduler directly (not through Simulator).
class EventPool
{
  public:
    ~EventPool()
    {
        for (EventImpl* impl : m_impls)
        {
            impl->Unref();
        }
    }

    /**
     * \param ts time stamp
     * \param uid unique id
     * \param context context
     * \return a scheduler event
     */
    Scheduler::Event Make(uint64_t ts, uint32_t uid, uint32_t context = 0)
    {
        Scheduler::Event ev;
        ev.impl = MakeEvent(&Nothing);
        m_impls.push_back(ev.impl);
        ev.key.m_ts = ts;
        ev.key.m_uid = uid;
        ev.key.m_context = context;
        return ev;
    }

  private:
    std::vector<EventImpl*> m_impls; //!< every event made
};

/**
 * \param tieBreak the tie-break
 * \param bucketSteps the bucket width in time steps (0: the heap alone)
 * \param buckets the number of buckets
 * \return a scheduler
 */
Ptr<MetaRoceScheduler>
MakeScheduler(MetaRoceScheduler::TieBreak tieBreak, int64_t bucketSteps = 0, uint32_t buckets = 64)
{
    Ptr<MetaRoceScheduler> s = CreateObject<MetaRoceScheduler>();
    s->SetAttribute("TieBreak", EnumValue(tieBreak));
    s->SetAttribute("BucketWidth", TimeValue(TimeStep(bucketSteps)));
    s->SetAttribute("Buckets", UintegerValue(buckets));
    return s;
}

/**
 * \param pairs (time, id) or (id, count) pairs
 * \return them as "(a,b) (c,d)"
 */
template <typename A, typename B>
std::string
JoinPairs(const std::vector<std::pair<A, B>>& pairs)
{
    std::ostringstream out;
    for (const auto& [a, b] : pairs)
    {
        out << '(' << a << ',' << b << ") ";
    }
    return out.str();
}

/// Records the time and id of each event it runs.
std::vector<std::pair<int64_t, int>> g_ran;

void
Record(int id)
{
    g_ran.emplace_back(Simulator::Now().GetNanoSeconds(), id);
}

/// Run the Simulator on a MetaRoceScheduler with 16 ns buckets, and forget earlier runs.
void
UseMetaRoceScheduler()
{
    ObjectFactory factory;
    factory.SetTypeId("ns3::MetaRoceScheduler");
    factory.Set("BucketWidth", TimeValue(NanoSeconds(16)));
    Simulator::SetScheduler(factory);
    g_ran.clear();
}

/// Prefetch() calls seen: (event id, number of events run before the call).
std::vector<std::pair<int, std::size_t>> g_prefetched;

/// An event that records its Prefetch() calls and its run.
class CountingEvent : public MetaRocePrefetchEvent
{
  public:
    /// \param id the event's id
    explicit CountingEvent(int id)
        : m_id(id)
    {
    }

    void Prefetch() const override
    {
        g_prefetched.emplace_back(m_id, g_ran.size());
    }

  protected:
    void Notify() override
    {
        Record(m_id);
    }

  private:
    int m_id; //!< the event's id
};

/// Whether the reservation had passed when ScheduleReserved ran (it must not have).
bool g_reservationHadPassed = true;

/// Schedules event 50 at 100 ns in the place reserved by \p reservation.
void
ScheduleReserved(uint64_t reservation)
{
    g_reservationHadPassed =
        MetaRoceScheduler::HasPassed(NanoSeconds(100).GetTimeStep(), reservation);
    MetaRoceScheduler::UseReservedOrder(reservation);
    Simulator::Schedule(NanoSeconds(100) - Simulator::Now(), &Record, 50);
}

} // namespace

/**
 * \ingroup metaroce-tests
 * The same order as MapScheduler under 200,000 random inserts, removals and Removes, for one
 * layout: the heap alone, or buckets of a few time steps (narrow windows, so that events also
 * wait in the heap and the window slides and jumps).
 */
class MetaRoceSchedulerOrderTestCase : public TestCase
{
  public:
    /**
     * \param bucketSteps bucket width in time steps (0: the heap alone)
     * \param buckets number of buckets
     */
    MetaRoceSchedulerOrderTestCase(int64_t bucketSteps, uint32_t buckets)
        : TestCase("same order as MapScheduler, buckets of " + std::to_string(bucketSteps) +
                   " steps x " + std::to_string(buckets)),
          m_bucketSteps(bucketSteps),
          m_buckets(buckets)
    {
    }

  private:
    void DoRun() override
    {
        EventPool pool;
        Ptr<MetaRoceScheduler> ours =
            MakeScheduler(MetaRoceScheduler::INSERTION, m_bucketSteps, m_buckets);
        Ptr<MapScheduler> map = CreateObject<MapScheduler>();
        std::mt19937_64 rng(11);
        uint64_t now = 0;
        uint32_t uid = 3;
        uint64_t removed = 0;
        std::vector<Scheduler::Event> live;
        for (int step = 0; step < 200000; ++step)
        {
            const int what = int(rng() % 10);
            if (what < 5 || map->IsEmpty())
            {
                // Few distinct offsets, so that many events share a time stamp; now and then
                // far ahead (beyond the buckets) or at the current time.
                const uint64_t far = rng() % 50 == 0 ? 20000 + rng() % 100000 : 0;
                const uint64_t ts =
                    now + far + (rng() % 4) * 500 + (rng() % 3 == 0 ? rng() % 7 : 0);
                const Scheduler::Event ev = pool.Make(ts, uid++, uint32_t(rng() % 16));
                ours->Insert(ev);
                map->Insert(ev);
                live.push_back(ev);
            }
            else if (what < 9)
            {
                NS_TEST_ASSERT_MSG_EQ(ours->IsEmpty(), false, "step " << step);
                NS_TEST_EXPECT_MSG_EQ(ours->PeekNext().key.m_uid,
                                      map->PeekNext().key.m_uid,
                                      "PeekNext, step " << step);
                const Scheduler::Event a = ours->RemoveNext();
                const Scheduler::Event b = map->RemoveNext();
                NS_TEST_ASSERT_MSG_EQ(a.key.m_uid, b.key.m_uid, "RemoveNext, step " << step);
                NS_TEST_EXPECT_MSG_EQ(a.key.m_ts, b.key.m_ts, "step " << step);
                NS_TEST_EXPECT_MSG_EQ(a.key.m_context, b.key.m_context, "step " << step);
                NS_TEST_EXPECT_MSG_EQ(a.impl, b.impl, "step " << step);
                now = a.key.m_ts;
                ++removed;
            }
            else if (!live.empty())
            {
                // Simulator::Remove of a random pending event (it may already have run: skip).
                const std::size_t i = rng() % live.size();
                const Scheduler::Event ev = live[i];
                live[i] = live.back();
                live.pop_back();
                if (ev.key.m_ts >= now && !map->IsEmpty() && ev.key.m_ts > map->PeekNext().key.m_ts)
                {
                    ours->Remove(ev);
                    map->Remove(ev);
                }
            }
        }
        NS_TEST_EXPECT_MSG_GT(removed, 50000U, "events removed in order");
        while (!map->IsEmpty())
        {
            NS_TEST_ASSERT_MSG_EQ(ours->IsEmpty(), false, "the drain");
            NS_TEST_EXPECT_MSG_EQ(ours->RemoveNext().key.m_uid,
                                  map->RemoveNext().key.m_uid,
                                  "the drain");
        }
        NS_TEST_EXPECT_MSG_EQ(ours->IsEmpty(), true, "both empty");
    }

    int64_t m_bucketSteps; //!< bucket width in time steps
    uint32_t m_buckets;    //!< number of buckets
};

/**
 * \ingroup metaroce-tests
 * A bucket that becomes current is sorted by counting on its time offsets (one or two passes)
 * and then by order among equal times; narrow buckets, wide ones (comparisons only) and
 * buckets whose events were inserted out of uid order (as reserved places and events pulled
 * from the far heap are) all come out in MapScheduler's order.
 */
class MetaRoceSchedulerBucketSortTestCase : public TestCase
{
  public:
    /**
     * \param bucketSteps bucket width in time steps
     * \param distinctTimes how many different times the events of a bucket take
     */
    MetaRoceSchedulerBucketSortTestCase(int64_t bucketSteps, uint32_t distinctTimes)
        : TestCase("bucket sort against MapScheduler, buckets of " + std::to_string(bucketSteps) +
                   " steps, " + std::to_string(distinctTimes) + " times each"),
          m_bucketSteps(bucketSteps),
          m_distinctTimes(distinctTimes)
    {
    }

  private:
    void DoRun() override
    {
        EventPool pool;
        Ptr<MetaRoceScheduler> ours =
            MakeScheduler(MetaRoceScheduler::INSERTION, m_bucketSteps, 64);
        Ptr<MapScheduler> map = CreateObject<MapScheduler>();
        std::mt19937_64 rng(29);
        // Unique uids in a shuffled order: equal times are inserted out of uid order.
        std::vector<uint32_t> uids(60000);
        for (std::size_t i = 0; i < uids.size(); ++i)
        {
            uids[i] = uint32_t(4 + i);
        }
        std::shuffle(uids.begin(), uids.end(), rng);
        std::size_t next = 0;
        uint64_t now = 0;
        const uint64_t step = std::max<uint64_t>(1, uint64_t(m_bucketSteps) / m_distinctTimes);
        uint64_t removed = 0;
        while (next < uids.size() || !map->IsEmpty())
        {
            // Bursts of a few hundred events into the next buckets, then part of a drain.
            const uint32_t burst = next < uids.size() ? uint32_t(100 + rng() % 400) : 0;
            for (uint32_t i = 0; i < burst && next < uids.size(); ++i)
            {
                const uint64_t bucket = rng() % 4;
                const uint64_t ts =
                    now + bucket * uint64_t(m_bucketSteps) + (rng() % m_distinctTimes) * step;
                const Scheduler::Event ev = pool.Make(ts, uids[next++], uint32_t(rng() % 8));
                ours->Insert(ev);
                map->Insert(ev);
            }
            const uint32_t drain = next < uids.size() ? uint32_t(rng() % 600) : 1000000;
            for (uint32_t i = 0; i < drain && !map->IsEmpty(); ++i)
            {
                NS_TEST_ASSERT_MSG_EQ(ours->IsEmpty(), false, "event " << removed);
                const Scheduler::Event a = ours->RemoveNext();
                const Scheduler::Event b = map->RemoveNext();
                NS_TEST_ASSERT_MSG_EQ(a.key.m_uid, b.key.m_uid, "event " << removed);
                NS_TEST_ASSERT_MSG_EQ(a.key.m_ts, b.key.m_ts, "event " << removed);
                now = a.key.m_ts;
                ++removed;
            }
        }
        NS_TEST_EXPECT_MSG_EQ(removed, uint64_t(uids.size()), "every event");
        NS_TEST_EXPECT_MSG_EQ(ours->IsEmpty(), true, "both empty");
    }

    int64_t m_bucketSteps;    //!< bucket width in time steps
    uint32_t m_distinctTimes; //!< distinct times per bucket
};

/**
 * \ingroup metaroce-tests
 * The Link tie-break: untagged events first (by uid), then arrivals by link; Insertion ignores
 * tags; a tag is used once; LinkTieBreakInUse follows the schedulers that exist.
 */
class MetaRoceSchedulerTieBreakTestCase : public TestCase
{
  public:
    MetaRoceSchedulerTieBreakTestCase()
        : TestCase("Link and Insertion tie-breaks")
    {
    }

  private:
    void DoRun() override
    {
        EventPool pool;
        Ptr<MetaRoceScheduler> s = MakeScheduler(MetaRoceScheduler::LINK);
        MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(7, 1));
        s->Insert(pool.Make(100, 3));
        s->Insert(pool.Make(100, 4));
        MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(2, 0));
        s->Insert(pool.Make(100, 5));
        s->Insert(pool.Make(50, 6));
        MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(2, 1));
        s->Insert(pool.Make(100, 7));
        s->Insert(pool.Make(100, 8));
        std::vector<uint32_t> order;
        while (!s->IsEmpty())
        {
            order.push_back(s->RemoveNext().key.m_uid);
        }
        // 6 is earlier; at 100: untagged 4 and 8 by uid, then links 2/0, 2/1, 7/1.
        NS_TEST_EXPECT_MSG_EQ(Join(order), "6 4 8 5 7 3 ", "Link order");
        s = nullptr; // (LinkTieBreakInUse counts the Link schedulers that exist)

        Ptr<MetaRoceScheduler> insertion = MakeScheduler(MetaRoceScheduler::INSERTION);
        MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(9, 0));
        insertion->Insert(pool.Make(10, 3));
        insertion->Insert(pool.Make(10, 4));
        NS_TEST_EXPECT_MSG_EQ(insertion->RemoveNext().key.m_uid, 3U, "Insertion ignores tags");
        NS_TEST_EXPECT_MSG_EQ(insertion->RemoveNext().key.m_uid, 4U, "Insertion ignores tags");

        Ptr<MetaRoceScheduler> link = MakeScheduler(MetaRoceScheduler::LINK);
        MetaRoceScheduler::TagNextEvent(MetaRoceScheduler::LinkTag(9, 0));
        link->Insert(pool.Make(10, 5)); // tagged
        link->Insert(pool.Make(10, 6)); // the tag was consumed: untagged, so it runs first
        NS_TEST_EXPECT_MSG_EQ(link->RemoveNext().key.m_uid, 6U, "a tag is used once");
        NS_TEST_EXPECT_MSG_EQ(link->RemoveNext().key.m_uid, 5U, "a tag is used once");
        // A remote channel re-schedules arrivals only while a Link scheduler exists.
        NS_TEST_EXPECT_MSG_EQ(MetaRoceScheduler::LinkTieBreakInUse(), true, "Link in use");
        link->SetAttribute("TieBreak", EnumValue(MetaRoceScheduler::INSERTION));
        NS_TEST_EXPECT_MSG_EQ(MetaRoceScheduler::LinkTieBreakInUse(), false, "set to Insertion");
        link->SetAttribute("TieBreak", EnumValue(MetaRoceScheduler::LINK));
        NS_TEST_EXPECT_MSG_EQ(MetaRoceScheduler::LinkTieBreakInUse(), true, "set to Link again");
        link = nullptr;
        NS_TEST_EXPECT_MSG_EQ(MetaRoceScheduler::LinkTieBreakInUse(), false, "none left");
        NS_TEST_EXPECT_MSG_NE(MetaRoceScheduler::LinkTag(1, 0),
                              MetaRoceScheduler::LinkTag(0, 1),
                              "link tags differ");
        NS_TEST_EXPECT_MSG_NE(MetaRoceScheduler::LinkTag(0, 0), 0U, "0 means untagged");
    }
};

/**
 * \ingroup metaroce-tests
 * The Simulator on a MetaRoceScheduler: time order, insertion order among equal times,
 * Cancel and Remove.
 */
class MetaRoceSchedulerSimulatorTestCase : public TestCase
{
  public:
    MetaRoceSchedulerSimulatorTestCase()
        : TestCase("drives the Simulator, Cancel and Remove included")
    {
    }

  private:
    void DoRun() override
    {
        UseMetaRoceScheduler();
        std::vector<EventId> ids;
        for (int i = 0; i < 1000; ++i)
        {
            ids.push_back(Simulator::Schedule(NanoSeconds((i * 7919) % 300), &Record, i));
        }
        Simulator::Cancel(ids[10]);
        Simulator::Remove(ids[20]);
        Simulator::Run();
        Simulator::Destroy();
        NS_TEST_ASSERT_MSG_EQ(g_ran.size(), 998U, "every event but two ran");
        for (std::size_t i = 1; i < g_ran.size(); ++i)
        {
            // Time order, and insertion order among equal times.
            const bool inOrder =
                g_ran[i - 1].first < g_ran[i].first ||
                (g_ran[i - 1].first == g_ran[i].first && g_ran[i - 1].second < g_ran[i].second);
            NS_TEST_ASSERT_MSG_EQ(inOrder, true, "event " << i);
        }
        for (const auto& [t, id] : g_ran)
        {
            NS_TEST_EXPECT_MSG_NE(id, 10, "cancelled event ran at " << t);
            NS_TEST_EXPECT_MSG_NE(id, 20, "removed event ran at " << t);
        }
    }
};

/**
 * \ingroup metaroce-tests
 * Only announced events are prefetched, once, just before they run (when the event before them
 * leaves the queue); an announcement without its event marks nothing.
 */
class MetaRoceSchedulerPrefetchTestCase : public TestCase
{
  public:
    MetaRoceSchedulerPrefetchTestCase()
        : TestCase("only announced events are prefetched, just before they run")
    {
    }

  private:
    void DoRun() override
    {
        UseMetaRoceScheduler();
        g_prefetched.clear();
        // Ten events in one bucket; the even ones are announced.
        for (int id = 0; id < 10; ++id)
        {
            Ptr<CountingEvent> event = Create<CountingEvent>(id);
            if (id % 2 == 0)
            {
                MetaRoceScheduler::AnnounceNextEvent(PeekPointer(event));
            }
            Simulator::Schedule(NanoSeconds(1 + id), event);
        }
        // An announcement that is not followed by its event must not mark the next one (a plain
        // event, which has no Prefetch).
        Ptr<CountingEvent> never = Create<CountingEvent>(99);
        MetaRoceScheduler::AnnounceNextEvent(PeekPointer(never));
        Simulator::Schedule(NanoSeconds(12), &Record, 100);
        Simulator::Run();
        Simulator::Destroy();
        NS_TEST_ASSERT_MSG_EQ(g_ran.size(), 11U, "events run");
        // Event 0 runs first, with nothing before it to prefetch it; each later even event is
        // prefetched once, when the event before it leaves the queue.
        NS_TEST_EXPECT_MSG_EQ(JoinPairs(g_prefetched), "(2,1) (4,3) (6,5) (8,7) ", "prefetches");
    }
};

/**
 * \ingroup metaroce-tests
 * Issue 20: an event scheduled later in a place reserved earlier runs where it would have run
 * had it been scheduled at the reservation (after the events of its time scheduled before the
 * reservation, before those scheduled after it); a passed reservation says so; another
 * scheduler cannot honour a reservation.
 */
class MetaRoceSchedulerReservationTestCase : public TestCase
{
  public:
    MetaRoceSchedulerReservationTestCase()
        : TestCase("a reserved place orders an event as if scheduled then")
    {
    }

  private:
    void DoRun() override
    {
        UseMetaRoceScheduler();
        g_reservationHadPassed = true;
        Simulator::Schedule(NanoSeconds(100), &Record, 1);
        const uint64_t reservation = MetaRoceScheduler::ReserveOrder();
        const uint64_t unused = MetaRoceScheduler::ReserveOrder();
        NS_TEST_ASSERT_MSG_NE(reservation, 0U, "a reservation");
        NS_TEST_ASSERT_MSG_LT(reservation, unused, "reservations in order");
        Simulator::Schedule(NanoSeconds(100), &Record, 2);
        Simulator::Schedule(NanoSeconds(40), &ScheduleReserved, reservation);
        Simulator::Schedule(NanoSeconds(100), &Record, 3);
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(g_reservationHadPassed, false, "not passed at 40 ns");
        NS_TEST_EXPECT_MSG_EQ(MetaRoceScheduler::HasPassed(NanoSeconds(100).GetTimeStep(), unused),
                              true,
                              "passed after the run");
        Simulator::Destroy();
        NS_TEST_EXPECT_MSG_EQ(JoinPairs(g_ran), "(100,1) (100,50) (100,2) (100,3) ", "order");
        ObjectFactory factory;
        factory.SetTypeId("ns3::MapScheduler");
        Simulator::SetScheduler(factory);
        NS_TEST_EXPECT_MSG_EQ(MetaRoceScheduler::ReserveOrder(), 0U, "MapScheduler: none");
        Simulator::Destroy();
    }
};

/**
 * \ingroup metaroce-tests
 * Unit tests of ns3::MetaRoceScheduler.
 */
class MetaRoceSchedulerTestSuite : public TestSuite
{
  public:
    MetaRoceSchedulerTestSuite()
        : TestSuite("metaroce-scheduler", TestSuite::Type::UNIT)
    {
        // The heap alone, and buckets of 1, 4 and 64 time steps.
        AddTestCase(new MetaRoceSchedulerOrderTestCase(0, 64));
        AddTestCase(new MetaRoceSchedulerOrderTestCase(1, 64));
        AddTestCase(new MetaRoceSchedulerOrderTestCase(4, 64));
        AddTestCase(new MetaRoceSchedulerOrderTestCase(64, 128));
        // One counting pass (16 steps), two (4,096), comparisons only (2^20); few and many
        // times per bucket.
        AddTestCase(new MetaRoceSchedulerBucketSortTestCase(16, 4));
        AddTestCase(new MetaRoceSchedulerBucketSortTestCase(16, 16));
        AddTestCase(new MetaRoceSchedulerBucketSortTestCase(4096, 8));
        AddTestCase(new MetaRoceSchedulerBucketSortTestCase(4096, 4096));
        AddTestCase(new MetaRoceSchedulerBucketSortTestCase(1 << 20, 64));
        AddTestCase(new MetaRoceSchedulerTieBreakTestCase);
        AddTestCase(new MetaRoceSchedulerSimulatorTestCase);
        AddTestCase(new MetaRoceSchedulerPrefetchTestCase);
        AddTestCase(new MetaRoceSchedulerReservationTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceSchedulerTestSuite g_metaRoceSchedulerTestSuite;
